//go:build (darwin || dragonfly || freebsd) && !sluice_std

package socket

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// recv and send read and write the socket; Linux has them reach it with
// fewer steps.
func recv(fd int, p []byte) (int, error) { return unix.Read(fd, p) }

func send(fd int, p []byte) (int, error) { return unix.Write(fd, p) }

// Accept takes one pending connection from the listener fd, already
// non-blocking and close-on-exec, with its peer's address (the zero
// AddrPort for a unix socket).
func Accept(fd int) (int, netip.AddrPort, error) {
	// Without accept4 the descriptor exists for a moment without
	// close-on-exec; the fork lock keeps an exec from inheriting it.
	syscall.ForkLock.RLock()
	nfd, sa, err := unix.Accept(fd)
	if err == nil {
		unix.CloseOnExec(nfd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return -1, netip.AddrPort{}, os.NewSyscallError("fcntl", err)
	}
	return nfd, AddrPort(sa), nil
}

// newSocket opens a non-blocking, close-on-exec socket of family and typ
// (unix.SOCK_STREAM or unix.SOCK_DGRAM).
func newSocket(family, typ int) (int, error) {
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(family, typ, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("fcntl", err)
	}
	return fd, nil
}

// Settled reports whether closing fd now is sure to lose nothing. The BSDs
// are not asked: it reports false, so a graceful close always lingers
// until the peer's end of stream, or its bound.
func Settled(fd int) bool { return false }

// Delivery reports what TCP says of fd's output. The BSDs are not asked:
// ok is false, so a write deadline passes when it comes.
func Delivery(fd int) (acked, offered uint64, waiting, ok bool) { return 0, 0, false, false }

// BindToDevice reports that the BSDs have no SO_BINDTODEVICE.
func BindToDevice(fd int, device string) error {
	return fmt.Errorf("bind to device %q: %w", device, errors.ErrUnsupported)
}
