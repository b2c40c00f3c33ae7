//go:build linux

package sluice

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
)

// udpSessions keeps a count of datagrams per session in its context and
// answers each with "<peer's n>:<bytes>"; it records what OnOpen and
// OnClose saw. "close" answers and closes the session, "panic" panics,
// "later" answers from another goroutine with AsyncWrite.
type udpSessions struct {
	BuiltinEventEngine
	opens   atomic.Int64
	odd     atomic.Int64 // sessions opened with an Origin, ID or ListenerAddr amiss
	mu      sync.Mutex
	open    map[string]Conn // by RemoteAddr
	most    int             // the most sessions open at once
	closed  []string        // RemoteAddr|why, in order
	closing chan string
}

type peerCount struct{ n int }

func newUDPSessions() *udpSessions {
	return &udpSessions{open: map[string]Conn{}, closing: make(chan string, 1024)}
}

func (h *udpSessions) OnOpen(c Conn) ([]byte, Action) {
	h.opens.Add(1)
	if c.Origin() != Accepted || c.ID() != 0 || c.ListenerAddr() == nil {
		h.odd.Add(1)
	}
	c.SetContext(&peerCount{})
	h.mu.Lock()
	h.open[c.RemoteAddr().String()] = c
	h.most = max(h.most, len(h.open))
	h.mu.Unlock()
	return nil, None
}

func (h *udpSessions) OnTraffic(c Conn) Action {
	pc := c.Context().(*peerCount)
	pc.n++
	b, _ := c.Next(-1)
	answer := []byte(strconv.Itoa(pc.n) + ":" + string(b))
	switch string(b) {
	case "panic":
		panic("asked to")
	case "later":
		go c.AsyncWrite(answer, nil)
		return None
	}
	c.Write(answer)
	if string(b) == "close" {
		return Close
	}
	return None
}

func (h *udpSessions) OnClose(c Conn, err error) Action {
	why := errName(err)
	h.mu.Lock()
	delete(h.open, c.RemoteAddr().String())
	h.closed = append(h.closed, c.RemoteAddr().String()+"|"+why)
	h.mu.Unlock()
	h.closing <- c.RemoteAddr().String() + "|" + why
	return None
}

func (h *udpSessions) openNow() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.open)
}

// Each peer has a session of its own: OnOpen once, its own context, and
// answers to it alone; Write, and AsyncWrite from another goroutine,
// reach it.
func TestUDPSessionsKeepContextPerPeer(t *testing.T) {
	h := newUDPSessions()
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramSessions(time.Minute, 16))
	a, b := udpDial(t, addr), udpDial(t, addr)
	assert.Equal(t, "1:x", string(udptest.RoundTrip(t, a, []byte("x"))))
	assert.Equal(t, "2:x", string(udptest.RoundTrip(t, a, []byte("x"))))
	assert.Equal(t, "1:y", string(udptest.RoundTrip(t, b, []byte("y"))))
	assert.Equal(t, "3:later", string(udptest.RoundTrip(t, a, []byte("later"))))
	assert.Equal(t, "2:y", string(udptest.RoundTrip(t, b, []byte("y"))))
	assert.Equal(t, int64(2), h.opens.Load())
	h.mu.Lock()
	assert.Contains(t, h.open, a.LocalAddr().String())
	assert.Contains(t, h.open, b.LocalAddr().String())
	h.mu.Unlock()
	assert.Zero(t, h.odd.Load(), "a session's Origin is Accepted, its ID zero, its ListenerAddr the listener's")
}

// A sender that goes away leaves a session that closes, with
// ErrIdleTimeout, once it has been idle for the timeout; one that keeps
// sending keeps its session, and Conn.SetIdleTimeout changes the timeout
// for one session.
func TestUDPSessionOfAVanishedSenderCloses(t *testing.T) {
	h := &udpSessionIdle{udpSessions: newUDPSessions()}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramSessions(200*time.Millisecond, 16))
	gone := udpDial(t, addr)
	assert.Equal(t, "1:bye", string(udptest.RoundTrip(t, gone, []byte("bye"))))
	gone.Close()
	stays := udpDial(t, addr)
	start := time.Now()
	var why string
	for why == "" {
		assert.True(t, strings.HasSuffix(string(udptest.RoundTrip(t, stays, []byte("ping"))), ":ping"))
		select {
		case why = <-h.closing:
		case <-time.After(20 * time.Millisecond):
		}
	}
	assert.Equal(t, gone.LocalAddr().String()+"|"+ErrIdleTimeout.Error(), why)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "closed before its idle time")
	assert.Equal(t, 1, h.openNow(), "the one that kept sending")
	assert.Equal(t, uint64(1), eng.Stats().IdleTimeouts)

	// "forever" turns the idle timeout off for its session.
	assert.True(t, strings.HasSuffix(string(udptest.RoundTrip(t, stays, []byte("forever"))), ":forever"))
	assert.True(t, holdsFor(500*time.Millisecond, func() bool { return h.openNow() == 1 }), "closed with no idle timeout")
}

