//go:build linux

package sluice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/udptest"
)

// udpEcho answers every datagram with its bytes, and records the loops
// that served them and what OnOpen, OnClose and OnDatagramError saw.
type udpEcho struct {
	BuiltinEventEngine
	loops     sync.Map // loop index -> true
	opens     atomic.Int32
	truncated chan []byte
}

func (h *udpEcho) OnOpen(c Conn) ([]byte, Action) {
	h.opens.Add(1)
	return nil, None
}

func (h *udpEcho) OnTraffic(c Conn) Action {
	h.loops.Store(c.Loop().Index(), true)
	b, _ := c.Next(-1)
	if _, err := c.Write(b); err != nil {
		panic(err)
	}
	return None
}

func (h *udpEcho) OnDatagramError(c Conn, err error) Action {
	b, _ := c.Peek(-1)
	if errors.Is(err, ErrDatagramTruncated) && h.truncated != nil {
		h.truncated <- append([]byte(c.RemoteAddr().String()+"|"), b...)
	}
	return None
}

// udpPeer returns a UDP socket on loopback, for a test's peer of the
// engine's; it closes when the test ends, if the test has not closed it.
func udpPeer(t testing.TB) *net.UDPConn {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	return pc
}

// udpDial opens a client UDP socket connected to addr, as serve returns it.
func udpDial(t testing.TB, addr string) *net.UDPConn {
	t.Helper()
	network, address, _ := strings.Cut(addr, "://")
	return udptest.Dial(t, network, address)
}

func TestUDPEchoManyPeers(t *testing.T) {
	h := &udpEcho{}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(2))
	const peers, each = 100, 100
	var wg sync.WaitGroup
	errs := make(chan error, peers)
	for i := range peers {
		c := udpDial(t, addr)
		wg.Go(func() {
			buf := make([]byte, 1<<16)
			for j := range each {
				msg := fmt.Appendf(nil, "peer %d datagram %d", i, j)
				var got []byte
				for try := 0; got == nil; try++ {
					if try == 10 {
						errs <- fmt.Errorf("peer %d: no answer to datagram %d", i, j)
						return
					}
					c.Write(msg)
					c.SetReadDeadline(time.Now().Add(time.Second))
					n, err := c.Read(buf)
					if err != nil {
						continue
					}
					if bytes.HasPrefix(buf[:n], fmt.Appendf(nil, "peer %d datagram ", i)) && !bytes.Equal(buf[:n], msg) {
						continue // an answer to a datagram sent again
					}
					got = buf[:n]
				}
				if !bytes.Equal(got, msg) {
					errs <- fmt.Errorf("peer %d: sent %q, got %q", i, msg, got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Zero(t, h.opens.Load(), "OnOpen ran for a listener's datagrams")
}

func TestUDPSizes(t *testing.T) {
	h := &udpEcho{}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	require.NoError(t, c.SetWriteBuffer(1<<20))
	require.NoError(t, c.SetReadBuffer(1<<20))
	for _, n := range []int{0, 1, 2, 100, 1472, 1473, 8192, 9000, 32768, 65507, 0} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i*7 + n)
		}
		got := udptest.RoundTrip(t, c, p)
		require.Equal(t, p, got, "a datagram of %d bytes", n)
	}
}

func TestUDPTruncatedDatagramIsReported(t *testing.T) {
	h := &udpEcho{truncated: make(chan []byte, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithReadBufferCap(1024))
	c := udpDial(t, addr)
	big := bytes.Repeat([]byte("x"), 2000)
	_, err := c.Write(big)
	require.NoError(t, err)
	select {
	case got := <-h.truncated:
		from, part, _ := bytes.Cut(got, []byte("|"))
		assert.Equal(t, c.LocalAddr().String(), string(from), "the truncated datagram's sender")
		assert.Equal(t, big[:1024], part, "the part that fit")
	case <-time.After(10 * time.Second):
		t.Fatal("OnDatagramError never ran for a datagram larger than the read buffer")
	}
	assert.Equal(t, uint64(1), eng.Stats().DatagramsTruncated)
	// OnTraffic saw none of it: the next answer is the next datagram's.
	assert.Equal(t, []byte("small"), udptest.RoundTrip(t, c, []byte("small")))
}

func TestUDPIPv6(t *testing.T) {
	if ln, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		ln.Close()
	}
	for _, scheme := range []string{"udp6", "udp"} {
		t.Run(scheme, func(t *testing.T) {
			eng, addr := serveAddr(t, scheme+"://[::1]:0", &udpEcho{}, WithNumEventLoop(1))
			ua, ok := eng.Addrs()[0].(*net.UDPAddr)
			require.True(t, ok, "Addrs lists a %T", eng.Addrs()[0])
			assert.True(t, ua.IP.Equal(net.IPv6loopback))
			c := udpDial(t, addr)
			assert.Equal(t, []byte("over IPv6"), udptest.RoundTrip(t, c, []byte("over IPv6")))
			// IPv6 carries 20 bytes more a datagram than IPv4.
			require.NoError(t, c.SetWriteBuffer(1<<20))
			require.NoError(t, c.SetReadBuffer(1<<20))
			big := bytes.Repeat([]byte("6"), 65527)
			assert.Equal(t, big, udptest.RoundTrip(t, c, big))
		})
	}
}

func TestUDPDualStackAnswersIPv4(t *testing.T) {
	if ln, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skip("no IPv6:", err)
	} else {
		ln.Close()
	}
	eng, _ := serveAddr(t, "udp://:0", &udpEcho{}, WithNumEventLoop(1))
	port := eng.Addrs()[0].(*net.UDPAddr).Port
	c := udpDial(t, fmt.Sprintf("udp4://127.0.0.1:%d", port))
	assert.Equal(t, []byte("v4 to a dual-stack socket"), udptest.RoundTrip(t, c, []byte("v4 to a dual-stack socket")))
}

func TestUDPReusePortSpreadsPeersOverLoops(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		t.Run(fmt.Sprint("reuseport=", reuse), func(t *testing.T) {
			h := &udpEcho{}
			eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(4), WithReusePort(reuse))
			require.Len(t, eng.Addrs(), 1)
			for range 64 {
				c := udpDial(t, addr)
				assert.Equal(t, []byte("hi"), udptest.RoundTrip(t, c, []byte("hi")))
			}
			n := 0
			h.loops.Range(func(any, any) bool { n++; return true })
			if reuse && !stdBackend {
				assert.Greater(t, n, 1, "64 peers on 4 SO_REUSEPORT sockets all reached one loop")
			} else {
				assert.Equal(t, 1, n, "one socket, one loop")
			}
		})
	}
}

