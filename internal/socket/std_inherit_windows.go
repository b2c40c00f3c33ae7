//go:build windows

package socket

import (
	"errors"
	"net"
	"os"
)

func fileListener(*os.File) (net.Listener, error) {
	return nil, errors.ErrUnsupported
}

func dupListener(net.Listener, string) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

// CloseOnExec does nothing: Windows hands no descriptors down so.
func CloseOnExec(int) {}
