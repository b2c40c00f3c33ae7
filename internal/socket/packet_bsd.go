//go:build (darwin || dragonfly || freebsd) && !sluice_std

package socket

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// RecvFrom receives one datagram into p. n is how much of it p holds, from
// its sender, and truncated whether it was larger than p (recvmsg's
// MSG_TRUNC flag), whose rest is lost. It returns unix.EAGAIN when none
// waits, and on a connected socket the error an ICMP message reported.
func RecvFrom(fd int, p []byte) (n int, from netip.AddrPort, truncated bool, err error) {
	for {
		n, _, flags, sa, err := unix.Recvmsg(fd, p, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, netip.AddrPort{}, false, err
		}
		return n, AddrPort(sa), flags&unix.MSG_TRUNC != 0, nil
	}
}

// SendTo sends p as one datagram to to, or, on a connected socket with to
// not valid, to its peer. v6 says the socket is IPv6, which reaches an
// IPv4 address mapped.
func SendTo(fd int, p []byte, to netip.AddrPort, v6 bool) (int, error) {
	if !to.IsValid() {
		return Write(fd, p)
	}
	var sa unix.Sockaddr
	if v6 {
		sa = &unix.SockaddrInet6{Port: int(to.Port()), Addr: to.Addr().As16()}
	} else {
		sa = &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().Unmap().As4()}
	}
	for {
		err := unix.Sendto(fd, p, 0, sa)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
}