// udpSessionIdle turns a session's idle timeout off on "forever".
type udpSessionIdle struct{ *udpSessions }

func (h *udpSessionIdle) OnTraffic(c Conn) Action {
	if b, _ := c.Peek(-1); string(b) == "forever" {
		c.SetIdleTimeout(0)
	}
	return h.udpSessions.OnTraffic(c)
}

// However many peers send, a loop holds at most max sessions: the
// datagrams of peers past it are dropped and counted, told to
// OnDatagramError, and the peers with a session are still served. Once
// sessions close, new peers are served again.
func TestUDPSessionsAreBounded(t *testing.T) {
	h := &udpSessionsRefused{udpSessions: newUDPSessions()}
	const most = 4
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramSessions(time.Minute, most))
	first := make([]*net.UDPConn, most)
	for i := range first {
		first[i] = udpDial(t, addr)
		assert.Equal(t, "1:hi", string(udptest.RoundTrip(t, first[i], []byte("hi"))))
	}
	// In rounds of 20, which the socket's buffer holds however slowly
	// the loop reads.
	const flood = 200
	for sent := 20; sent <= flood; sent += 20 {
		for range 20 {
			c := udpDial(t, addr)
			_, err := c.Write([]byte("me too"))
			require.NoError(t, err)
			c.Close()
		}
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().SessionsRefused == uint64(sent) }, func() string {
			return fmt.Sprintf("%d of %d refused", eng.Stats().SessionsRefused, sent)
		})
	}
	assert.Equal(t, int64(flood), h.refused.Load(), "told to OnDatagramError")
	assert.Equal(t, int64(most), h.opens.Load())
	h.mu.Lock()
	assert.Equal(t, most, h.most)
	h.mu.Unlock()
	for _, c := range first {
		assert.Equal(t, "2:still", string(udptest.RoundTrip(t, c, []byte("still"))))
	}

	// A session the handler closes makes room.
	assert.Equal(t, "3:close", string(udptest.RoundTrip(t, first[0], []byte("close"))))
	assert.Equal(t, first[0].LocalAddr().String()+"|nil", <-h.closing)
	late := udpDial(t, addr)
	assert.Equal(t, "1:late", string(udptest.RoundTrip(t, late, []byte("late"))))
	assert.Equal(t, uint64(1), eng.Stats().ClosedByHandler)
}

// udpSessionsRefused counts what OnDatagramError heard of
// ErrTooManySessions, from the peer refused.
type udpSessionsRefused struct {
	*udpSessions
	refused atomic.Int64
}

func (h *udpSessionsRefused) OnDatagramError(c Conn, err error) Action {
	if b, _ := c.Peek(-1); err == ErrTooManySessions && string(b) == "me too" && c.RemoteAddr() != nil {
		h.refused.Add(1)
	}
	return None
}

// A panic in a session's callback closes that session alone; a stop of
// the engine closes the rest, with nil, counted as closed by the stop.
func TestUDPSessionsPanicAndStop(t *testing.T) {
	h := newUDPSessions()
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(2), WithReusePort(true), WithDatagramSessions(time.Minute, 16))
	a, b, c := udpDial(t, addr), udpDial(t, addr), udpDial(t, addr)
	for _, p := range []*net.UDPConn{a, b, c} {
		assert.Equal(t, "1:x", string(udptest.RoundTrip(t, p, []byte("x"))))
	}
	_, err := a.Write([]byte("panic"))
	require.NoError(t, err)
	assert.Equal(t, a.LocalAddr().String()+"|"+ErrHandlerPanic.Error(), <-h.closing)
	assert.Equal(t, "1:again", string(udptest.RoundTrip(t, a, []byte("again"))), "a new session")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, eng.Stop(ctx))
	assert.Zero(t, h.openNow())
	st := eng.Stats()
	assert.Equal(t, uint64(3), st.ClosedByStop)
	assert.Equal(t, uint64(1), st.HandlerPanics)
	assert.Equal(t, int64(4), h.opens.Load())
}

