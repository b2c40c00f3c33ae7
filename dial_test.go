//go:build linux

package sluice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The tests in this file hold the engine's outbound side to its word:
// Dial, Enroll, Loop.Execute and an engine that listens on nothing. Every
// peer is a real socket on loopback, and every scenario that both pollers
// can run goes through onEachPoller, so epoll and io_uring must agree on
// what the handler saw and what the engine counted.

// trip is one dial or enrollment followed through to its end, and the
// context it was given, so that it reaches the handler's callbacks: the
// handler writes msg when the connection opens, collects what comes back,
// and closes once it has as many bytes as it sent. The loop alone writes
// its fields until ended is closed; the test reads them after.
type trip struct {
	msg     []byte
	started time.Time

	opened  bool
	ctxSeen bool // c.Context() in OnOpen was this trip
	loop    int  // the loop OnOpen ran on
	origin  Origin
	remote  string
	local   string
	got     []byte
	addr    string    // what OnDialFailed was told was dialed
	err     error     // OnDialFailed's error, or OnClose's
	endedAt time.Time // when OnDialFailed or OnClose ran
	ended   chan struct{}
}

func newTrip(msg []byte) *trip {
	return &trip{msg: msg, started: time.Now(), ended: make(chan struct{})}
}

// wait waits for tr to end, by a close or a failed dial.
func (tr *trip) wait(t testing.TB) *trip {
	t.Helper()
	select {
	case <-tr.ended:
	case <-time.After(15 * time.Second):
		t.Fatal("the dial never ended: no OnDialFailed, no OnClose")
	}
	return tr
}

// result names how tr ended, by the sentinel errors.Is finds in the
// error, so that outcomes compare what a handler can test for.
func (tr *trip) result() string {
	name := dialErrName(tr.err)
	if tr.opened {
		return fmt.Sprintf("opened, echoed %d, closed: %s", len(tr.got), name)
	}
	return "failed: " + name
}

func dialErrName(err error) string {
	for _, s := range []error{nil, syscall.ECONNREFUSED, ErrDialTimeout, ErrEngineStopped, ErrKilled,
		ErrTooManyConns, syscall.ECONNRESET} {
		if errors.Is(err, s) {
			if s == nil {
				return "nil"
			}
			return s.Error()
		}
	}
	return err.Error()
}

// tripper is the dialing engine's handler: it runs each connection as its
// trip says, and counts what it heard.
type tripper struct {
	BuiltinEventEngine
	// onOpen, if set, runs in OnOpen once the trip has been recorded and
	// before its message is written.
	onOpen func(c Conn, tr *trip)
	// onClose, if set, runs at the end of OnClose.
	onClose func(c Conn, err error)

	opens, fails atomic.Int64
}

func (h *tripper) OnOpen(c Conn) ([]byte, Action) {
	h.opens.Add(1)
	tr, ok := c.Context().(*trip)
	if !ok {
		return nil, None
	}
	tr.opened, tr.ctxSeen = true, c.Context() == any(tr)
	tr.loop, tr.origin = c.Loop().Index(), c.Origin()
	tr.remote, tr.local = c.RemoteAddr().String(), c.LocalAddr().String()
	if h.onOpen != nil {
		h.onOpen(c, tr)
	}
	c.Write(tr.msg)
	return nil, None
}

func (h *tripper) OnTraffic(c Conn) Action {
	tr, ok := c.Context().(*trip)
	if !ok {
		c.Discard(-1)
		return None
	}
	b, _ := c.Next(-1)
	tr.got = append(tr.got, b...)
	if len(tr.msg) > 0 && len(tr.got) >= len(tr.msg) {
		return Close
	}
	return None
}

func (h *tripper) OnClose(c Conn, err error) Action {
	if tr, ok := c.Context().(*trip); ok {
		tr.err, tr.endedAt = err, time.Now()
		close(tr.ended)
	}
	if h.onClose != nil {
		h.onClose(c, err)
	}
	return None
}

func (h *tripper) OnDialFailed(addr string, ctx any, err error) {
	h.fails.Add(1)
	if tr, ok := ctx.(*trip); ok {
		tr.addr, tr.err, tr.endedAt = addr, err, time.Now()
		close(tr.ended)
	}
}

// runEngine starts an engine with h on addr, which may be empty for an
// engine that listens on nothing, and returns it, and a function that
// waits for Run to return and returns its error. As serve does, it stops
// the engine on cleanup and checks that it leaked no goroutine and no
// descriptor; unlike serve it needs no listener.
func runEngine(t testing.TB, addr string, h EventHandler, opts ...Option) (Engine, func() error) {
	t.Helper()
	opts = append([]Option{WithPoller(testPoller)}, opts...)
	leaks := leakCheck(t)
	b := &booter{EventHandler: h, booted: make(chan Engine, 1)}
	ran := make(chan struct{})
	var runErr error
	go func() {
		runErr = Run(b, addr, opts...)
		close(ran)
	}()
	var eng Engine
	select {
	case eng = <-b.booted:
	case <-ran:
		t.Fatalf("Run: %v", runErr)
	}
	wait := func() error {
		select {
		case <-ran:
			return runErr
		case <-time.After(10 * time.Second):
			return errors.New("Run did not return")
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, eng.Stop(ctx))
		require.NoError(t, wait())
		require.Zero(t, eng.Stats().InboundHeld, "inbound bytes held once every connection closed")
		leaks()
	})
	return eng, wait
}

// runClient starts an engine that listens on nothing, as a client does.
func runClient(t testing.TB, h EventHandler, opts ...Option) Engine {
	eng, _ := runEngine(t, "", h, opts...)
	return eng
}