// udpClient dials UDP from the engine and records what its connection
// saw.
type udpClient struct {
	udpEcho
	got    chan string
	closed chan error
	failed chan error
}

func newUDPClient() *udpClient {
	return &udpClient{got: make(chan string, 16), closed: make(chan error, 4), failed: make(chan error, 4)}
}

func (h *udpClient) OnOpen(c Conn) ([]byte, Action) {
	if c.Origin() == Accepted {
		return nil, None
	}
	return []byte("ping"), None
}

func (h *udpClient) OnTraffic(c Conn) Action {
	if c.Origin() == Accepted {
		return h.udpEcho.OnTraffic(c)
	}
	b, _ := c.Next(-1)
	h.got <- string(b)
	return Close
}

func (h *udpClient) OnClose(c Conn, err error) Action {
	h.closed <- err
	return None
}

func (h *udpClient) OnDialFailed(addr string, ctx any, err error) { h.failed <- err }

func TestUDPDialEcho(t *testing.T) {
	h := newUDPClient()
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	require.NoError(t, eng.Dial(addr, nil))
	select {
	case got := <-h.got:
		assert.Equal(t, "ping", got)
	case err := <-h.failed:
		t.Fatal("dial failed:", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer on the dialed UDP connection")
	}
	select {
	case err := <-h.closed:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the dialed UDP connection did not close")
	}
	assert.Equal(t, uint64(1), eng.Stats().Dialed)
	waitFor(t, 5*time.Second, func() bool { return eng.CountConnections() == 0 }, func() string { return "connection still counted" })
}

func TestUDPEnrollEcho(t *testing.T) {
	h := newUDPClient()
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	nc := udpDial(t, addr)
	require.NoError(t, eng.Enroll(nc, nil))
	select {
	case got := <-h.got:
		assert.Equal(t, "ping", got)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer on the enrolled UDP connection")
	}
	assert.NoError(t, <-h.closed)
	assert.Equal(t, uint64(1), eng.Stats().Enrolled)

	un := udpPeer(t)
	assert.ErrorIs(t, eng.Enroll(un, nil), errors.ErrUnsupported, "a UDP socket that is not connected")
}

func TestUDPDialPortUnreachable(t *testing.T) {
	// A port nothing listens on: bound, then let go.
	pc := udpPeer(t)
	dead := pc.LocalAddr().String()
	pc.Close()

	h := newUDPClient()
	eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	require.NoError(t, eng.Dial("udp://"+dead, nil))
	select {
	case err := <-h.closed:
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	case got := <-h.got:
		t.Fatalf("a dead port answered %q", got)
	case <-time.After(10 * time.Second):
		t.Fatal("a dial to a dead UDP port neither failed nor closed")
	}
}

func TestUDPAsyncWriteTo(t *testing.T) {
	h := &udpAsync{}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	assert.Equal(t, []byte("later: hello"), udptest.RoundTrip(t, c, []byte("hello")))
	assert.ErrorIs(t, <-h.asyncErr, ErrNeedAddress, "AsyncWrite of a socket that is not connected")
	assert.NoError(t, <-h.sent, "AsyncWriteTo's callback")
	assert.ErrorIs(t, <-h.sent, syscall.EMSGSIZE, "a datagram larger than UDP carries")
}

// udpAsync answers each datagram from another goroutine, with
// AsyncWriteTo.
type udpAsync struct {
	BuiltinEventEngine
	asyncErr chan error
	sent     chan error
}

func (h *udpAsync) OnBoot(Engine) Action {
	h.asyncErr, h.sent = make(chan error, 16), make(chan error, 16)
	return None
}

func (h *udpAsync) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	reply := append([]byte("later: "), b...)
	to := c.RemoteAddr()
	pc := c.(PacketConn)
	go func() {
		h.asyncErr <- pc.AsyncWrite(reply, nil)
		for _, p := range [][]byte{reply, make([]byte, 65535-7)} {
			if err := pc.AsyncWriteTo(p, to, func(_ Conn, err error) { h.sent <- err }); err != nil {
				h.sent <- err
			}
		}
	}()
	return None
}

func TestUDPAsyncWriteToIsBounded(t *testing.T) {
	done := make(chan [2]error, 1)
	h := &udpBound{done: done}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithMaxOutbound(1000))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	errs := <-done
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], ErrOutboundFull)
}

// udpBound posts two datagrams of 600 bytes from the loop itself, where
// neither can be sent before both are posted, against a bound of 1000.
type udpBound struct {
	BuiltinEventEngine
	done chan [2]error
}

func (h *udpBound) OnTraffic(c Conn) Action {
	c.Discard(-1)
	pc, to := c.(PacketConn), c.RemoteAddr()
	p := make([]byte, 600)
	h.done <- [2]error{pc.AsyncWriteTo(p, to, nil), pc.AsyncWriteTo(p, to, nil)}
	return None
}