// With the PROXY protocol, a session is the client's the header names:
// clients behind one proxy have sessions of their own, and each answers
// through the proxy.
func TestUDPSessionsBehindAProxy(t *testing.T) {
	h := newUDPSessions()
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1),
		WithDatagramSessions(time.Minute, 16), WithProxyProtocol(ProxyRequired, 0))
	proxy := udpDial(t, addr)
	dst := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	one := dgramHeader(1, 0x12, netip.MustParseAddrPort("192.0.2.1:1111"), dst)
	two := dgramHeader(1, 0x12, netip.MustParseAddrPort("192.0.2.2:2222"), dst)
	assert.Equal(t, "1:a", string(udptest.RoundTrip(t, proxy, append(one, "a"...))))
	assert.Equal(t, "2:a", string(udptest.RoundTrip(t, proxy, append(one, "a"...))))
	assert.Equal(t, "1:b", string(udptest.RoundTrip(t, proxy, append(two, "b"...))))
	h.mu.Lock()
	_, ok := h.open["192.0.2.2:2222"]
	h.mu.Unlock()
	assert.True(t, ok, "the session goes by the client's address")
	assert.Equal(t, int64(2), h.opens.Load())
}

// Without WithDatagramSessions nothing changes: no OnOpen, the socket's
// own Conn for every datagram.
func TestUDPNoSessionsByDefault(t *testing.T) {
	h := &udpEcho{}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	assert.Equal(t, "x", string(udptest.RoundTrip(t, udpDial(t, addr), []byte("x"))))
	assert.Zero(t, h.opens.Load())
}

// OnOpen's Close action refuses the peer: its datagram goes nowhere, and
// OnClose runs for the session. What the server sends a peer does not
// keep its session open: only the peer's own datagrams do.
func TestUDPSessionRefusedAndPushedTo(t *testing.T) {
	h := &udpSessionGate{udpSessions: newUDPSessions(), refuse: make(map[string]bool)}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramSessions(300*time.Millisecond, 16))
	refused := udpDial(t, addr)
	h.mu.Lock()
	h.refuse[refused.LocalAddr().String()] = true
	h.mu.Unlock()
	_, err := refused.Write([]byte("let me in"))
	require.NoError(t, err)
	assert.Equal(t, refused.LocalAddr().String()+"|nil", <-h.closing)
	assert.Zero(t, h.traffic.Load(), "the refused peer's datagram reached OnTraffic")

	pushed := udpDial(t, addr)
	assert.Equal(t, "1:push", string(udptest.RoundTrip(t, pushed, []byte("push"))))
	// The server keeps sending to it, every 20 ms, until the session
	// closes, which it does once the peer has been quiet for its time.
	buf := make([]byte, 64)
	pushed.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := pushed.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "pushed", string(buf[:n]))
	assert.Equal(t, pushed.LocalAddr().String()+"|"+ErrIdleTimeout.Error(), <-h.closing)
}

// udpSessionGate closes, in OnOpen, the sessions of the peers in refuse,
// and pushes to a peer that says "push" from another goroutine until its
// session closes.
type udpSessionGate struct {
	*udpSessions
	refuse  map[string]bool
	traffic atomic.Int64
}

func (h *udpSessionGate) OnOpen(c Conn) ([]byte, Action) {
	h.udpSessions.OnOpen(c)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse[c.RemoteAddr().String()] {
		return nil, Close
	}
	return nil, None
}