// settle returns once every loop of eng has run what was posted to it
// before: a loop runs its tasks in order, so a dial that was wrongly
// posted would have been heard of by then.
func settle(t testing.TB, eng Engine) {
	t.Helper()
	for i := range eng.NumLoops() {
		done := make(chan struct{})
		require.NoError(t, eng.Loop(i).Execute(func() { close(done) }))
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("loop %d did not run its tasks", i)
		}
	}
}

// fullBacklog returns the address of a loopback listener that never
// accepts and whose accept queue is full. The kernel drops every further
// SYN it gets, so a connect to it neither succeeds nor fails: it waits,
// resending its SYN, until the dialer gives up. This is what a dial to a
// host that does not answer looks like, without sending anything off the
// machine.
func fullBacklog(t testing.TB) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	// A backlog of 0 lets exactly one connection wait in the queue.
	require.NoError(t, unix.Listen(fd, 0))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
	// For a listening socket TCP_INFO reports the accept queue's length
	// as Unacked and its bound as Sacked: the queue is full once the first
	// exceeds the second. Filling it by that count, rather than by
	// waiting for a dial to time out, holds on a loaded machine too.
	queued := func() (n, max uint32) {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		require.NoError(t, err)
		return info.Unacked, info.Sacked
	}
	for n, max := queued(); n <= max; n, max = queued() {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err, "filling the accept queue")
		t.Cleanup(func() { c.Close() })
		// The kernel queues the connection when the handshake's last
		// ACK arrives, a moment after the dial returns.
		waitFor(t, 5*time.Second, func() bool { m, _ := queued(); return m > n },
			func() string { return "a connection that completed its handshake was never queued" })
	}
	// One more connect must now go unanswered.
	c, err := net.DialTimeout("tcp", addr, 50*time.Millisecond)
	if err == nil {
		c.Close()
		t.Fatal("a listener whose accept queue is full accepted a handshake; this test needs it dropped")
	}
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "the extra connect failed, but not by timing out: %v", err)
	return "tcp://" + addr
}

// closedPort returns a loopback address nothing listens on. Its port lies
// below the kernel's range of ephemeral ports, so the dial's own socket
// cannot be given it: a connect from a port to itself succeeds (TCP's
// simultaneous open), where the test wants a refusal.
func closedPort(t testing.TB) string {
	low := 32768 // the kernel's default, if its setting cannot be read
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for port := low - 1; port > low-1000 && port > 1024; port-- {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return "tcp://" + addr
		}
	}
	t.Skip("no free port below the ephemeral range")
	return ""
}

// echoListener serves an echo on a plain net.Listener, for the engine to
// dial, and returns its address with a scheme.
func echoListener(t testing.TB, network, address string) string {
	t.Helper()
	ln, err := net.Listen(network, address)
	require.NoError(t, err)
	serveEach(t, ln, func(c net.Conn) {
		// A plain copy: io.Copy between two TCP sockets splices through
		// pipes the runtime pools and closes only when the garbage
		// collector gets to them, which the leak check would count.
		// Closing at the end of the stream ends the engine's lingering
		// close, which waits for this side's FIN.
		io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 32<<10))
		c.Close()
	})
	return network + "://" + ln.Addr().String()
}

// serveEach accepts from ln until the test ends and runs serve on each
// connection in a goroutine of its own. Cleanup closes the listener and
// every connection it accepted, and waits for the goroutines, so the leak
// check finds nothing left. A connection the kernel accepted before the
// listener closed may come out of Accept only after cleanup closed the
// others (a starved accepting goroutine, under load): it is closed then,
// not served, or it would stay open, its peer gone, until the garbage
// collector got to it.
func serveEach(t testing.TB, ln net.Listener, serve func(net.Conn)) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				continue
			}
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// hostPort strips the scheme off an address as serve returns it.
func hostPort(addr string) string {
	_, hp, _ := strings.Cut(addr, "://")
	return hp
}

// tripMessage returns n bytes that differ with seed, so that one trip's
// bytes are not mistaken for another's.
func tripMessage(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i+seed)%26)
	}
	return b
}

