//go:build !sluice_std

package socket

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// SendTo sends p as one datagram to to, or, on a connected socket with to
// not valid, to its peer. v6 says the socket is IPv6, which reaches an
// IPv4 address mapped. It allocates nothing.
func SendTo(fd int, p []byte, to netip.AddrPort, v6 bool) (int, error) {
	if !to.IsValid() {
		return Write(fd, p)
	}
	syscount.Inc()
	var (
		ptr  unsafe.Pointer
		size uintptr
		sa4  unix.RawSockaddrInet4
		sa6  unix.RawSockaddrInet6
	)
	ip := to.Addr()
	if !v6 {
		if !ip.Unmap().Is4() {
			return 0, unix.EAFNOSUPPORT
		}
		sa4.Family = unix.AF_INET
		putPort(&sa4.Port, int(to.Port()))
		sa4.Addr = ip.Unmap().As4()
		ptr, size = unsafe.Pointer(&sa4), unsafe.Sizeof(sa4)
	} else {
		sa6.Family = unix.AF_INET6
		putPort(&sa6.Port, int(to.Port()))
		sa6.Addr = ip.As16()
		sa6.Scope_id = ZoneIndex(ip.Zone())
		ptr, size = unsafe.Pointer(&sa6), unsafe.Sizeof(sa6)
	}
	for {
		n, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(bytesPtr(p)), uintptr(len(p)),
			unix.MSG_NOSIGNAL, uintptr(ptr), size)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, e
	}
}