func TestUDPKillDialed(t *testing.T) {
	h := &udpKill{udpClient: newUDPClient(), ids: make(chan uint64, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	require.NoError(t, eng.Dial(addr, nil))
	id := <-h.ids
	require.NoError(t, eng.Kill(id))
	select {
	case err := <-h.closed:
		assert.ErrorIs(t, err, ErrKilled)
	case <-time.After(10 * time.Second):
		t.Fatal("a killed UDP connection did not close")
	}
	assert.Equal(t, uint64(1), eng.Stats().Killed)
}

// udpKill opens a UDP connection that sends nothing, and tells its ID.
type udpKill struct {
	*udpClient
	ids chan uint64
}

func (h *udpKill) OnOpen(c Conn) ([]byte, Action) {
	if c.Origin() == Dialed {
		h.ids <- c.ID()
	}
	return nil, None
}

func TestUDPListenerRefusesStreamOptions(t *testing.T) {
	_, err := Start(&udpEcho{}, "udp://127.0.0.1:0", WithPoller(testPoller), WithTLS(serverTLS(t)))
	assert.ErrorIs(t, err, ErrInvalidAddr)
}

// udpFirstByte answers each datagram with its first byte only, leaving
// the rest unread; it panics on "boom", and writes outside OnTraffic
// through Loop.Execute when asked.
type udpFirstByte struct {
	BuiltinEventEngine
	outside chan error
}

func (h *udpFirstByte) OnTraffic(c Conn) Action {
	b, _ := c.Peek(-1)
	if string(b) == "boom" {
		panic("boom")
	}
	if string(b) == "outside" {
		c.Discard(-1)
		c.Loop().Execute(func() {
			_, err := c.Write([]byte("late"))
			h.outside <- err
		})
		return None
	}
	first, _ := c.Next(1)
	c.Write(first)
	return Close // does nothing to a listener's socket
}

func TestUDPDatagramBoundaries(t *testing.T) {
	h := &udpFirstByte{outside: make(chan error, 1)}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	// The bytes one call leaves unread go with their datagram; a panic
	// and the Close action leave the socket serving.
	assert.Equal(t, []byte("a"), udptest.RoundTrip(t, c, []byte("abc")))
	_, err := c.Write([]byte("boom"))
	require.NoError(t, err)
	assert.Equal(t, []byte("x"), udptest.RoundTrip(t, c, []byte("xyz")))
	// Outside OnTraffic a listener's socket has no sender to answer.
	_, err = c.Write([]byte("outside"))
	require.NoError(t, err)
	assert.ErrorIs(t, <-h.outside, ErrNeedAddress)
}

func TestUDPBesideTCP(t *testing.T) {
	h := &udpListeners{}
	eng, tcpAddr := serve(t, h, WithNumEventLoop(2), WithListener("udp://127.0.0.1:0"))
	require.Len(t, eng.Addrs(), 2)
	ua, ok := eng.Addrs()[1].(*net.UDPAddr)
	require.True(t, ok, "Addrs lists a %T", eng.Addrs()[1])
	c := udpDial(t, "udp://"+ua.String())
	assert.Equal(t, []byte("both"), udptest.RoundTrip(t, c, []byte("both")))
	assert.Equal(t, ua.String(), (<-h.listener).String(), "ListenerAddr of the UDP socket")
	tc := dial(t, tcpAddr)
	_, err := tc.Write([]byte("tcp too"))
	require.NoError(t, err)
	got := make([]byte, 7)
	_, err = io.ReadFull(tc, got)
	require.NoError(t, err)
	assert.Equal(t, "tcp too", string(got))
}

// udpListeners echoes over TCP and UDP, and tells the UDP socket's
// listener address.
type udpListeners struct {
	BuiltinEventEngine
	listener chan net.Addr
}

func (h *udpListeners) OnBoot(Engine) Action {
	h.listener = make(chan net.Addr, 16)
	return None
}

func (h *udpListeners) OnTraffic(c Conn) Action {
	if _, ok := c.(PacketConn); ok {
		h.listener <- c.ListenerAddr()
	}
	b, _ := c.Next(-1)
	c.Write(b)
	return None
}

func TestUDPStopAcceptingClosesTheSockets(t *testing.T) {
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", &udpEcho{}, WithNumEventLoop(1))
	c := udpDial(t, addr)
	assert.Equal(t, []byte("up"), udptest.RoundTrip(t, c, []byte("up")))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, eng.StopAccepting(ctx))
	// The port is free again: the engine's socket on it is closed.
	waitFor(t, 5*time.Second, func() bool {
		pc, err := net.ListenPacket("udp", strings.TrimPrefix(addr, "udp://"))
		if err == nil {
			pc.Close()
		}
		return err == nil
	}, func() string { return "the UDP port is still bound after StopAccepting" })
}

// udpConnected dials UDP from the engine and drives the connection from
// OnOpen: it checks what the Conn of a connected socket says of itself,
// writes with Writev and, from another goroutine, AsyncWritev, and
// closes once both answers are back.
type udpConnected struct {
	BuiltinEventEngine
	peer    string
	checks  chan error
	answers chan string
	closed  chan error
	got     int
}

func (h *udpConnected) OnOpen(c Conn) ([]byte, Action) {
	if c.Origin() == Accepted {
		return nil, None
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.RemoteAddr().String() == h.peer, "RemoteAddr %v, want %s", c.RemoteAddr(), h.peer)
	_, isUDP := c.LocalAddr().(*net.UDPAddr)
	check(isUDP, "LocalAddr is a %T", c.LocalAddr())
	check(c.ListenerAddr() == nil, "ListenerAddr %v of a dialed socket", c.ListenerAddr())
	check(errors.Is(c.PauseRead(), errors.ErrUnsupported), "PauseRead: %v", c.PauseRead())
	check(errors.Is(c.CloseWrite(), errors.ErrUnsupported), "CloseWrite: %v", c.CloseWrite())
	check(errors.Is(c.ResumeRead(), errors.ErrUnsupported), "ResumeRead: %v", c.ResumeRead())
	check(errors.Is(c.SetNoDelay(true), errors.ErrUnsupported), "SetNoDelay: %v", c.SetNoDelay(true))
	check(errors.Is(c.SetKeepAlive(time.Second, time.Second, 1), errors.ErrUnsupported), "SetKeepAlive: %v", c.SetKeepAlive(time.Second, time.Second, 1))
	check(errors.Is(c.SetLinger(0), errors.ErrUnsupported), "SetLinger: %v", c.SetLinger(0))
	check(c.Flush() == nil && c.OutboundBuffered() == 0, "Flush: %v, OutboundBuffered %d", c.Flush(), c.OutboundBuffered())
	h.checks <- errors.Join(errs...)
	c.Writev([][]byte{[]byte("one "), []byte("datagram")})
	go func() {
		if err := c.AsyncWritev([][]byte{[]byte("from "), []byte("elsewhere")}, nil); err != nil {
			h.checks <- err
		}
	}()
	return nil, None
}

func (h *udpConnected) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	if c.Origin() == Accepted {
		c.Write(b)
		return None
	}
	h.answers <- string(b)
	if h.got++; h.got == 2 {
		return Close
	}
	return None
}

func (h *udpConnected) OnClose(c Conn, err error) Action {
	h.closed <- err
	return None
}