// TestDialOutcomes dials each kind of target once on each poller: one
// that answers, one that refuses, one that never answers, a unix socket
// and a name to resolve. A dial that connects opens with the context it
// was given and carries bytes both ways; one that fails never opens, and
// the handler hears why in a form errors.Is can test.
func TestDialOutcomes(t *testing.T) {
	const dialTimeout = 300 * time.Millisecond
	tests := []struct {
		name string
		// target starts what the dial goes to and returns the address to
		// dial and the remote address the connection must report, empty
		// where there is none to check.
		target func(t *testing.T, p Option) (addr, remote string)
		opts   []DialOption
		// want is the error the dial fails with; nil: it opens and echoes.
		want error
	}{
		{
			name: "listening port",
			target: func(t *testing.T, p Option) (string, string) {
				_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1))
				return addr, hostPort(addr)
			},
		},
		{
			name: "closed port",
			target: func(t *testing.T, _ Option) (string, string) {
				return closedPort(t), ""
			},
			want: syscall.ECONNREFUSED,
		},
		{
			name: "full backlog",
			target: func(t *testing.T, _ Option) (string, string) {
				return fullBacklog(t), ""
			},
			opts: []DialOption{DialTimeout(dialTimeout)},
			want: ErrDialTimeout,
		},
		{
			name: "unix socket",
			target: func(t *testing.T, p Option) (string, string) {
				_, addr := serveAddr(t, "unix://"+t.TempDir()+"/s.sock", echoHandler{}, p, WithNumEventLoop(1))
				return addr, ""
			},
		},
		{
			name: "host name",
			target: func(t *testing.T, p Option) (string, string) {
				// Serve where the name resolves first, which is where
				// the engine connects: the test is of resolving, not of
				// falling back to a second address.
				ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost")
				require.NoError(t, err)
				ip := ips[0].Unmap()
				_, addr := serveAddr(t, "tcp://"+netip.AddrPortFrom(ip, 0).String(), echoHandler{}, p, WithNumEventLoop(1))
				_, port, err := net.SplitHostPort(hostPort(addr))
				require.NoError(t, err)
				return "localhost:" + port, netip.AddrPortFrom(ip, mustPort(t, port)).String()
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				addr, remote := tt.target(t, p)
				h := &tripper{}
				eng := runClient(t, h, p, WithNumEventLoop(1))
				tr := newTrip(tripMessage(64, 0))
				require.NoError(t, eng.Dial(addr, tr, tt.opts...))
				tr.wait(t)

				if tt.want == nil {
					require.True(t, tr.opened, "no OnOpen; the dial failed with %v", tr.err)
					assert.True(t, tr.ctxSeen, "OnOpen's c.Context() is not Dial's ctx")
					assert.Equal(t, Dialed, tr.origin)
					assert.Equal(t, tr.msg, tr.got, "the echo differs")
					assert.NoError(t, tr.err, "OnClose's error")
					if remote != "" {
						assert.Equal(t, remote, tr.remote, "RemoteAddr")
					}
				} else {
					require.False(t, tr.opened, "OnOpen ran for a dial that must fail")
					require.ErrorIs(t, tr.err, tt.want)
					var op *net.OpError
					require.ErrorAs(t, tr.err, &op, "OnDialFailed's error is not a *net.OpError")
					assert.Equal(t, "dial", op.Op)
					assert.Equal(t, hostPort(addr), op.Addr.String(), "the OpError's address")
					assert.Equal(t, addr, tr.addr, "OnDialFailed's address")
					assert.Zero(t, h.opens.Load(), "opens")
				}
				if errors.Is(tt.want, ErrDialTimeout) {
					assert.ErrorIs(t, tr.err, os.ErrDeadlineExceeded)
					took := tr.endedAt.Sub(tr.started)
					assert.GreaterOrEqual(t, took, dialTimeout, "gave up early")
					assert.LessOrEqual(t, took, dialTimeout+lateness, "gave up late")
				}
				st := closedStats(t, eng)
				if tt.want == nil {
					assert.Equal(t, [2]uint64{1, 0}, [2]uint64{st.Dialed, st.DialFailed}, "Stats.Dialed, DialFailed")
				} else {
					assert.Equal(t, [2]uint64{0, 1}, [2]uint64{st.Dialed, st.DialFailed}, "Stats.Dialed, DialFailed")
				}
				return outcome{Closed: []string{tr.result()}, Stats: st}
			})
		})
	}

	// An address the engine cannot parse is refused by Dial itself, and
	// nothing more is heard of it.
	t.Run("unparsable", func(t *testing.T) {
		h := &tripper{}
		eng := runClient(t, h, WithNumEventLoop(2))
		for _, addr := range []string{
			"tcp://127.0.0.1",       // no port
			"127.0.0.1:http",        // a port by name
			"tcp://127.0.0.1:65536", // past the last port
			"sctp://127.0.0.1:7",    // a scheme it does not know
			"udp4://[::1]:7",        // an IPv6 address for udp4
			"unix://",               // no path
			"tcp4://[::1]:7",        // an IPv6 address for tcp4
			"tcp6://127.0.0.1:7",    // and the converse
		} {
			err := eng.Dial(addr, newTrip(nil))
			assert.ErrorIs(t, err, ErrInvalidAddr, "Dial(%q)", addr)
		}
		settle(t, eng)
		assert.Zero(t, h.fails.Load()+h.opens.Load(), "the handler heard of a dial Dial refused")
		assert.Equal(t, Stats{LoopConns: make([]int, eng.NumLoops())}, eng.Stats())
	})
}

func mustPort(t testing.TB, port string) uint16 {
	p, err := strconv.ParseUint(port, 10, 16)
	require.NoError(t, err)
	return uint16(p)
}

// TestDialThousandFromOneCallback issues many dials from one callback on
// one loop, as a proxy or a load generator does, and follows each through
// a round trip: each must open on the loop that dialed it and carry its
// own bytes, and no descriptor may be left behind.
func TestDialThousandFromOneCallback(t *testing.T) {
	const n = 1000
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		srv, addr := serve(t, echoHandler{}, p, WithNumEventLoop(2))
		h := &tripper{}
		eng := runClient(t, h, p, WithNumEventLoop(2))
		const loop = 1 // not the first, which a fallback would pick
		trips := make([]*trip, n)
		for i := range trips {
			trips[i] = newTrip(fmt.Appendf(nil, "trip %06d", i))
		}
		var refused atomic.Int64
		require.NoError(t, eng.Loop(loop).Execute(func() {
			for _, tr := range trips {
				if eng.Dial(addr, tr) != nil {
					refused.Add(1)
				}
			}
		}))
		var elsewhere, wrong []int
		for i, tr := range trips {
			tr.wait(t)
			require.True(t, tr.opened, "dial %d failed: %v", i, tr.err)
			if tr.loop != loop {
				elsewhere = append(elsewhere, i)
			}
			if !bytes.Equal(tr.msg, tr.got) || tr.err != nil {
				wrong = append(wrong, i)
			}
		}
		assert.Zero(t, refused.Load(), "Dial calls that returned an error")
		assert.Empty(t, elsewhere, "dials that opened on another loop than the caller's")
		assert.Empty(t, wrong, "round trips that went wrong")
		st := closedStats(t, eng)
		assert.EqualValues(t, n, st.Dialed)
		assert.Zero(t, st.DialFailed)
		assert.EqualValues(t, n, closedStats(t, srv).Accepted)
		return outcome{Delivered: []int{len(trips)}, Stats: st}
	})
}

