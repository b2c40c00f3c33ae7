//go:build windows || sluice_std

package socket

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// ErrNotListener is returned for a descriptor handed over as a listener
// that is not a listening stream socket of a family the engine serves.
var ErrNotListener = errors.New("sluice: not a listening TCP or unix stream socket")

// ListenFile serves the listening socket f through a listener of the
// standard library's, which holds a copy of its descriptor; f stays the
// caller's. Windows cannot make a listener of a file: the error wraps
// errors.ErrUnsupported there.
func ListenFile(f *os.File) (int, net.Addr, error) {
	ln, err := fileListener(f)
	if err != nil {
		return -1, nil, fmt.Errorf("%w: %w", ErrNotListener, err)
	}
	return ListenOn(ln)
}

// ListenOn takes ln: it becomes the descriptor's listener, so the caller
// must not use or close it. A unix listener closed by the engine leaves
// its socket's file, which it did not make.
func ListenOn(ln net.Listener) (int, net.Addr, error) {
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	return listenOn(ln), ln.Addr(), nil
}

// DupListener returns a copy of the listener fd's socket as a file named
// name, for another process to serve; from then on, closing fd leaves a
// unix socket's file in place. Windows cannot hand a listener over so:
// the error wraps errors.ErrUnsupported there.
func DupListener(fd int, name string) (*os.File, error) {
	h := lookup(fd)
	if h == nil || h.ln == nil {
		return nil, fmt.Errorf("descriptor %d: %w", fd, ErrNotListener)
	}
	f, err := dupListener(h.ln, name)
	if err != nil {
		return nil, err
	}
	if ul, ok := h.ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	return f, nil
}
