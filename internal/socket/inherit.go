//go:build !windows && !sluice_std

package socket

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotListener is returned for a descriptor handed over as a listener
// that is not a listening stream socket of a family the engine serves.
var ErrNotListener = errors.New("sluice: not a listening TCP or unix stream socket")

// ListenFile returns a non-blocking, close-on-exec copy of the listening
// socket f, and the address it is bound to. f stays the caller's. Its
// non-blocking mode, which every copy of the descriptor shares, is set:
// the loops never block in accept, and the standard library's files and
// listeners work either way.
func ListenFile(f *os.File) (int, net.Addr, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, nil, err
	}
	return listenRaw(rc)
}

// ListenOn takes ln's socket: it returns a non-blocking, close-on-exec
// copy of its descriptor and its address, and closes ln, leaving a unix
// socket's file in place, since the copy still serves it. A listener with
// no descriptor is refused with an error wrapping errors.ErrUnsupported.
func ListenOn(ln net.Listener) (int, net.Addr, error) {
	defer closeKeepingFile(ln)
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return -1, nil, fmt.Errorf("%T has no descriptor: %w", ln, errors.ErrUnsupported)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, nil, err
	}
	return listenRaw(rc)
}

// closeKeepingFile closes ln; a unix listener leaves its socket's file.
func closeKeepingFile(ln net.Listener) {
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	ln.Close()
}

func listenRaw(rc syscall.RawConn) (int, net.Addr, error) {
	fd := -1
	var dupErr error
	if err := rc.Control(func(s uintptr) { fd, dupErr = dup(int(s)) }); err != nil {
		return -1, nil, err
	}
	if dupErr != nil {
		return -1, nil, dupErr
	}
	addr, err := checkListener(fd)
	if err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, addr, nil
}

// checkListener returns the address of fd, a listening stream socket of
// the TCP or unix family, or an error for anything else.
func checkListener(fd int) (net.Addr, error) {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotListener, os.NewSyscallError("getsockopt SO_TYPE", err))
	}
	if typ != unix.SOCK_STREAM {
		return nil, fmt.Errorf("%w: socket type %d", ErrNotListener, typ)
	}
	on, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotListener, os.NewSyscallError("getsockopt SO_ACCEPTCONN", err))
	}
	if on == 0 {
		return nil, fmt.Errorf("%w: not listening", ErrNotListener)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, os.NewSyscallError("getsockname", err)
	}
	switch sa.(type) {
	case *unix.SockaddrInet4, *unix.SockaddrInet6, *unix.SockaddrUnix:
		return Addr(sa), nil
	}
	return nil, fmt.Errorf("%w: address %T", ErrNotListener, sa)
}

// DupListener returns a close-on-exec copy of the listener fd as a file
// named name, for another process to serve. It shares the listener's
// non-blocking mode, which Fd on the file leaves alone.
func DupListener(fd int, name string) (*os.File, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	return os.NewFile(uintptr(nfd), name), nil
}

// CloseOnExec keeps fd, which the process inherited, from the processes
// it starts.
func CloseOnExec(fd int) { unix.CloseOnExec(fd) }

// StopAccepting does nothing: a kernel socket holds the connections it
// has yet to hand over, and the next Accept takes them.
func StopAccepting(fd int) {}