// loopProbe is a dial's context that records which loop the connection
// opened on and then, if then is set, runs it in OnOpen.
type loopProbe struct {
	then func(c Conn)
	loop chan int
}

type loopRecorder struct{ BuiltinEventEngine }

func (loopRecorder) OnOpen(c Conn) ([]byte, Action) {
	if p, ok := c.Context().(*loopProbe); ok {
		p.loop <- c.Loop().Index()
		if p.then != nil {
			p.then(c)
		}
	}
	return nil, None
}

func newLoopProbe(then func(c Conn)) *loopProbe {
	return &loopProbe{then: then, loop: make(chan int, 1)}
}

func (p *loopProbe) opened(t testing.TB) int {
	t.Helper()
	select {
	case i := <-p.loop:
		return i
	case <-time.After(10 * time.Second):
		t.Fatal("the dial never opened")
		return -1
	}
}

// TestDialLoopChoice checks which loop a dial lands on: Loop(i).Dial on
// loop i; Engine.Dial from inside a callback, on that callback's loop, so
// that a proxy's two sides share a thread; and from elsewhere, on the
// loop with the fewest connections.
func TestDialLoopChoice(t *testing.T) {
	const loops = 3
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, BuiltinEventEngine{}, p, WithNumEventLoop(1))
		eng := runClient(t, loopRecorder{}, p, WithNumEventLoop(loops))
		var landed []int
		for k := range loops {
			// Each dial stays open, so the loads below count them.
			fromCallback := newLoopProbe(nil)
			toNext := newLoopProbe(nil)
			fromExecute := newLoopProbe(nil)
			parent := newLoopProbe(func(c Conn) {
				assert.NoError(t, eng.Dial(addr, fromCallback))
				assert.NoError(t, eng.Loop((k+1)%loops).Dial(addr, toNext))
			})
			require.NoError(t, eng.Loop(k).Dial(addr, parent))
			got := []int{parent.opened(t), fromCallback.opened(t), toNext.opened(t)}
			require.NoError(t, eng.Loop(k).Execute(func() {
				assert.NoError(t, eng.Dial(addr, fromExecute))
			}))
			got = append(got, fromExecute.opened(t))
			assert.Equal(t, []int{k, k, (k + 1) % loops, k}, got,
				"from loop %d: Loop(%[1]d).Dial, Engine.Dial and Loop(%d).Dial inside its callback, Engine.Dial inside its Execute",
				k, (k+1)%loops)
			landed = append(landed, got...)
		}
		// Every loop now holds four connections; one more on loop 0 and
		// loop 2 leaves loop 1 the emptiest.
		for _, k := range []int{0, 2} {
			pr := newLoopProbe(nil)
			require.NoError(t, eng.Loop(k).Dial(addr, pr))
			require.Equal(t, k, pr.opened(t))
		}
		outside := newLoopProbe(nil)
		require.NoError(t, eng.Dial(addr, outside))
		got := outside.opened(t)
		assert.Equal(t, 1, got, "Engine.Dial outside any callback did not pick the emptiest loop")
		landed = append(landed, got)
		st := eng.Stats()
		assert.EqualValues(t, 4*loops+3, st.Dialed)
		return outcome{Delivered: landed, Stats: comparable(st)}
	})
}

// TestEnroll hands the engine connections made elsewhere, one dialed and
// ones accepted by a net.Listener, and talks through each; the net.Conn
// handed over is closed, so nothing else can read what is now the
// engine's.
func TestEnroll(t *testing.T) {
	tests := []struct {
		name string
		// conn returns the connection to enroll, and the peer the test
		// plays, or nil when an echo server is the peer.
		conn func(t *testing.T, p Option) (nc, peer net.Conn)
	}{
		{"dialed", func(t *testing.T, p Option) (net.Conn, net.Conn) {
			_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1))
			return dial(t, addr), nil
		}},
		{"accepted tcp", func(t *testing.T, _ Option) (net.Conn, net.Conn) {
			return acceptedPair(t, "tcp", "127.0.0.1:0")
		}},
		{"accepted unix", func(t *testing.T, _ Option) (net.Conn, net.Conn) {
			return acceptedPair(t, "unix", t.TempDir()+"/s.sock")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := &tripper{}
				eng := runClient(t, h, p, WithNumEventLoop(2))
				nc, peer := tt.conn(t, p)
				remote := nc.RemoteAddr().String()
				tr := newTrip(tripMessage(64, 7))
				require.NoError(t, eng.Enroll(nc, tr))

				if !stdBackend { // which takes nc itself, not a copy
					// The original is closed: reading it fails at once
					// rather than taking the engine's bytes.
					nc.SetReadDeadline(time.Now().Add(5 * time.Second))
					_, err := nc.Read(make([]byte, 1))
					require.ErrorIs(t, err, net.ErrClosed, "the enrolled net.Conn still reads")
				}

				if peer != nil {
					// The test is the peer: echo the message back, then
					// see the engine's close as the end of the stream.
					peer.SetDeadline(time.Now().Add(10 * time.Second))
					got := make([]byte, len(tr.msg))
					_, err := io.ReadFull(peer, got)
					require.NoError(t, err)
					_, err = peer.Write(got)
					require.NoError(t, err)
					_, err = peer.Read(make([]byte, 1))
					require.ErrorIs(t, err, io.EOF, "the peer did not see the engine's close")
					peer.Close()
				}
				tr.wait(t)
				require.True(t, tr.opened, "no OnOpen; the enrollment failed with %v", tr.err)
				assert.True(t, tr.ctxSeen, "OnOpen's c.Context() is not Enroll's ctx")
				assert.Equal(t, Enrolled, tr.origin)
				assert.Equal(t, tr.msg, tr.got)
				assert.NoError(t, tr.err, "OnClose's error")
				if nc.LocalAddr().Network() == "tcp" {
					assert.Equal(t, remote, tr.remote, "RemoteAddr")
				}
				st := closedStats(t, eng)
				assert.EqualValues(t, 1, st.Enrolled)
				assert.Zero(t, st.Dialed)
				return outcome{Closed: []string{tr.result()}, Stats: st}
			})
		})
	}
}

