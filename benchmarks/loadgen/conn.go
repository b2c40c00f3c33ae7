package loadgen

import (
	"bytes"
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// A conn is one client socket and the round trip on it. Only its worker
// touches it.
type conn struct {
	fd      int
	id      int     // its number in the session, which its messages' content derives from
	msg     []byte  // the message in flight, and so the echo expected back
	sent    int     // bytes of msg written
	got     int     // bytes of the echo read
	start   int64   // when the round trip began: the send, or its intended time when paced
	seq     int64   // the message's sequence number, counted over the connection's life
	turn    int64   // open loop: the index of the connection's next message in this run
	sec     *secure // TLS: the record layer over fd; nil for plain TCP
	busy    bool    // a round trip is in flight
	dialing bool    // the connect is in progress
	dead    bool    // closed; skipped from then on
}

// newMsg returns a message of size bytes whose content differs per
// connection, so an echo crossed between connections shows as a mismatch.
func newMsg(size, id int) []byte {
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i*7 + id*13)
	}
	return msg
}

// loopbackSources is how many loopback addresses (127.0.0.1 on) client
// sockets to a loopback server spread over. Each closed connection holds its
// address and port in TIME_WAIT for a minute; one address has 28,000
// ephemeral ports, which a run of accepts at 25,000 a second uses up, and
// connect then searches longer and longer for a free one.
const loopbackSources = 250

// source returns the local address for client socket n to dst: one of
// loopbackSources addresses for an IPv4 loopback server, none (the kernel's
// choice) otherwise.
func source(dst netip.AddrPort, n int) netip.Addr {
	if !dst.Addr().Is4() || !dst.Addr().IsLoopback() {
		return netip.Addr{}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, byte(1 + n%loopbackSources)})
}

// openSocket starts a nonblocking connect to dst from src (if valid). The
// connect is under way (or done) when it returns without error.
func openSocket(dst netip.AddrPort, src netip.Addr, noDelay bool) (int, error) {
	var sa unix.Sockaddr
	family := unix.AF_INET
	if dst.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(dst.Port()), Addr: dst.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := prepare(fd, src, noDelay); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// prepare sets a client socket's options before its connect.
func prepare(fd int, src netip.Addr, noDelay bool) error {
	if noDelay {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return err
		}
	}
	if !src.IsValid() {
		return nil
	}
	// Binding without a port leaves the port to connect, which picks it
	// knowing the whole address pair.
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err != nil {
		return err
	}
	return unix.Bind(fd, &unix.SockaddrInet4{Addr: src.As4()})
}

// connected reports whether the connect on a socket that polled writable
// succeeded.
func connected(fd int) bool {
	soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	return err == nil && soErr == 0
}

// stamp gives the message its sequence number, so a stale or repeated echo
// shows as a mismatch.
func (c *conn) stamp() { stamp(c.msg, c.seq) }

// stamp writes seq at the start of msg.
func stamp(msg []byte, seq int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seq))
	copy(msg, b[:])
}

// unsent reports whether part of the message waits for the socket to be
// writable.
func (c *conn) unsent() bool {
	return c.sent < len(c.msg) || c.sec != nil && len(c.sec.raw.out) > 0
}

// outcome is what a write or read did to a round trip.
type outcome int

const (
	pending  outcome = iota // nothing finished; wait for the next event
	complete                // the whole echo is back
	failed                  // the connection broke; the worker closes it
)

// write writes what is left of the message. It returns pending with bytes
// still unwritten, for the worker to wait until the socket is writable.
func (c *conn) write() outcome {
	if c.sec != nil {
		return c.writeSecure()
	}
	for c.sent < len(c.msg) {
		n, err := unix.Write(c.fd, c.msg[c.sent:])
		if err == unix.EAGAIN {
			return pending
		}
		if err != nil {
			return failed
		}
		c.sent += n
	}
	return complete
}

// read reads once into buf and checks what came against what was sent.
// A mismatch counts in errs; so does a connection the server closed.
func (c *conn) read(buf []byte, errs *Errors) outcome {
	if c.sec != nil {
		return c.readSecure(buf, errs)
	}
	n, err := unix.Read(c.fd, buf)
	switch {
	case err == unix.EAGAIN:
		return pending
	case err != nil || n == 0:
		errs.Closed++
		return failed
	case !c.busy || c.got+n > c.sent || !bytes.Equal(buf[:n], c.msg[c.got:c.got+n]):
		errs.Mismatch++
		return failed
	}
	c.got += n
	if c.got < len(c.msg) {
		return pending
	}
	return complete
}
