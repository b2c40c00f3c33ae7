//go:build sluice_std && unix

package socket

import (
	"os"
	"syscall"
)

// setBuffer sets the socket buffer option opt (SO_RCVBUF or SO_SNDBUF)
// on socket s to n bytes.
func setBuffer(s uintptr, opt, n int) error {
	return os.NewSyscallError("setsockopt", syscall.SetsockoptInt(int(s), syscall.SOL_SOCKET, opt, n))
}
