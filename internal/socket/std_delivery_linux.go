//go:build sluice_std

package socket

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Delivery reports what TCP says of the output of fd's connection
// (tcpDelivery), asked of the kernel's socket under it. ok is false for a
// connection that is not TCP's.
func Delivery(fd int) (acked, offered uint64, waiting, ok bool) {
	h := lookup(fd)
	if h == nil {
		return 0, 0, false, false
	}
	h.mu.Lock()
	sc, _ := h.nc.(syscall.Conn)
	h.mu.Unlock()
	if sc == nil {
		return 0, 0, false, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, false, false
	}
	rc.Control(func(s uintptr) {
		ti, err := unix.GetsockoptTCPInfo(int(s), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err == nil {
			acked, offered, waiting = tcpDelivery(ti)
			ok = true
		}
	})
	return acked, offered, waiting, ok
}
