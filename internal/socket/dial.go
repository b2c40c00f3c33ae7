//go:build !windows && !sluice_std

package socket

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Endpoint is an address to connect to: a TCP address or a unix
// socket's path.
type Endpoint struct {
	family int
	sa     unix.Sockaddr
}

// TCPEndpoint returns the endpoint for ap. An IPv4 address, or an
// IPv4-mapped IPv6 one, is dialed over IPv4.
func TCPEndpoint(ap netip.AddrPort) Endpoint {
	family, sa := sockaddrOf(ap)
	return Endpoint{family, sa}
}

// UnixEndpoint returns the endpoint for the unix socket at path.
func UnixEndpoint(path string) Endpoint {
	return Endpoint{unix.AF_UNIX, &unix.SockaddrUnix{Name: path}}
}

// Sockaddr returns the endpoint's socket address, for io_uring's connect.
func (ep Endpoint) Sockaddr() unix.Sockaddr { return ep.sa }

func sockaddrOf(ap netip.AddrPort) (int, unix.Sockaddr) {
	ip := ap.Addr().Unmap()
	if ip.Is4() {
		return unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
	}
	return unix.AF_INET6, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
}

// Open makes a non-blocking, close-on-exec stream socket to connect to ep.
func Open(ep Endpoint) (int, error) { return newSocket(ep.family, unix.SOCK_STREAM) }

// Bind binds fd to the local address ap, as a dialing socket does before
// it connects to pick its source address or port.
func Bind(fd int, ap netip.AddrPort) error {
	if err := setInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1, "SO_REUSEADDR"); err != nil {
		return err
	}
	_, sa := sockaddrOf(ap)
	return os.NewSyscallError("bind", unix.Bind(fd, sa))
}

// Connect starts connecting fd, non-blocking, to ep. It returns nil when
// the connection is made at once (a unix socket's usually is),
// unix.EINPROGRESS when it goes on in the background (the socket turns
// writable once it ends: ask PendingError how), or why it failed.
func Connect(fd int, ep Endpoint) error {
	err := unix.Connect(fd, ep.sa)
	if err == unix.EINTR {
		// The connect goes on in the background, as if interrupted before
		// it began to wait.
		return unix.EINPROGRESS
	}
	return err
}

// PendingError returns the error fd holds, if any (SO_ERROR), and clears
// it: how a connect that went on in the background ended (nil: fd is
// connected), or why a connection failed, such as a reset.
func PendingError(fd int) error {
	errno, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if errno != 0 {
		return unix.Errno(errno)
	}
	return nil
}

// SetNoDelay turns Nagle's algorithm off (TCP_NODELAY) when on is true.
func SetNoDelay(fd int, on bool) error {
	return setInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, boolInt(on), "TCP_NODELAY")
}

// SetKeepAlive turns keep-alive probes on after idle without traffic, one
// every interval, declaring the peer dead after count go unanswered. An
// interval of zero means idle/5 (at least a second), a count of zero
// means 5; an idle time of zero or less turns keep-alive off. Times are
// rounded down to whole seconds, at least one.
func SetKeepAlive(fd int, idle, interval time.Duration, count int) error {
	if idle <= 0 {
		return setInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 0, "SO_KEEPALIVE")
	}
	secs := max(int(idle/time.Second), 1)
	ivl := max(int(interval/time.Second), 1)
	if interval <= 0 {
		ivl = max(secs/5, 1)
	}
	if count <= 0 {
		count = keepAliveProbes
	}
	if err := setInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1, "SO_KEEPALIVE"); err != nil {
		return err
	}
	if err := setInt(fd, unix.IPPROTO_TCP, tcpKeepIdle, secs, "TCP_KEEPIDLE"); err != nil {
		return err
	}
	if err := setInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, ivl, "TCP_KEEPINTVL"); err != nil {
		return err
	}
	return setInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, count, "TCP_KEEPCNT")
}

// SetLinger sets what closing fd does with output the peer has yet to
// take: with sec < 0, the default, the kernel goes on sending it in the
// background; with sec == 0 it is dropped and the peer sees a reset. A
// positive time, which makes close(2) wait for the output on the calling
// thread, an event loop, is refused.
func SetLinger(fd int, sec int) error {
	if sec > 0 {
		return fmt.Errorf("setsockopt SO_LINGER %d: %w", sec, ErrLingerBlocks)
	}
	l := unix.Linger{Onoff: int32(boolInt(sec == 0))}
	return os.NewSyscallError("setsockopt SO_LINGER", unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &l))
}

// SetRecvBuffer sets the socket's receive buffer size (SO_RCVBUF).
func SetRecvBuffer(fd, n int) error {
	return setInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, n, "SO_RCVBUF")
}

// SetSendBuffer sets the socket's send buffer size (SO_SNDBUF).
func SetSendBuffer(fd, n int) error {
	return setInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, n, "SO_SNDBUF")
}

// Adopt takes nc's socket for a loop: it returns a non-blocking,
// close-on-exec copy of nc's descriptor and closes nc. A conn with no
// descriptor is refused with an error wrapping errors.ErrUnsupported.
func Adopt(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("%T has no descriptor: %w", nc, errors.ErrUnsupported)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var dupErr error
	if err = rc.Control(func(s uintptr) { fd, dupErr = dup(int(s)) }); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, dupErr
	}
	nc.Close()
	return fd, nil
}

func dup(fd int) (int, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return -1, os.NewSyscallError("fcntl O_NONBLOCK", err)
	}
	return nfd, nil
}
