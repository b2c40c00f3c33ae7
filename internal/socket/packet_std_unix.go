//go:build sluice_std && !windows

package socket

import (
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// sendNow sends p from pc to to (to its peer when to is not valid)
// without waiting: a full send buffer fails with EAGAIN, as it does on the
// other backends, where the standard library's writes would wait for room
// and hold the loop. A zoned address goes through the standard library,
// which knows its interface.
func sendNow(pc *net.UDPConn, p []byte, to netip.AddrPort) (int, error) {
	if to.Addr().Zone() != "" {
		return pc.WriteToUDPAddrPort(p, to)
	}
	var sa unix.Sockaddr
	if to.IsValid() {
		ip := to.Addr()
		if la, ok := pc.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
			sa = &unix.SockaddrInet6{Port: int(to.Port()), Addr: ip.As16()}
		} else if ip.Unmap().Is4() {
			sa = &unix.SockaddrInet4{Port: int(to.Port()), Addr: ip.Unmap().As4()}
		} else {
			return 0, unix.EAFNOSUPPORT
		}
	}
	rc, err := pc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		n    int
		serr error
	)
	err = rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), p, nil, sa, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return true // tried once: no waiting for room
	})
	if err != nil {
		return 0, err
	}
	return n, serr
}