// acceptedPair returns a connection a net.Listener accepted, to enroll,
// and its peer, made by net.Dial.
func acceptedPair(t testing.TB, network, address string) (accepted, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, address)
	require.NoError(t, err)
	defer ln.Close()
	peer, err = net.DialTimeout(network, ln.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	accepted, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { accepted.Close() })
	return accepted, peer
}

// TestEnrollUnsupported: only stream sockets can be enrolled; anything
// else is refused at once with an error that wraps errors.ErrUnsupported,
// and the handler hears nothing of it.
func TestEnrollUnsupported(t *testing.T) {
	h := &tripper{}
	eng := runClient(t, h, WithNumEventLoop(1))
	udp := udpPeer(t)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for _, nc := range []net.Conn{udp, a} {
		err := eng.Enroll(nc, newTrip(nil))
		assert.ErrorIs(t, err, errors.ErrUnsupported, "Enroll(%T)", nc)
	}
	// Refused, the socket is still the caller's, and open.
	_, err := udp.WriteTo([]byte("ping"), udp.LocalAddr())
	require.NoError(t, err)
	udp.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := udp.ReadFrom(make([]byte, 8))
	require.NoError(t, err, "the refused UDP socket was closed")
	assert.Equal(t, 4, n)
	settle(t, eng)
	assert.Zero(t, h.fails.Load()+h.opens.Load())
	assert.Equal(t, Stats{LoopConns: make([]int, eng.NumLoops())}, eng.Stats())
}

// TestLoopExecute runs functions on the loops that own connections: each
// must run exactly once, on its loop's thread, where it may write to the
// loop's connections; and once the engine has stopped, Execute refuses
// and runs nothing.
func TestLoopExecute(t *testing.T) {
	const perConn = 50
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		var tidMu sync.Mutex
		tids := map[uint64]int{} // each connection's loop's thread; the loops are locked to theirs
		h.onOpen = func(c Conn) {
			tidMu.Lock()
			tids[c.ID()] = unix.Gettid()
			tidMu.Unlock()
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(2))
		var delivered []int
		loopsSeen := map[int]bool{}
		for i := range 4 {
			peer := dial(t, addr)
			id := h.next(t)
			c := h.conn(id)
			tidMu.Lock()
			tid := tids[id]
			tidMu.Unlock()
			loopsSeen[c.Loop().Index()] = true

			var runs [perConn]atomic.Int32
			var offThread atomic.Int32
			count := 0 // only the loop touches it
			counted := make(chan int, 1)
			for j := range perConn {
				require.NoError(t, c.Loop().Execute(func() {
					runs[j].Add(1)
					count++
					if unix.Gettid() != tid {
						offThread.Add(1)
					}
					if j == perConn-1 {
						c.Write(fmt.Appendf(nil, "from execute %d", i))
						counted <- count
					}
				}))
			}
			want := fmt.Sprintf("from execute %d", i)
			peer.SetReadDeadline(time.Now().Add(10 * time.Second))
			got := make([]byte, len(want))
			_, err := io.ReadFull(peer, got)
			require.NoError(t, err, "the peer did not receive what the function wrote")
			assert.Equal(t, want, string(got))
			delivered = append(delivered, len(got))
			assert.Equal(t, perConn, <-counted, "functions run by the last one's turn")
			settle(t, eng)
			for j := range runs {
				assert.EqualValues(t, 1, runs[j].Load(), "function %d ran %d times", j, runs[j].Load())
			}
			assert.Zero(t, offThread.Load(), "functions that ran off their loop's thread")
		}
		assert.Len(t, loopsSeen, 2, "the connections did not cover both loops")

		// A function posted while the loop is busy, and the engine is told
		// to stop meanwhile, still runs, once.
		release := make(chan struct{})
		require.NoError(t, eng.Loop(0).Execute(func() { <-release }))
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stopped <- eng.Stop(ctx)
		}()
		var late atomic.Int32
		require.NoError(t, eng.Loop(0).Execute(func() { late.Add(1) }))
		close(release)
		require.NoError(t, <-stopped)
		assert.EqualValues(t, 1, late.Load(), "a function posted before the stop ran %d times", late.Load())

		// After the stop, nothing runs.
		var ran atomic.Bool
		for i := range eng.NumLoops() {
			assert.ErrorIs(t, eng.Loop(i).Execute(func() { ran.Store(true) }), ErrEngineStopped)
		}
		assert.False(t, ran.Load(), "a function posted after the stop ran")
		return outcome{Delivered: delivered}
	})
}

// TestEngineWithoutListener runs an engine that listens on nothing, as a
// client does: it dials out, talks, and stops.
func TestEngineWithoutListener(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &tripper{}
		eng, wait := runEngine(t, "", h, p, WithNumEventLoop(2))
		assert.Empty(t, eng.Addrs(), "an engine without a listener lists an address")
		assert.Equal(t, 2, eng.NumLoops())
		addr := echoListener(t, "tcp", "127.0.0.1:0")
		var ends []string
		for i := range 3 {
			tr := newTrip(tripMessage(32<<10, i)) // more than one read's worth at once
			require.NoError(t, eng.Dial(addr, tr))
			tr.wait(t)
			require.True(t, tr.opened, "dial %d failed: %v", i, tr.err)
			assert.Equal(t, tr.msg, tr.got, "the echo differs")
			ends = append(ends, tr.result())
		}
		st := closedStats(t, eng)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, eng.Stop(ctx))
		require.NoError(t, wait())
		require.Zero(t, eng.Stats().InboundHeld, "inbound bytes held once every connection closed")
		assert.ErrorIs(t, eng.Dial(addr, newTrip(nil)), ErrEngineStopped, "Dial after the engine stopped")
		return outcome{Closed: ends, Stats: st}
	})
}

