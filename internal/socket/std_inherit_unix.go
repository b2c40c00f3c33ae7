//go:build sluice_std && unix

package socket

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// fileListener makes a listener of f's socket, which must be listening:
// net takes a connected one too.
func fileListener(f *os.File) (net.Listener, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	on := 0
	var optErr error
	if err := rc.Control(func(s uintptr) {
		on, optErr = syscall.GetsockoptInt(int(s), syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN)
	}); err != nil {
		return nil, err
	}
	if optErr != nil {
		return nil, os.NewSyscallError("getsockopt SO_ACCEPTCONN", optErr)
	}
	if on == 0 {
		return nil, errors.New("not listening")
	}
	return net.FileListener(f)
}

// dupListener copies ln's descriptor through its raw connection, which,
// unlike net's File, leaves the socket's shared non-blocking mode alone
// when the copy's Fd is taken, as starting a process with it does.
func dupListener(ln net.Listener, name string) (*os.File, error) {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T: %w", ln, ErrNotListener)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var dupErr error
	err = rc.Control(func(s uintptr) {
		// Held so that no process started meanwhile inherits the copy.
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		if nfd, dupErr = syscall.Dup(int(s)); dupErr == nil {
			syscall.CloseOnExec(nfd)
		}
	})
	if err == nil {
		err = dupErr
	}
	if err != nil {
		return nil, os.NewSyscallError("dup", err)
	}
	return os.NewFile(uintptr(nfd), name), nil
}

// CloseOnExec keeps fd, which the process inherited, from the processes
// it starts.
func CloseOnExec(fd int) { syscall.CloseOnExec(fd) }
