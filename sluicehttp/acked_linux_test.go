package sluicehttp

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// waitAcked waits until the peer's kernel has acknowledged every byte c
// sent, which its reader is then woken for.
func waitAcked(t *testing.T, c net.Conn) {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		out := -1
		raw.Control(func(fd uintptr) { out, _ = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) })
		return out == 0
	}, func() string { return "the server's kernel never took what the client sent" })
}