// TestStopWhileDialing stops an engine whose dials are all still waiting
// for an answer: each fails with ErrEngineStopped, and the stop does not
// wait for their timeouts.
func TestStopWhileDialing(t *testing.T) {
	const dials = 8
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		target := fullBacklog(t)
		h := &tripper{}
		eng, wait := runEngine(t, "", h, p, WithNumEventLoop(2))
		var trips []*trip
		for range dials {
			tr := newTrip(nil)
			trips = append(trips, tr)
			require.NoError(t, eng.Dial(target, tr, DialTimeout(time.Minute)))
		}
		waitFor(t, 5*time.Second, func() bool { return eng.Stats().Conns == dials }, func() string {
			return fmt.Sprintf("%d of %d dials connecting", eng.Stats().Conns, dials)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, eng.Stop(ctx))
		took := time.Since(start)
		require.NoError(t, wait())
		// The dials had a minute left, and their next SYN was a second
		// away: a stop that waited for either would take that long.
		assert.Less(t, took, time.Second, "Stop waited for the dials")
		var ends []string
		for _, tr := range trips {
			tr.wait(t)
			assert.ErrorIs(t, tr.err, ErrEngineStopped)
			ends = append(ends, tr.result())
		}
		assert.Zero(t, h.opens.Load())
		st := comparable(eng.Stats())
		assert.EqualValues(t, dials, st.DialFailed)
		assert.Zero(t, st.Conns)
		return outcome{Closed: ends, Stats: st}
	})
}

// sockOpts is what a connection's socket options read back as.
type sockOpts struct {
	NoDelay, KeepAlive, KeepIdle, KeepIntvl, KeepCnt int
	RecvBuf, SendBuf                                 int
}

func readSockOpts(t testing.TB, fd int) sockOpts {
	get := func(level, opt int) int {
		v, err := unix.GetsockoptInt(fd, level, opt)
		assert.NoError(t, err)
		return v
	}
	return sockOpts{
		NoDelay:   get(unix.IPPROTO_TCP, unix.TCP_NODELAY),
		KeepAlive: get(unix.SOL_SOCKET, unix.SO_KEEPALIVE),
		KeepIdle:  get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE),
		KeepIntvl: get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL),
		KeepCnt:   get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT),
		RecvBuf:   get(unix.SOL_SOCKET, unix.SO_RCVBUF),
		SendBuf:   get(unix.SOL_SOCKET, unix.SO_SNDBUF),
	}
}

// sockOptsOnOpen has h read each connection's socket options as it
// opens; the function it returns gives those of a trip that has opened.
func sockOptsOnOpen(t *testing.T, h *tripper) func(*trip) sockOpts {
	var mu sync.Mutex
	seen := map[*trip]sockOpts{}
	h.onOpen = func(c Conn, tr *trip) {
		o := readSockOpts(t, c.Fd())
		mu.Lock()
		seen[tr] = o
		mu.Unlock()
	}
	return func(tr *trip) sockOpts {
		mu.Lock()
		defer mu.Unlock()
		return seen[tr]
	}
}

// bufferAfterSet returns what a buffer option reads back as on a fresh
// TCP socket after it is set to n: the kernel doubles it, within bounds
// of its own, so the expectation comes from the kernel.
func bufferAfterSet(t testing.TB, opt, n int) (set, dflt int) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	dflt, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt)
	require.NoError(t, err)
	require.NoError(t, unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, n))
	set, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt)
	require.NoError(t, err)
	return set, dflt
}