func TestUDPConnectedConn(t *testing.T) {
	h := &udpConnected{checks: make(chan error, 4), answers: make(chan string, 4), closed: make(chan error, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	h.peer = eng.Addrs()[0].String()
	require.NoError(t, eng.Dial(addr, nil, DialLocalAddr("127.0.0.1")))
	require.NoError(t, <-h.checks)
	got := []string{<-h.answers, <-h.answers}
	assert.ElementsMatch(t, []string{"one datagram", "from elsewhere"}, got, "each Writev is one datagram")
	assert.NoError(t, <-h.closed)
}

// udpSocketConn checks what the Conn of a listener's socket says of
// itself, and that Wake calls OnTraffic for it with no datagram in hand.
type udpSocketConn struct {
	BuiltinEventEngine
	checks chan error
	woken  chan int
}

func (h *udpSocketConn) OnTraffic(c Conn) Action {
	if c.RemoteAddr() == nil {
		h.woken <- c.InboundBuffered()
		return None
	}
	var errs []error
	if err := c.Close(); !errors.Is(err, errors.ErrUnsupported) {
		errs = append(errs, fmt.Errorf("Close of a listener's socket: %v", err))
	}
	if err := c.AsyncWrite([]byte("x"), nil); !errors.Is(err, ErrNeedAddress) {
		errs = append(errs, fmt.Errorf("AsyncWrite: %v", err))
	}
	if err := c.AsyncWritev([][]byte{[]byte("x")}, nil); !errors.Is(err, ErrNeedAddress) {
		errs = append(errs, fmt.Errorf("AsyncWritev: %v", err))
	}
	if err := c.(PacketConn).AsyncWriteTo([]byte("x"), nil, nil); !errors.Is(err, ErrNeedAddress) {
		errs = append(errs, fmt.Errorf("AsyncWriteTo with no address: %v", err))
	}
	if c.ID() != 0 {
		errs = append(errs, fmt.Errorf("ID %d of a listener's socket", c.ID()))
	}
	h.checks <- errors.Join(errs...)
	c.Wake(nil)
	return None
}

func TestUDPListenerConn(t *testing.T) {
	h := &udpSocketConn{checks: make(chan error, 1), woken: make(chan int, 1)}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, <-h.checks)
	assert.Zero(t, <-h.woken, "Wake's OnTraffic had bytes in hand")
}

func TestUDPDialCountsAgainstMaxConnections(t *testing.T) {
	h := newUDPClient()
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", &udpKill{udpClient: h, ids: make(chan uint64, 2)}, WithNumEventLoop(1), WithMaxConnections(1))
	require.NoError(t, eng.Dial(addr, nil))
	require.NoError(t, eng.Dial(addr, nil))
	select {
	case err := <-h.failed:
		assert.ErrorIs(t, err, ErrTooManyConns)
	case <-time.After(10 * time.Second):
		t.Fatal("a second UDP dial passed WithMaxConnections(1)")
	}
	assert.Equal(t, 1, eng.CountConnections())
}

func TestUDPDatagramRateLimit(t *testing.T) {
	h := &udpCounted{}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramRateLimit(1, 5))
	c := udpDial(t, addr)
	const sent = 50
	for range sent {
		_, err := c.Write([]byte("flood"))
		require.NoError(t, err)
	}
	waitFor(t, 10*time.Second, func() bool {
		return h.n.Load()+int64(eng.Stats().DatagramsRateLimited) == sent
	}, func() string {
		return fmt.Sprintf("%d handed over, %d limited, of %d sent", h.n.Load(), eng.Stats().DatagramsRateLimited, sent)
	})
	// A burst of 5, and at most one more for each second the sending took.
	assert.LessOrEqual(t, h.n.Load(), int64(10), "datagrams past the rate reached OnTraffic")
	assert.GreaterOrEqual(t, h.n.Load(), int64(5), "the burst")

	// Another source has a rate of its own.
	other, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, eng.Addrs()[0].(*net.UDPAddr))
	if err != nil {
		t.Skip("no 127.0.0.2 to send from:", err)
	}
	defer other.Close()
	assert.Equal(t, []byte("another"), udptest.RoundTrip(t, other, []byte("another")))
}

// udpCounted echoes and counts what OnTraffic got.
type udpCounted struct {
	BuiltinEventEngine
	n atomic.Int64
}

func (h *udpCounted) OnTraffic(c Conn) Action {
	h.n.Add(1)
	b, _ := c.Next(-1)
	c.Write(b)
	return None
}

func TestUDPRateLimitSparesConnectedSockets(t *testing.T) {
	h := &udpDialedCount{}
	eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramRateLimit(1, 1))
	peer := udpPeer(t)
	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	buf := make([]byte, 64)
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, from, err := peer.ReadFromUDP(buf) // the dialed socket's hello
	require.NoError(t, err)
	const n = 20
	for range n {
		_, err := peer.WriteToUDP([]byte("to a connected socket"), from)
		require.NoError(t, err)
	}
	waitFor(t, 10*time.Second, func() bool { return h.n.Load() == n }, func() string {
		return fmt.Sprintf("%d of %d datagrams reached the connected socket", h.n.Load(), n)
	})
	assert.Zero(t, eng.Stats().DatagramsRateLimited)
}

// udpDialedCount says hello from a dialed socket and counts what it
// receives.
type udpDialedCount struct {
	BuiltinEventEngine
	n atomic.Int64
}

func (h *udpDialedCount) OnOpen(c Conn) ([]byte, Action) { return []byte("hello"), None }

func (h *udpDialedCount) OnTraffic(c Conn) Action {
	if c.Origin() == Dialed {
		h.n.Add(1)
	}
	return None
}

