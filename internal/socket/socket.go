//go:build !windows && !sluice_std

package socket

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// Read reads from fd into p once. It returns 0, nil at end of stream and
// unix.EAGAIN when nothing is there.
func Read(fd int, p []byte) (int, error) {
	syscount.Inc()
	for {
		n, err := recv(fd, p)
		if err == unix.EINTR {
			continue
		}
		if n < 0 {
			n = 0
		}
		return n, err
	}
}

// Write writes p to fd once and returns how much the socket took.
func Write(fd int, p []byte) (int, error) {
	syscount.Inc()
	for {
		n, err := send(fd, p)
		if err == unix.EINTR {
			continue
		}
		if n < 0 {
			n = 0
		}
		return n, err
	}
}

// ReusePort reports whether listeners may share a port (SO_REUSEPORT),
// one per loop.
const ReusePort = true

// Listen opens a non-blocking listening socket. network is tcp, tcp4, tcp6
// or unix. It returns the descriptor and the address it is bound to, which
// tells the port when addr asked for port 0.
func Listen(network, addr string, o Options) (int, net.Addr, error) {
	family, sa, err := sockaddr(network, addr)
	if err != nil {
		return -1, nil, err
	}
	fd, err := newSocket(family, unix.SOCK_STREAM)
	if err != nil {
		return -1, nil, err
	}
	if err := listen(fd, family, network == "tcp6", sa, o); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, nil, os.NewSyscallError("getsockname", err)
	}
	return fd, Addr(bound), nil
}

func listen(fd, family int, v6only bool, sa unix.Sockaddr, o Options) error {
	if family != unix.AF_UNIX {
		if err := shareAddr(fd, family, v6only, o); err != nil {
			return err
		}
	}
	if err := setBuffers(fd, o); err != nil {
		return err
	}
	if err := unix.Bind(fd, sa); err != nil {
		return os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(fd, listenBacklog()); err != nil {
		return os.NewSyscallError("listen", err)
	}
	return nil
}

// shareAddr sets the options of a socket about to bind an IP address:
// SO_REUSEADDR, SO_REUSEPORT when o asks for it, and for IPv6 whether it
// takes only IPv6 (under "tcp" or "udp" an IPv6 socket takes IPv4 too, as
// the standard library's do).
func shareAddr(fd, family int, v6only bool, o Options) error {
	if err := setInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1, "SO_REUSEADDR"); err != nil {
		return err
	}
	if o.ReusePort {
		if err := setInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1, "SO_REUSEPORT"); err != nil {
			return err
		}
	}
	if family == unix.AF_INET6 {
		return setInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, boolInt(v6only), "IPV6_V6ONLY")
	}
	return nil
}

// Configure applies the per-connection options to an accepted socket.
func Configure(fd int, unixSocket bool, o Options) error {
	if err := setBuffers(fd, o); err != nil || unixSocket {
		return err
	}
	if o.NoDelay {
		if err := setInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1, "TCP_NODELAY"); err != nil {
			return err
		}
	}
	if o.KeepAlive > 0 {
		return SetKeepAlive(fd, o.KeepAlive, o.KeepAliveInterval, o.KeepAliveCount)
	}
	return nil
}

func setBuffers(fd int, o Options) error {
	if o.RecvBuf > 0 {
		if err := setInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.RecvBuf, "SO_RCVBUF"); err != nil {
			return err
		}
	}
	if o.SendBuf > 0 {
		return setInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.SendBuf, "SO_SNDBUF")
	}
	return nil
}

func setInt(fd, level, opt, v int, name string) error {
	if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
		return os.NewSyscallError("setsockopt "+name, err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func listenBacklog() int {
	// The kernel clamps this to net.core.somaxconn.
	return 4096
}

func sockaddr(network, addr string) (int, unix.Sockaddr, error) {
	switch network {
	case "unix":
		return unix.AF_UNIX, &unix.SockaddrUnix{Name: addr}, nil
	case "tcp", "tcp4", "tcp6":
	default:
		return 0, nil, fmt.Errorf("%w: %q", ErrNetwork, network)
	}
	ta, err := net.ResolveTCPAddr(network, addr)
	if err != nil {
		return 0, nil, err
	}
	ip, _ := netip.AddrFromSlice(ta.IP)
	switch {
	case network == "tcp4" || ip.Unmap().Is4():
		sa := &unix.SockaddrInet4{Port: ta.Port}
		if ip.IsValid() { // no host: every address
			sa.Addr = ip.Unmap().As4()
		}
		return unix.AF_INET, sa, nil
	case ip.IsValid() || network == "tcp6" || ipv6Available():
		sa := &unix.SockaddrInet6{Port: ta.Port, Addr: ip.As16()}
		return unix.AF_INET6, sa, nil
	default:
		return unix.AF_INET, &unix.SockaddrInet4{Port: ta.Port}, nil
	}
}

func ipv6Available() bool {
	fd, err := newSocket(unix.AF_INET6, unix.SOCK_STREAM)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// AddrPort returns the IP address and port of a TCP socket address, or the
// zero AddrPort for any other kind.
func AddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// Addr converts a socket address into the net.Addr the standard library
// would report for it.
func Addr(sa unix.Sockaddr) net.Addr {
	if u, ok := sa.(*unix.SockaddrUnix); ok {
		return &net.UnixAddr{Name: u.Name, Net: "unix"}
	}
	return net.TCPAddrFromAddrPort(AddrPort(sa))
}

// SetLingerZero makes closing fd reset the connection: the peer gets a TCP
// RST instead of a FIN, and data not yet sent is dropped.
func SetLingerZero(fd int) error {
	err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	return os.NewSyscallError("setsockopt SO_LINGER", err)
}

// Close closes fd.
func Close(fd int) error { return unix.Close(fd) }

// ShutdownWrite ends fd's output: the peer reads end of stream once it has
// everything sent before.
func ShutdownWrite(fd int) error {
	return os.NewSyscallError("shutdown", unix.Shutdown(fd, unix.SHUT_WR))
}

// LocalAddr returns the address fd is bound to.
func LocalAddr(fd int) (net.Addr, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, os.NewSyscallError("getsockname", err)
	}
	return Addr(sa), nil
}

// UnixPeer returns the path a unix socket's peer is bound to: "" when
// it is bound to none, as an accepted connection's peer usually is not.
func UnixPeer(fd int) string {
	if sa, err := unix.Getpeername(fd); err == nil {
		if su, ok := sa.(*unix.SockaddrUnix); ok {
			return su.Name
		}
	}
	return ""
}

// MaxFiles returns the process's limit on open descriptors (RLIMIT_NOFILE's
// soft limit), or 0 when it cannot be read.
func MaxFiles() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur)
}

// Unsent is zero: what a write took is the kernel's, in the socket's
// buffer, which OutboundQueued does not count.
func Unsent(int) int { return 0 }
