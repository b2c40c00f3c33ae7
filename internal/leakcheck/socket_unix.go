//go:build unix

package leakcheck

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// socketOf describes socket fd: its local and remote addresses, as the
// socket itself says them, and its state as /proc/self/net lists it under
// its inode (hexadecimal, as the kernel writes it: 01 established, 08
// close-wait, 0A listening), where a closed socket is not listed.
func socketOf(fd, inode string) string {
	n, _ := strconv.Atoi(fd)
	local, remote := "?", "?"
	if sa, err := syscall.Getsockname(n); err == nil {
		local = sockaddrString(sa)
	}
	if sa, err := syscall.Getpeername(n); err == nil {
		remote = sockaddrString(sa)
	} else {
		remote = err.Error()
	}
	state := "closed"
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6", "unix"} {
		b, _ := os.ReadFile("/proc/self/net/" + table)
		for line := range strings.Lines(string(b)) {
			switch f := strings.Fields(line); {
			case table == "unix" && len(f) >= 7 && f[6] == inode:
				state = "unix state " + f[5]
			case table != "unix" && len(f) >= 10 && f[9] == inode:
				state = table + " state " + f[3]
			}
		}
	}
	return fmt.Sprintf("(%s -> %s, %s)", local, remote, state)
}

func sockaddrString(sa syscall.Sockaddr) string {
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port))
	case *syscall.SockaddrInet6:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port))
	case *syscall.SockaddrUnix:
		return "unix:" + sa.Name
	}
	return fmt.Sprintf("%T", sa)
}