// A datagram of exactly the read buffer's size reaches OnTraffic whole;
// one byte more is truncated, on every backend.
func TestUDPTruncationBoundary(t *testing.T) {
	const cap = 1024
	h := &udpEcho{truncated: make(chan []byte, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithReadBufferCap(cap))
	c := udpDial(t, addr)
	exact := bytes.Repeat([]byte("e"), cap)
	assert.Equal(t, exact, udptest.RoundTrip(t, c, exact), "a datagram of the read buffer's size")
	assert.Zero(t, eng.Stats().DatagramsTruncated)
	over := append(bytes.Repeat([]byte("o"), cap), 'X')
	_, err := c.Write(over)
	require.NoError(t, err)
	select {
	case got := <-h.truncated:
		_, part, _ := bytes.Cut(got, []byte("|"))
		assert.Equal(t, over[:cap], part, "the part that fit")
	case <-time.After(10 * time.Second):
		t.Fatal("a datagram one byte over the read buffer was not reported")
	}
	assert.Equal(t, uint64(1), eng.Stats().DatagramsTruncated)
}

// What the kernel refuses to send reaches the caller on every backend:
// Write's error inside OnTraffic, and AsyncWriteTo's callback. IPv4
// carries at most 65,507 bytes a datagram, IPv6 65,527; port 0 is no
// destination.
func TestUDPSendErrorsReachTheCaller(t *testing.T) {
	h := &udpSendErrors{results: make(chan string, 16)}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	want := []string{
		"Write 65507: <nil>",
		"Write 65508: message too long",
		"AsyncWriteTo 65508: message too long",
		"AsyncWriteTo port 0: invalid argument",
	}
	for _, w := range want {
		select {
		case got := <-h.results:
			assert.Equal(t, w, got)
		case <-time.After(10 * time.Second):
			t.Fatalf("no result; want %q", w)
		}
	}
}

// udpSendErrors, on its first datagram, writes what the kernel refuses
// and tells each result, in order.
type udpSendErrors struct {
	BuiltinEventEngine
	results chan string
	once    bool
}

func (h *udpSendErrors) OnTraffic(c Conn) Action {
	c.Discard(-1)
	if h.once {
		return None
	}
	h.once = true
	tell := func(what string, err error) {
		s := "<nil>"
		var errno syscall.Errno
		if errors.As(err, &errno) {
			s = errno.Error()
		} else if err != nil {
			s = err.Error()
		}
		h.results <- what + ": " + s
	}
	_, err := c.Write(make([]byte, 65507))
	tell("Write 65507", err)
	_, err = c.Write(make([]byte, 65508))
	tell("Write 65508", err)
	pc, to := c.(PacketConn), c.RemoteAddr().(*net.UDPAddr)
	go func() {
		cb := func(what string) AsyncCallback { return func(_ Conn, err error) { tell(what, err) } }
		if err := pc.AsyncWriteTo(make([]byte, 65508), to, cb("AsyncWriteTo 65508")); err != nil {
			tell("AsyncWriteTo 65508 posting", err)
		}
		port0 := &net.UDPAddr{IP: to.IP}
		if err := pc.AsyncWriteTo([]byte("x"), port0, cb("AsyncWriteTo port 0")); err != nil {
			tell("AsyncWriteTo port 0 posting", err)
		}
	}()
	return None
}

// A connected socket whose peer goes away after an exchange closes with
// ECONNREFUSED once the kernel hears of it, on every backend; each
// AsyncWrite's callback runs once, before or with the close.
func TestUDPConnectedPeerGoesAway(t *testing.T) {
	h := &udpPeerGone{opened: make(chan Conn, 1), closed: make(chan error, 1)}
	eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	peer := udpPeer(t)
	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	c := <-h.opened
	buf := make([]byte, 64)
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := peer.ReadFromUDP(buf)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(buf[:n]))
	peer.Close()
	var posted, called atomic.Int64
	for {
		select {
		case err := <-h.closed:
			assert.ErrorIs(t, err, syscall.ECONNREFUSED)
			waitFor(t, 5*time.Second, func() bool { return called.Load() == posted.Load() }, func() string {
				return fmt.Sprintf("%d of %d callbacks ran", called.Load(), posted.Load())
			})
			return
		case <-time.After(10 * time.Millisecond):
			if c.AsyncWrite([]byte("anyone?"), func(Conn, error) { called.Add(1) }) == nil {
				posted.Add(1)
			}
		}
	}
}

// udpPeerGone says hello from a dialed socket, hands its Conn over, and
// tells how it closed.
type udpPeerGone struct {
	BuiltinEventEngine
	opened chan Conn
	closed chan error
}

func (h *udpPeerGone) OnOpen(c Conn) ([]byte, Action) {
	if c.Origin() == Dialed {
		h.opened <- c
		return []byte("hello"), None
	}
	return nil, None
}

func (h *udpPeerGone) OnClose(c Conn, err error) Action {
	h.closed <- err
	return None
}

// Stop while goroutines post AsyncWriteTo: every datagram posted has its
// callback run, once; what is posted after returns ErrEngineStopped.
func TestUDPStopWithDatagramsInFlight(t *testing.T) {
	h := &udpFlood{started: make(chan struct{})}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithMaxOutbound(64<<10))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	<-h.started
	waitFor(t, 10*time.Second, func() bool { return h.called.Load() > 100 }, func() string { return "no datagram sent" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, eng.Stop(ctx))
	h.wg.Wait()
	assert.Equal(t, h.posted.Load(), h.called.Load(), "callbacks run, of datagrams posted")
	assert.Zero(t, h.twice.Load(), "callbacks run twice")
	for _, err := range h.otherErrs() {
		t.Error("posting:", err)
	}
}

// udpFlood, on its first datagram, has 8 goroutines post datagrams back
// to its sender until the engine stops.
type udpFlood struct {
	BuiltinEventEngine
	started        chan struct{}
	once           sync.Once
	wg             sync.WaitGroup
	posted, called atomic.Int64
	twice          atomic.Int64
	mu             sync.Mutex
	errs           []error
}

func (h *udpFlood) otherErrs() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.errs
}

func (h *udpFlood) OnTraffic(c Conn) Action {
	c.Discard(-1)
	h.once.Do(func() {
		pc, to := c.(PacketConn), c.RemoteAddr()
		for range 8 {
			h.wg.Go(func() {
				p := make([]byte, 512)
				for {
					var ran atomic.Bool
					err := pc.AsyncWriteTo(p, to, func(Conn, error) {
						if ran.Swap(true) {
							h.twice.Add(1)
						}
						h.called.Add(1)
					})
					switch {
					case err == nil:
						h.posted.Add(1)
					case errors.Is(err, ErrOutboundFull):
						runtime.Gosched()
					case errors.Is(err, ErrEngineStopped):
						return
					default:
						h.mu.Lock()
						h.errs = append(h.errs, err)
						h.mu.Unlock()
						return
					}
				}
			})
		}
		close(h.started)
	})
	return None
}

// AsyncWriteTo on a connected socket sends to its peer, named or nil; an
// address other than its peer's, or one it cannot read, is refused and
// its callback never runs: the datagram does not silently go elsewhere.
func TestUDPConnectedAsyncWriteToAddress(t *testing.T) {
	h := &udpPeerGone{opened: make(chan Conn, 1), closed: make(chan error, 1)}
	eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	peer := udpPeer(t)
	other := udpPeer(t)
	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	pc := (<-h.opened).(PacketConn)
	read := func() string {
		buf := make([]byte, 64)
		peer.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := peer.ReadFromUDP(buf)
		require.NoError(t, err)
		return string(buf[:n])
	}
	assert.Equal(t, "hello", read())

	sent := make(chan error, 4)
	cb := func(_ Conn, err error) { sent <- err }
	require.NoError(t, pc.AsyncWriteTo([]byte("named"), peer.LocalAddr(), cb))
	assert.NoError(t, <-sent)
	assert.Equal(t, "named", read())
	require.NoError(t, pc.AsyncWriteTo([]byte("nil"), nil, cb))
	assert.NoError(t, <-sent)
	assert.Equal(t, "nil", read())

	assert.ErrorIs(t, pc.AsyncWriteTo([]byte("elsewhere"), other.LocalAddr(), cb), ErrInvalidAddr)
	assert.ErrorIs(t, pc.AsyncWriteTo([]byte("a name"), udpName("localhost:9"), cb), ErrInvalidAddr)
	require.NoError(t, pc.AsyncWriteTo([]byte("last"), nil, cb))
	assert.NoError(t, <-sent, "the callback of a refused datagram ran")
	assert.Equal(t, "last", read(), "a refused datagram reached the peer")
}