// TestDialOptions checks that each DialOption reaches the socket, read
// back in OnOpen, and overrides the engine's option of the same kind both
// ways; and that DialLocalAddr picks the address the server sees.
func TestDialOptions(t *testing.T) {
	needsKernelSockets(t, "reads the options back with getsockopt")
	const bufSize = 24 << 10
	rcv, rcvDefault := bufferAfterSet(t, unix.SO_RCVBUF, bufSize)
	snd, sndDefault := bufferAfterSet(t, unix.SO_SNDBUF, bufSize)
	require.NotEqual(t, rcv, rcvDefault, "the receive buffer's size would not show whether the option was applied")
	require.NotEqual(t, snd, sndDefault, "the send buffer's size would not show whether the option was applied")
	tests := []struct {
		name  string
		opts  []DialOption
		check func(t *testing.T, o sockOpts)
	}{
		{"engine's options", nil, func(t *testing.T, o sockOpts) {
			assert.Equal(t, 1, o.NoDelay, "WithTCPNoDelay's default")
			assert.Equal(t, 1, o.KeepAlive, "WithTCPKeepAlive")
			assert.Equal(t, 60, o.KeepIdle, "WithTCPKeepAlive's idle time")
			assert.Equal(t, rcvDefault, o.RecvBuf)
		}},
		{"DialNoDelay(false)", []DialOption{DialNoDelay(false)}, func(t *testing.T, o sockOpts) {
			assert.Equal(t, 0, o.NoDelay)
		}},
		{"DialKeepAlive", []DialOption{DialKeepAlive(7*time.Second, 3*time.Second, 4)}, func(t *testing.T, o sockOpts) {
			assert.Equal(t, sockOpts{1, 1, 7, 3, 4, o.RecvBuf, o.SendBuf}, o)
		}},
		{"DialKeepAlive off", []DialOption{DialKeepAlive(0, 0, 0)}, func(t *testing.T, o sockOpts) {
			assert.Equal(t, 0, o.KeepAlive)
		}},
		{"DialReadBuffer", []DialOption{DialReadBuffer(bufSize)}, func(t *testing.T, o sockOpts) {
			assert.Equal(t, rcv, o.RecvBuf)
		}},
		{"DialWriteBuffer", []DialOption{DialWriteBuffer(bufSize)}, func(t *testing.T, o sockOpts) {
			assert.Equal(t, snd, o.SendBuf)
		}},
	}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		srv := newLifetimes()
		remotes := make(chan string, len(tests)+1)
		srv.onOpen = func(c Conn) { remotes <- c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().String() }
		_, addr := serve(t, srv, p, WithNumEventLoop(1))
		h := &tripper{}
		optsOf := sockOptsOnOpen(t, h)
		eng := runClient(t, h, p, WithNumEventLoop(1), WithTCPKeepAlive(time.Minute))
		var delivered []int
		for _, tt := range tests {
			tr := newTrip([]byte("x"))
			require.NoError(t, eng.Dial(addr, tr, tt.opts...), tt.name)
			tr.wait(t)
			require.True(t, tr.opened, "%s: the dial failed: %v", tt.name, tr.err)
			assert.Equal(t, "127.0.0.1", <-remotes)
			o := optsOf(tr)
			t.Run(tt.name, func(t *testing.T) { tt.check(t, o) })
			delivered = append(delivered, o.NoDelay, o.KeepAlive, o.KeepIdle, o.KeepIntvl, o.KeepCnt)
		}

		// The connection leaves from the address asked for; on Linux
		// the whole of 127/8 is loopback, so 127.0.0.2 needs no setup.
		tr := newTrip([]byte("x"))
		require.NoError(t, eng.Dial(addr, tr, DialLocalAddr("127.0.0.2")))
		tr.wait(t)
		require.True(t, tr.opened, "DialLocalAddr: the dial failed: %v", tr.err)
		assert.Equal(t, "127.0.0.2", <-remotes, "the address the server saw")
		local, err := netip.ParseAddrPort(tr.local)
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.2", local.Addr().String(), "LocalAddr")
		return outcome{Delivered: delivered, Stats: closedStats(t, eng)}
	})
}

// TestKillWhileConnecting kills a dial that is still waiting for an
// answer, by the ID Engine.ConnIDs lists for it: the handler hears it
// fail with ErrKilled, and it never opens.
func TestKillWhileConnecting(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		target := fullBacklog(t)
		h := &tripper{}
		eng := runClient(t, h, p, WithNumEventLoop(2))
		tr := newTrip(nil)
		require.NoError(t, eng.Dial(target, tr, DialTimeout(time.Minute)))
		var ids []uint64
		waitFor(t, 5*time.Second, func() bool {
			ids = slices.Collect(eng.ConnIDs())
			return len(ids) > 0
		}, func() string { return "the connecting dial has no ID" })
		require.Len(t, ids, 1)
		assert.Equal(t, 1, eng.Stats().Conns, "a connecting dial counts as a connection")
		require.NoError(t, eng.Kill(ids[0]))
		tr.wait(t)
		assert.ErrorIs(t, tr.err, ErrKilled)
		assert.False(t, tr.opened, "the killed dial opened")
		assert.Zero(t, h.opens.Load())
		assert.ErrorIs(t, eng.Kill(ids[0]), ErrConnClosed, "killed twice")
		st := closedStats(t, eng)
		assert.EqualValues(t, 1, st.Killed)
		assert.EqualValues(t, 1, st.DialFailed)
		assert.Zero(t, st.Dialed)
		return outcome{Closed: []string{tr.result()}, Stats: st}
	})
}

// TestDialOverMaxConnections: a dial counts against WithMaxConnections
// from the start, and one past it fails with ErrTooManyConns.
func TestDialOverMaxConnections(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, BuiltinEventEngine{}, p, WithNumEventLoop(1))
		h := &tripper{}
		eng := runClient(t, h, p, WithNumEventLoop(1), WithMaxConnections(1))
		first := newTrip(nil)
		require.NoError(t, eng.Dial(addr, first))
		waitFor(t, 5*time.Second, func() bool { return h.opens.Load() == 1 },
			func() string { return "the first dial did not open" })
		second := newTrip(nil)
		require.NoError(t, eng.Dial(addr, second))
		second.wait(t)
		assert.ErrorIs(t, second.err, ErrTooManyConns)
		assert.False(t, second.opened)
		st := comparable(eng.Stats())
		assert.EqualValues(t, 1, st.Dialed)
		assert.EqualValues(t, 1, st.DialFailed)
		return outcome{Closed: []string{second.result()}, Stats: st}
	})
}

