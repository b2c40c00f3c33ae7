//go:build !sluice_std

package socket

import (
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

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