// udpName is a net.Addr that names a host.
type udpName string

func (a udpName) Network() string { return "udp" }
func (a udpName) String() string  { return string(a) }

// WithMaxOutbound bounds the memory that datagrams posted and not yet
// sent hold, however small they are: each holds a task as well as its
// bytes, and an empty datagram is a datagram too.
func TestUDPAsyncWriteToBoundsSmallDatagrams(t *testing.T) {
	const bound = 64 << 10
	h := &udpSmallPosts{done: make(chan int, 1)}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithMaxOutbound(bound))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	posted := <-h.done
	held := posted * int(unsafe.Sizeof(task{}))
	assert.LessOrEqual(t, held, bound, "%d empty datagrams posted, holding %d bytes of tasks against a bound of %d", posted, held, bound)
	assert.Positive(t, posted)
}

// udpSmallPosts posts empty datagrams from the loop itself, where none
// can be sent before it stops, until one is refused or 100,000 are in.
type udpSmallPosts struct {
	BuiltinEventEngine
	done chan int
}

func (h *udpSmallPosts) OnTraffic(c Conn) Action {
	c.Discard(-1)
	pc, to := c.(PacketConn), c.RemoteAddr()
	n := 0
	for ; n < 100_000; n++ {
		if pc.AsyncWriteTo(nil, to, nil) != nil {
			break
		}
	}
	h.done <- n
	return None
}

// No OnOpen or OnClose runs for a listener's socket, neither as it
// serves nor as the engine stops.
func TestUDPListenerSocketHasNoOpenOrClose(t *testing.T) {
	h := &udpOpenClose{}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(2), WithReusePort(true))
	c := udpDial(t, addr)
	assert.Equal(t, []byte("hi"), udptest.RoundTrip(t, c, []byte("hi")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, eng.StopAccepting(ctx))
	require.NoError(t, eng.Stop(ctx))
	assert.Zero(t, h.opens.Load(), "OnOpen ran for a listener's socket")
	assert.Zero(t, h.closes.Load(), "OnClose ran for a listener's socket")
}

// udpOpenClose echoes and counts OnOpen and OnClose.
type udpOpenClose struct {
	udpEcho
	closes atomic.Int32
}

func (h *udpOpenClose) OnClose(Conn, error) Action {
	h.closes.Add(1)
	return None
}

// An IPv6 link-local sender is answered: its address keeps its zone (the
// interface), without which a link-local address names no one.
func TestUDPLinkLocalPeer(t *testing.T) {
	ip, zone := linkLocal(t)
	h := &udpEcho{truncated: make(chan []byte, 1)}
	eng, _ := serveAddr(t, "udp6://[::]:0", h, WithNumEventLoop(1), WithReadBufferCap(1024))
	port := eng.Addrs()[0].(*net.UDPAddr).Port
	to := &net.UDPAddr{IP: ip, Port: port, Zone: zone}
	c, err := net.DialUDP("udp6", &net.UDPAddr{IP: ip, Zone: zone}, to)
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, []byte("on the link"), udptest.RoundTrip(t, c, []byte("on the link")))
	// RemoteAddr, as OnDatagramError shows it, names the zone.
	_, err = c.Write(make([]byte, 1025))
	require.NoError(t, err)
	got := <-h.truncated
	from, _, _ := bytes.Cut(got, []byte("|"))
	assert.Equal(t, c.LocalAddr().String(), string(from), "the sender's address")
}

// linkLocal returns an IPv6 link-local address of one of the machine's
// interfaces, and the interface's name, or skips the test.
func linkLocal(t *testing.T) (net.IP, string) {
	ifs, err := net.Interfaces()
	require.NoError(t, err)
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() == nil && n.IP.IsLinkLocalUnicast() {
				return n.IP, ifc.Name
			}
		}
	}
	t.Skip("no interface with an IPv6 link-local address")
	return nil, ""
}

// An IPv4 socket asked to send to an IPv6 address refuses it with an
// error, on every backend; the loop goes on.
func TestUDPSendToTheOtherFamily(t *testing.T) {
	h := &udpOtherFamily{results: make(chan error, 2)}
	_, addr := serveAddr(t, "udp4://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	for range 2 {
		select {
		case err := <-h.results:
			assert.Error(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("no answer: the loop is gone")
		}
	}
	assert.Equal(t, []byte("still here"), udptest.RoundTrip(t, c, []byte("still here")))
}

// udpOtherFamily, on its first datagram, sends to an IPv6 address with
// AsyncWriteTo, with and without a callback, and then echoes.
type udpOtherFamily struct {
	udpEcho
	results chan error
	once    sync.Once
}

func (h *udpOtherFamily) OnTraffic(c Conn) Action {
	first := false
	h.once.Do(func() { first = true })
	if !first {
		return h.udpEcho.OnTraffic(c)
	}
	c.Discard(-1)
	pc, v6 := c.(PacketConn), &net.UDPAddr{IP: net.IPv6loopback, Port: 9}
	if err := pc.AsyncWriteTo([]byte("x"), v6, func(_ Conn, err error) { h.results <- err }); err != nil {
		h.results <- err
	}
	if err := pc.AsyncWriteTo([]byte("x"), v6, nil); err != nil {
		h.results <- err
	} else {
		pc.Wake(func(_ Conn, _ error) { h.results <- errors.New("sent, or dropped: no error to tell") })
	}
	return None
}

// A send the socket's full buffer refuses fails at once with EAGAIN (or
// ENOBUFS), told to AsyncWriteTo's callback, on every backend: the loop
// never waits for room. The buffer fills with datagrams held for a
// neighbour on the local network that never answers, which a socket with
// a small send buffer can be seen to do before the test runs.
func TestUDPFullSendBufferIsToldNotWaitedFor(t *testing.T) {
	to := unresolvedNeighbour(t)
	h := &udpFullBuffer{to: to}
	eng, _ := serveAddr(t, "udp4://0.0.0.0:0", h, WithNumEventLoop(1))
	c := udpDial(t, fmt.Sprintf("udp4://127.0.0.1:%d", eng.Addrs()[0].(*net.UDPAddr).Port))
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	waitFor(t, 10*time.Second, func() bool { return h.done.Load() == udpFullPosts }, func() string {
		return fmt.Sprintf("%d of %d callbacks ran", h.done.Load(), udpFullPosts)
	})
	assert.Positive(t, h.full.Load(), "no callback heard of the full buffer: %d sent", h.sent.Load())
	assert.Equal(t, uint64(h.full.Load()), eng.Stats().DatagramsSendFailed)
}

const udpFullPosts = 200

// udpFullBuffer, on its first datagram, shrinks its socket's send buffer
// and posts datagrams of 1,000 bytes to to, counting what the callbacks
// hear.
type udpFullBuffer struct {
	BuiltinEventEngine
	to               *net.UDPAddr
	once             sync.Once
	full, sent, done atomic.Int64
}

func (h *udpFullBuffer) OnTraffic(c Conn) Action {
	c.Discard(-1)
	h.once.Do(func() {
		if err := c.SetWriteBuffer(4096); err != nil {
			panic(err)
		}
		pc := c.(PacketConn)
		cb := func(_ Conn, err error) {
			switch {
			case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ENOBUFS):
				h.full.Add(1)
			case err == nil:
				h.sent.Add(1)
			}
			h.done.Add(1)
		}
		go func() {
			for range udpFullPosts {
				for pc.AsyncWriteTo(make([]byte, 1000), h.to, cb) != nil {
					runtime.Gosched() // ErrOutboundFull: the loop catches up
				}
			}
		}()
	})
	return None
}