// TestEnrollKeepAlive: an enrolled socket keeps the keep-alive it came
// with, whatever the engine's own (WithTCPKeepAlive), unless a
// DialKeepAlive says otherwise, which then holds both ways.
func TestEnrollKeepAlive(t *testing.T) {
	needsKernelSockets(t, "reads the options back with getsockopt")
	off := &sockOpts{}
	tests := []struct {
		name      string
		keepAlive time.Duration // the net.Dialer's: Go turns keep-alive on unless it is negative
		opts      []DialOption
		want      *sockOpts // only the keep-alive fields count; nil: as the socket had them
	}{
		{"kept on", 0, nil, nil},
		{"kept off", -1, nil, nil},
		{"set", -1, []DialOption{DialKeepAlive(7*time.Second, 3*time.Second, 4)}, &sockOpts{KeepAlive: 1, KeepIdle: 7, KeepIntvl: 3, KeepCnt: 4}},
		{"turned off", 0, []DialOption{DialKeepAlive(0, 0, 0)}, off},
	}
	// keepAlive keeps the fields that count: the timings only when on.
	keepAlive := func(o sockOpts) sockOpts {
		if o.KeepAlive == 0 {
			return sockOpts{}
		}
		return sockOpts{KeepAlive: o.KeepAlive, KeepIdle: o.KeepIdle, KeepIntvl: o.KeepIntvl, KeepCnt: o.KeepCnt}
	}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1))
		h := &tripper{}
		optsOf := sockOptsOnOpen(t, h)
		// The engine's own keep-alive differs from every row's, so that
		// a row passes only if the enrolled socket's own, or the
		// DialKeepAlive's, wins.
		eng := runClient(t, h, p, WithNumEventLoop(1), WithTCPKeepAlive(time.Hour))
		var delivered []int
		for _, tt := range tests {
			d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: tt.keepAlive}
			nc, err := d.Dial("tcp", hostPort(addr))
			require.NoError(t, err)
			rc, err := nc.(*net.TCPConn).SyscallConn()
			require.NoError(t, err)
			var before sockOpts
			require.NoError(t, rc.Control(func(fd uintptr) { before = readSockOpts(t, int(fd)) }))
			want := keepAlive(before)
			if tt.want != nil {
				want = *tt.want
			}
			tr := newTrip([]byte("x"))
			require.NoError(t, eng.Enroll(nc, tr, tt.opts...))
			tr.wait(t)
			require.True(t, tr.opened, "%s: the enrollment failed: %v", tt.name, tr.err)
			got := keepAlive(optsOf(tr))
			assert.Equal(t, want, got, tt.name)
			delivered = append(delivered, got.KeepAlive, got.KeepIdle)
		}
		return outcome{Delivered: delivered, Stats: closedStats(t, eng)}
	})
}

// TestEnrollWhileStopping enrolls a connection from OnClose while the
// engine stops, as a handler that hands connections on might: the loop
// refuses it with ErrEngineStopped, and must let go of the descriptor it
// took, so that the connection's peer sees it end.
func TestEnrollWhileStopping(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, BuiltinEventEngine{}, p, WithNumEventLoop(1))
		nc, peer := acceptedPair(t, "tcp", "127.0.0.1:0")
		late := newTrip(nil)
		var enrollErr error
		h := &tripper{onClose: func(c Conn, err error) {
			if c.Context() != any(late) {
				enrollErr = c.Loop().Enroll(nc, late)
			}
		}}
		eng, wait := runEngine(t, "", h, p, WithNumEventLoop(1))
		first := newTrip(nil)
		require.NoError(t, eng.Dial(addr, first))
		waitFor(t, 5*time.Second, func() bool { return h.opens.Load() == 1 },
			func() string { return "the dial did not open" })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, eng.Stop(ctx))
		require.NoError(t, wait())
		require.Zero(t, eng.Stats().InboundHeld, "inbound bytes held once every connection closed")
		require.NoError(t, enrollErr, "Enroll from OnClose during the stop")
		late.wait(t)
		assert.False(t, late.opened, "a connection enrolled during the stop opened")
		assert.ErrorIs(t, late.err, ErrEngineStopped)
		assert.Equal(t, peer.LocalAddr().String(), late.addr, "OnDialFailed's address for an enrollment")
		// With every copy of the socket closed, its peer reads the end of
		// the stream; a copy left open holds it open for good.
		peer.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := peer.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "the enrolled socket's peer did not see it close")
		return outcome{Closed: []string{late.result()}, Stats: comparable(eng.Stats())}
	})
}

// TestDialUnixRemoteAddr: a connection dialed to a unix socket reports
// the socket's path as its remote address, as net.Dial's does.
func TestDialUnixRemoteAddr(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		path := t.TempDir() + "/s.sock"
		_, addr := serveAddr(t, "unix://"+path, echoHandler{}, p, WithNumEventLoop(1))
		eng := runClient(t, &tripper{}, p, WithNumEventLoop(1))
		tr := newTrip([]byte("x"))
		require.NoError(t, eng.Dial(addr, tr))
		tr.wait(t)
		require.True(t, tr.opened, "the dial failed: %v", tr.err)
		assert.Equal(t, path, tr.remote)
		return outcome{Closed: []string{tr.result()}}
	})
}

// A host name may resolve to several addresses, and a dial tries them in
// turn, as net.Dial does: one refused or unreachable moves on to the next.
// This machine's resolver gives localhost one address, so the test hands
// the loop a dial as resolution leaves it: its first address, and the
// rest to try. 127.0.0.2 refuses, since the server is bound to 127.0.0.1.
func TestDialTriesTheHostsNextAddress(t *testing.T) {
	tests := []struct {
		name string
		next []string
		want string
	}{
		{"the second answers", []string{"127.0.0.1"}, "opened, echoed 5, closed: nil"},
		{"the third answers", []string{"127.0.0.3", "127.0.0.1"}, "opened, echoed 5, closed: nil"},
		{"none answers", []string{"127.0.0.3"}, "failed: " + syscall.ECONNREFUSED.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				_, addr := serve(t, newLifetimes(), p)
				port := addr[strings.LastIndexByte(addr, ':')+1:]
				eng, _ := runEngine(t, "", &tripper{}, p, WithNumEventLoop(1))
				tr := newTrip([]byte("hello"))
				d := eng.e.newDial(tr, nil)
				require.NoError(t, d.parse("tcp://127.0.0.2:"+port))
				for _, ip := range tt.next {
					d.next = append(d.next, netip.MustParseAddr(ip))
				}
				require.NoError(t, eng.e.loops[0].postDial(d))
				assert.Equal(t, tt.want, tr.wait(t).result())
				return outcome{Closed: []string{tr.result()}}
			})
		})
	}
}