func (h *udpSessionGate) OnTraffic(c Conn) Action {
	h.traffic.Add(1)
	if b, _ := c.Peek(-1); string(b) == "push" {
		go func() {
			for c.AsyncWrite([]byte("pushed"), nil) == nil {
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	return h.udpSessions.OnTraffic(c)
}

func TestDatagramSessionsDefaults(t *testing.T) {
	o := defaultOptions()
	WithDatagramSessions(0, -1)(&o)
	assert.Equal(t, DefaultSessionIdleTimeout, o.sessionIdle)
	assert.Equal(t, DefaultMaxSessions, o.sessionMax)
	WithDatagramSessions(time.Second, 7)(&o)
	assert.Equal(t, time.Second, o.sessionIdle)
	assert.Equal(t, 7, o.sessionMax)
}

// A session's Conn has the listener socket's descriptor and counts in no
// count of connections; closing the listener's socket (StopAccepting)
// closes its sessions, each once, with nil, counted as by a stop; what
// another goroutine posts to a closed session fails with ErrConnClosed.
func TestUDPSessionsCloseWithTheirSocket(t *testing.T) {
	h := newUDPSessions()
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramSessions(time.Minute, 16))
	peers := []*net.UDPConn{udpDial(t, addr), udpDial(t, addr), udpDial(t, addr)}
	for _, p := range peers {
		assert.Equal(t, "1:x", string(udptest.RoundTrip(t, p, []byte("x"))))
	}
	fd := -1
	for _, u := range eng.e.loops[0].packets.socks {
		if u != nil {
			fd = u.fd // the listener's, read before anything closes it
		}
	}
	h.mu.Lock()
	sessions := make([]Conn, 0, len(h.open))
	for _, c := range h.open {
		sessions = append(sessions, c)
	}
	h.mu.Unlock()
	require.Len(t, sessions, 3)
	for _, c := range sessions {
		assert.Equal(t, fd, c.Fd(), "a session's descriptor is its socket's")
	}
	assert.Zero(t, eng.CountConnections())
	assert.Zero(t, eng.Stats().Conns)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, eng.StopAccepting(ctx))
	waitFor(t, 5*time.Second, func() bool { return h.openNow() == 0 }, func() string {
		return fmt.Sprintf("%d sessions open", h.openNow())
	})
	assert.True(t, holdsFor(100*time.Millisecond, func() bool { return len(h.closing) == 3 }), "OnClose once each")
	h.mu.Lock()
	for _, why := range h.closed {
		assert.True(t, strings.HasSuffix(why, "|nil"), why)
	}
	h.mu.Unlock()
	assert.Equal(t, uint64(3), eng.Stats().ClosedByStop)
	done := make(chan error, 1)
	require.NoError(t, sessions[0].AsyncWrite([]byte("late"), func(_ Conn, err error) { done <- err }))
	assert.ErrorIs(t, <-done, ErrConnClosed)
}

// A session OnOpen refuses keeps no view of the datagram it came with:
// once its callbacks have returned, ProxyHeader says none, as an open
// session's does between datagrams, rather than TLVs over a buffer the
// loop reuses for other datagrams.
func TestUDPRefusedSessionLetsGoOfItsHeader(t *testing.T) {
	h := &udpSessionRefuseAll{closed: make(chan Conn, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1),
		WithDatagramSessions(time.Minute, 16), WithProxyProtocol(ProxyRequired, 0))
	proxy := udpDial(t, addr)
	dst := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	_, err := proxy.Write(append(dgramHeader(1, 0x12, netip.MustParseAddrPort("192.0.2.1:1111"), dst), "x"...))
	require.NoError(t, err)
	c := <-h.closed
	has := make(chan bool, 1)
	require.NoError(t, c.Loop().Execute(func() { _, ok := c.ProxyHeader(); has <- ok }))
	assert.False(t, <-has)
}

// udpSessionRefuseAll refuses every session in OnOpen, and hands its
// Conn over once it has closed.
type udpSessionRefuseAll struct {
	BuiltinEventEngine
	closed chan Conn
}

func (h *udpSessionRefuseAll) OnOpen(c Conn) ([]byte, Action) { return nil, Close }

func (h *udpSessionRefuseAll) OnClose(c Conn, err error) Action {
	h.closed <- c
	return None
}

// Behind a proxy, a datagram refused for want of room for its client's
// session is told to OnDatagramError as the other paths tell theirs: its
// RemoteAddr is the client the header named, ProxyHeader is that header
// (during the callback only), and Peek gives what follows it.
func TestUDPRefusedSessionToldWithItsHeader(t *testing.T) {
	h := &udpRefusedReport{udpSessions: newUDPSessions(), told: make(chan string, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1),
		WithDatagramSessions(time.Minute, 1), WithProxyProtocol(ProxyRequired, 0))
	proxy := udpDial(t, addr)
	dst := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	one := dgramHeader(1, 0x12, netip.MustParseAddrPort("192.0.2.1:1111"), dst)
	two := dgramHeader(1, 0x12, netip.MustParseAddrPort("192.0.2.2:2222"), dst)
	assert.Equal(t, "1:a", string(udptest.RoundTrip(t, proxy, append(one, "a"...))))
	_, err := proxy.Write(append(two, "b"...))
	require.NoError(t, err)
	select {
	case got := <-h.told:
		assert.Equal(t, ErrTooManySessions.Error()+" from 192.0.2.2:2222, header from 192.0.2.2:2222: b", got)
	case <-time.After(10 * time.Second):
		t.Fatal("OnDatagramError did not run")
	}
	has := make(chan bool, 1)
	require.NoError(t, h.sock.Loop().Execute(func() { _, ok := h.sock.ProxyHeader(); has <- ok }))
	assert.False(t, <-has, "the socket's Conn keeps the refused datagram's header")
	assert.Equal(t, uint64(1), eng.Stats().SessionsRefused)
}

// udpRefusedReport tells what OnDatagramError saw of a refused session.
type udpRefusedReport struct {
	*udpSessions
	told chan string
	sock Conn
}

func (h *udpRefusedReport) OnDatagramError(c Conn, err error) Action {
	h.sock = c
	from := "none"
	if hdr, ok := c.ProxyHeader(); ok {
		from = hdr.Source.String()
	}
	b, _ := c.Peek(-1)
	h.told <- fmt.Sprintf("%v from %v, header from %s: %s", err, c.RemoteAddr(), from, b)
	return None
}
