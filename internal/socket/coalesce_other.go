//go:build !linux

package socket

// ReceiveCoalesced does nothing where the kernel coalesces no receive.
func ReceiveCoalesced(fd int, on bool) error { return nil }