// unresolvedNeighbour returns an address on the local network of one of
// the machine's interfaces that a socket with a small send buffer fills
// its buffer sending to, as the kernel holds the datagrams while it asks
// for the neighbour; or skips the test.
func unresolvedNeighbour(t *testing.T) *net.UDPAddr {
	ifs, err := net.Interfaces()
	require.NoError(t, err)
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.To4() == nil {
				continue
			}
			ones, bits := n.Mask.Size()
			if bits-ones < 4 {
				continue
			}
			ip := n.IP.Mask(n.Mask).To4()
			ip[3] |= 0x0e // a host in the network's first 16, seldom taken
			if ip.Equal(n.IP) {
				ip[3]++
			}
			to := &net.UDPAddr{IP: ip, Port: 9}
			if fillsBuffer(to) {
				return to
			}
		}
	}
	t.Skip("no neighbour on a local network to fill a socket's send buffer towards")
	return nil
}

// fillsBuffer reports whether a socket with a small send buffer finds it
// full sending datagrams to to.
func fillsBuffer(to *net.UDPAddr) bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096)
	sa := &syscall.SockaddrInet4{Port: to.Port, Addr: [4]byte(to.IP.To4())}
	p := make([]byte, 1000)
	for range 64 {
		if err := syscall.Sendto(fd, p, 0, sa); err == syscall.EAGAIN || err == syscall.ENOBUFS {
			return true
		} else if err != nil {
			return false
		}
	}
	return false
}

// A Writev larger than any datagram is refused before it is gathered: the
// loop keeps no buffer the size of what it refused.
func TestUDPWritevTooLargeKeepsNothing(t *testing.T) {
	h := &udpWritevBig{errs: make(chan error, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	assert.ErrorIs(t, <-h.errs, syscall.EMSGSIZE)
	done := make(chan int, 1)
	l := eng.e.loops[0]
	require.NoError(t, Loop{l}.Execute(func() { done <- cap(l.packets.gather) }))
	assert.LessOrEqual(t, <-done, 64<<10, "bytes the loop keeps to gather a datagram in")
}

// udpWritevBig answers with a Writev of 8 MiB.
type udpWritevBig struct {
	BuiltinEventEngine
	errs chan error
}

func (h *udpWritevBig) OnTraffic(c Conn) Action {
	c.Discard(-1)
	big := make([]byte, 4<<20)
	_, err := c.Writev([][]byte{big, big})
	h.errs <- err
	return None
}

// One loop serving an IPv4 and an IPv6 socket answers bursts from many
// peers of both at once, each answer to its own sender: the receive
// batch the two sockets share holds each sender's whole address whichever
// socket filled it before, and a turn's answers go to many peers.
func TestUDPBothFamiliesBurstsOneLoop(t *testing.T) {
	if ln, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		ln.Close()
	}
	const peers, burst = 8, 32
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, _ := serveAddr(t, "udp4://127.0.0.1:0", &udpEcho{}, p, WithNumEventLoop(1), WithListener("udp6://[::1]:0"))
		var wg sync.WaitGroup
		var answered atomic.Int64
		for i := range 2 * peers {
			to := eng.Addrs()[i%2].(*net.UDPAddr)
			network := map[bool]string{true: "udp6", false: "udp4"}[to.IP.To4() == nil]
			c := udptest.Dial(t, network, to.String())
			require.NoError(t, c.SetReadBuffer(1<<20))
			wg.Go(func() {
				for j := range burst {
					c.Write(fmt.Appendf(nil, "%s peer %d datagram %d", network, i, j))
				}
				buf := make([]byte, 256)
				for range burst {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					n, err := c.Read(buf)
					if err != nil {
						t.Errorf("%s peer %d: %v after %d answers", network, i, answered.Load(), err)
						return
					}
					if want := fmt.Sprintf("%s peer %d datagram ", network, i); !strings.HasPrefix(string(buf[:n]), want) {
						t.Errorf("%s peer %d got %q", network, i, buf[:n])
						return
					}
					answered.Add(1)
				}
			})
		}
		wg.Wait()
		return outcome{Delivered: []int{int(answered.Load())}}
	})
}

// A peer's bursts, sent with one segmented send (UDP_SEGMENT) as a peer
// with segmentation offload sends them, which a socket that coalesces
// receives (UDP_GRO, epoll's) gets in one buffer, reach OnTraffic one
// datagram at a time on every backend, each answered on its own with its
// own bytes, the last, shorter one too.
func TestUDPCoalescedBurstsEchoSeparately(t *testing.T) {
	const bursts, each, size = 3, 40, 100
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serveAddr(t, "udp://127.0.0.1:0", &udpEcho{}, p, WithNumEventLoop(1))
		c := udpDial(t, addr)
		require.NoError(t, c.SetReadBuffer(1<<20))
		buf := make([]byte, 1<<16)
		for i := range bursts {
			var all []byte
			var want [][]byte
			for j := range each {
				d := fmt.Appendf(nil, "burst %d datagram %02d ", i, j)
				n := size
				if j == each-1 {
					n = size/2 + i // the last is shorter
				}
				d = append(d, bytes.Repeat([]byte{'a' + byte(j%26)}, n-len(d))...)
				all, want = append(all, d...), append(want, d)
			}
			require.NoError(t, udptest.WriteSegmented(c, nil, all, size))
			for j, w := range want {
				require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
				n, err := c.Read(buf)
				require.NoError(t, err, "burst %d: answer %d", i, j)
				require.Equal(t, string(w), string(buf[:n]), "burst %d: answer %d", i, j)
			}
		}
		st := eng.Stats()
		return outcome{Delivered: []int{int(st.BytesIn), int(st.BytesOut), int(st.DatagramsTruncated)}}
	})
}

// A segmented burst of datagrams each larger than the read buffer is
// reported datagram by datagram, on every backend: a socket whose
// buffers are too small to split what the kernel would coalesce does
// not ask it to, and the kernel hands each on its own.
func TestUDPSegmentedBurstTruncated(t *testing.T) {
	const cap, each, size = 1024, 5, 1500
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &udpEcho{truncated: make(chan []byte, each)}
		eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, p, WithNumEventLoop(1), WithReadBufferCap(cap))
		c := udpDial(t, addr)
		all := lettered(each, size)
		require.NoError(t, udptest.WriteSegmented(c, nil, all, size))
		for j := range each {
			select {
			case got := <-h.truncated:
				_, part, _ := bytes.Cut(got, []byte("|"))
				require.Equal(t, bytes.Repeat([]byte{'A' + byte(j)}, cap), part, "datagram %d: the part that fit", j)
			case <-time.After(10 * time.Second):
				t.Fatalf("datagram %d of the burst was not reported truncated", j)
			}
		}
		assert.Equal(t, []byte("small"), udptest.RoundTrip(t, c, []byte("small")))
		st := eng.Stats()
		return outcome{Delivered: []int{int(st.DatagramsTruncated)}}
	})
}

// A connected socket enrolled with UDP_GRO already on, as one handed
// over from a process that set it may come, still hands each datagram of
// a segmented burst on its own where the read buffers are too small to
// split what the kernel would coalesce, on every backend.
func TestUDPEnrolledCoalescingSocketSmallBuffers(t *testing.T) {
	const each, size = 5, 100
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, _ := serve(t, &udpEcho{}, p, WithNumEventLoop(1), WithReadBufferCap(1024))
		peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		t.Cleanup(func() { peer.Close() })
		nc := dialUDPWith(t, peer, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) })
		require.NoError(t, eng.Enroll(nc, nil))
		// The kernel decides at arrival: what came before the loop
		// watched the socket came coalesced.
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().Enrolled == 1 }, func() string { return "the socket never enrolled" })
		all := lettered(each, size)
		require.NoError(t, udptest.WriteSegmented(peer, nc.LocalAddr().(*net.UDPAddr), all, size))
		lettersBack(t, peer, each, size, "")
		return outcome{Delivered: []int{int(eng.Stats().DatagramsTruncated)}}
	})
}

// A connected socket enrolled with options of its user's that have the
// kernel write control messages of its own ahead of UDP_GRO's (receive
// timestamps, a mark) still hands each datagram of a segmented burst
// on its own where the loop coalesces receives, on every backend.
func TestUDPEnrolledTimestampingSocketCoalesced(t *testing.T) {
	const each, size = 10, 100
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, _ := serve(t, &udpEcho{}, p, WithNumEventLoop(1))
		peer := udpPeer(t)
		nc := dialUDPWith(t, peer, func(fd int) error {
			return errors.Join(unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
				unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVMARK, 1))
		})
		require.NoError(t, eng.Enroll(nc, nil))
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().Enrolled == 1 }, func() string { return "the socket never enrolled" })
		all := lettered(each, size)
		require.NoError(t, udptest.WriteSegmented(peer, nc.LocalAddr().(*net.UDPAddr), all, size))
		lettersBack(t, peer, each, size, "")
		st := eng.Stats()
		return outcome{Delivered: []int{int(st.BytesIn), int(st.DatagramsTruncated)}}
	})
}

// A handler that appends to the bytes Next gives, as an echo that adds a
// line ending does, changes no other datagram's: where the kernel
// coalesced a burst into one buffer, each datagram's bytes end where it
// does, as they do where each came alone, on every backend.
func TestUDPAppendToCoalescedDatagram(t *testing.T) {
	const each, size = 20, 50
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serveAddr(t, "udp://127.0.0.1:0", udpAppendEcho{}, p, WithNumEventLoop(1))
		c := udpDial(t, addr)
		all := lettered(each, size)
		require.NoError(t, udptest.WriteSegmented(c, nil, all, size))
		lettersBack(t, c, each, size, "\r\n")
		return outcome{Delivered: []int{int(eng.Stats().BytesIn)}}
	})
}

// udpAppendEcho answers each datagram with its bytes and a line ending
// appended to them.
type udpAppendEcho struct{ BuiltinEventEngine }

func (udpAppendEcho) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	c.Write(append(b, "\r\n"...))
	return None
}

// lettered returns n datagrams of size bytes back to back, as a segmented
// burst sends them, the jth all of the letter 'A'+j.
func lettered(n, size int) []byte {
	var all []byte
	for j := range n {
		all = append(all, bytes.Repeat([]byte{'A' + byte(j)}, size)...)
	}
	return all
}

// lettersBack reads n answers at c, each of which must be, in order,
// lettered's datagram followed by suffix.
func lettersBack(t *testing.T, c *net.UDPConn, n, size int, suffix string) {
	t.Helper()
	buf := make([]byte, 1<<16)
	for j := range n {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		got, err := c.Read(buf)
		require.NoError(t, err, "answer %d", j)
		require.Equal(t, string(bytes.Repeat([]byte{'A' + byte(j)}, size))+suffix, string(buf[:got]), "answer %d", j)
	}
}

// dialUDPWith connects a UDP socket to peer, with set applied to its
// descriptor first.
func dialUDPWith(t *testing.T, peer *net.UDPConn, set func(fd int) error) *net.UDPConn {
	nc, err := net.DialUDP("udp4", nil, peer.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	rc, err := nc.SyscallConn()
	require.NoError(t, err)
	var serr error
	require.NoError(t, rc.Control(func(fd uintptr) { serr = set(int(fd)) }))
	require.NoError(t, serr)
	return nc
}
