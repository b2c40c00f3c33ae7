//go:build unix

package sluice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
	"github.com/sluicenet/sluice/poller"
)

// The tests in this file hold the engine to what a user must be able to
// count on whatever the peer does, and hold both pollers to the same: each
// scenario runs on epoll and on io_uring with the same assertions, and
// what it observed (the bytes delivered, the errors OnClose got, the
// counters) must be the same on both.

// pollerNames are the pollers each scenario runs on.
var pollerNames = []poller.Kind{poller.Epoll, poller.IOUring}

// outcome is what a scenario observed, compared across pollers.
type outcome struct {
	Delivered []int    // bytes each client received, in order
	Closed    []string // why OnClose said each connection closed, in order
	Stats     Stats
}

// onEachPoller runs scenario on each poller and fails the test if the
// pollers' outcomes differ. With SLUICE_TEST_POLLER=uring, when the whole
// suite runs again on io_uring, it has nothing to add and is skipped.
func onEachPoller(t *testing.T, scenario func(t *testing.T, p Option) outcome) {
	t.Helper()
	if testPoller != poller.Epoll {
		t.Skip("runs on every poller in the default pass")
	}
	got := map[poller.Kind]outcome{}
	for _, k := range pollerNames {
		t.Run(k.String(), func(t *testing.T) {
			if k == poller.IOUring {
				skipWithoutRing(t)
			}
			got[k] = scenario(t, WithPoller(k))
		})
	}
	if len(got) == len(pollerNames) && !t.Failed() {
		assert.Equal(t, got[poller.Epoll], got[poller.IOUring], "the pollers differ")
	}
}

// errName names err by the sentinel errors.Is finds in it, so that
// outcomes compare what a handler can test for, not message text.
func errName(err error) string {
	for _, s := range []error{nil, ErrKilled, ErrIdleTimeout, ErrReadTimeout, ErrWriteTimeout,
		ErrInboundTooLarge, ErrInboundOverBudget, ErrOutboundOverBudget, ErrEngineStopped, ErrHandlerPanic, syscall.ECONNRESET, syscall.EPIPE} {
		if errors.Is(err, s) {
			if s == nil {
				return "nil"
			}
			return s.Error()
		}
	}
	return err.Error()
}

// closedErrs returns why each of ids closed, waiting for each.
func (h *lifetimes) closedErrs(t testing.TB, ids ...uint64) []string {
	var names []string
	for _, id := range ids {
		_, err := h.waitClosed(t, id)
		names = append(names, errName(err))
	}
	return names
}

// readSlowly reads c until the end of the stream, chunk bytes at a time
// with a pause after each: a peer that reads slower than the server
// writes. It returns what it read and the error that ended the stream,
// nil for a clean end.
func readSlowly(c net.Conn, chunk int, pause time.Duration) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	var got []byte
	buf := make([]byte, chunk)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		time.Sleep(pause)
	}
}

// sendThenReadSlowly writes out to c from another goroutine and then
// closes c's write side, while it reads what comes back with readSlowly,
// 16 KiB every 200µs.
func sendThenReadSlowly(c *net.TCPConn, out []byte) ([]byte, error) {
	go func() {
		c.Write(out)
		c.CloseWrite()
	}()
	return readSlowly(c, 16<<10, 200*time.Microsecond)
}

// dialSmall connects a TCP client whose receive buffer is small, so that
// reading slowly holds the server's output back.
func dialSmall(t testing.TB, addr string) *net.TCPConn {
	c, err := dialReadBuffer(addr, 16<<10)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// dialReadBuffer connects to a tcp:// address with a receive buffer of
// size bytes, set before the handshake: set after it, the window the peer
// was offered shrinks, and the peer stalls in zero-window probes.
func dialReadBuffer(addr string, size int) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
		})
		return err
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(addr, "tcp://"))
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// pipeliner answers each one-byte request with reply bytes, and stops
// taking requests while a megabyte of replies is queued, as a server that
// bounds the output of one call does. The engine calls it again when its
// output drains.
type pipeliner struct {
	*lifetimes
	reply    []byte
	limit    int          // the output it stops at; zero: a megabyte
	uncapped atomic.Int64 // calls offered a view with room past its end
}

func (h *pipeliner) bound() int {
	if h.limit == 0 {
		return 1 << 20
	}
	return h.limit
}

func (h *pipeliner) OnTraffic(c Conn) Action {
	if b, _ := c.Peek(-1); cap(b) != len(b) {
		h.uncapped.Add(1)
	}
	for c.OutboundBuffered() < h.bound() {
		if _, err := c.Next(1); err != nil {
			break
		}
		c.Write(h.reply)
	}
	return None
}

// A peer that uploads, shuts down its write side and then reads slowly
// gets every byte back: the bytes before its FIN reach the handler, and
// what it answers reaches the peer, before the connection closes.
func TestEndOfStreamWhilePaused(t *testing.T) {
	t.Run("echo", func(t *testing.T) {
		payload := randomBytes(rand.New(rand.NewPCG(1, 2)), 8<<20)
		onEachPoller(t, func(t *testing.T, p Option) outcome {
			h := newLifetimes()
			var uncapped atomic.Int64 // views with room past their end, over which an append writes
			h.traffic = func(c Conn) Action {
				b, _ := c.Next(-1)
				if cap(b) != len(b) {
					uncapped.Add(1)
				}
				c.Write(b)
				return None
			}
			_, addr := serve(t, h, p, WithNumEventLoop(1))
			c := dialSmall(t, addr)
			id := h.next(t)
			got, err := sendThenReadSlowly(c, payload)
			require.NoError(t, err)
			require.Equal(t, len(payload), len(got))
			require.True(t, bytes.Equal(payload, got), "echo differs at byte %d", firstDiff(got, payload))
			assert.Zero(t, uncapped.Load(), "views with room past their end")
			return outcome{Delivered: []int{len(got)}, Closed: h.closedErrs(t, id)}
		})
	})
	t.Run("pipeline", func(t *testing.T) {
		const requests, size = 40, 256 << 10
		onEachPoller(t, func(t *testing.T, p Option) outcome {
			h := &pipeliner{lifetimes: newLifetimes(), reply: bytes.Repeat([]byte{'r'}, size)}
			_, addr := serve(t, h, p, WithNumEventLoop(1))
			c := dialSmall(t, addr)
			id := h.next(t)
			_, err := c.Write(bytes.Repeat([]byte{'q'}, requests))
			require.NoError(t, err)
			require.NoError(t, c.CloseWrite())
			got, err := readSlowly(c, 16<<10, 200*time.Microsecond)
			require.NoError(t, err)
			require.Equal(t, requests*size, len(got), "%d of %d answers", len(got)/size, requests)
			assert.Zero(t, h.uncapped.Load(), "views with room past their end, over which an append writes")
			return outcome{Delivered: []int{len(got)}, Closed: h.closedErrs(t, id)}
		})
	})
}

// heapGrowth runs f and returns by how much the live heap and the
// resident memory grew, at most, while it ran: both are sampled every few
// milliseconds, the heap after a collection, so that garbage not yet
// collected does not count.
func heapGrowth(t testing.TB, f func()) (heap, resident uint64) {
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	baseHeap, baseRSS := live(), rss(t)
	peakHeap, peakRSS := baseHeap, baseRSS
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				peakHeap, peakRSS = max(peakHeap, live()), max(peakRSS, rss(t))
			}
		}
	}()
	f()
	close(done)
	<-sampled
	// Once more as f returns, which a short f may do before the first tick.
	peakHeap, peakRSS = max(peakHeap, live()), max(peakRSS, rss(t))
	return peakHeap - baseHeap, peakRSS - baseRSS
}

// slowEcho echoes total bytes through an engine on poller p to a peer that
// reads at about 32 MB/s, and returns by how much the heap and resident
// memory grew.
func slowEcho(t testing.TB, p Option, total int) (heap, resident uint64) {
	// Written to, so that its pages are resident before the count starts.
	payload := bytes.Repeat([]byte{'s'}, total)
	h := newLifetimes()
	_, addr := serve(t, h, p, WithNumEventLoop(1), WithMaxInboundBuffered(16<<20), WithBackpressureMark(64<<10))
	c := dialSmall(t, addr)
	id := h.next(t)
	got := 0
	heap, resident = heapGrowth(t, func() {
		go func() {
			c.Write(payload)
			c.CloseWrite()
		}()
		buf := make([]byte, 32<<10)
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		for {
			n, err := c.Read(buf)
			got += n
			if err != nil {
				require.ErrorIs(t, err, io.EOF)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	require.Equal(t, total, got)
	_, err := h.waitClosed(t, id)
	require.NoError(t, err)
	return heap, resident
}

// BenchmarkSlowReader reports the peak growth of the live heap and of
// resident memory while 64 MiB are echoed to a peer that reads at about
// 32 MB/s, on each poller.
func BenchmarkSlowReader(b *testing.B) {
	for _, k := range pollerNames {
		b.Run(k.String(), func(b *testing.B) {
			if k == poller.IOUring {
				skipWithoutRing(b)
			}
			var heap, resident uint64
			for b.Loop() {
				h, r := slowEcho(b, WithPoller(k), 64<<20)
				heap, resident = max(heap, h), max(resident, r)
			}
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(resident)/(1<<20), "peak-RSS-MiB")
		})
	}
}

// A peer that sends fast and reads slowly cannot grow the server's memory
// beyond the output's high-water mark and a few receive buffers: reading
// stops while output is backed up, and on io_uring what a receive brought
// before it was cancelled is handed over before the kernel is asked for
// more.
func TestSlowReaderBoundsHeap(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		heap, _ := slowEcho(t, p, 32<<20)
		t.Logf("heap grew by %d KiB at most", heap>>10)
		// Measured: under 1 MiB on epoll, about 4 MiB on io_uring; 80 MiB
		// and more on io_uring when it armed receives with bytes held.
		assert.Less(t, heap, uint64(16<<20), "the heap grew with the peer's backlog")
		return outcome{}
	})
}

// replier writes reply and closes, in the way close names, when its
// connection's first bytes arrive.
type replier struct {
	*lifetimes
	reply []byte
	close string // "action", "conn" or "none"
}

func (h *replier) OnTraffic(c Conn) Action {
	c.Discard(-1)
	c.Write(h.reply)
	switch h.close {
	case "action":
		return Close
	case "conn":
		c.Close()
	}
	return None
}

// A connection closed while its peer is still sending delivers all of its
// last reply: the engine shuts down the write side and reads until the
// peer's FIN instead of closing on unread input, which would make the
// kernel reset the connection and drop the reply's unsent tail.
func TestCloseWhilePeerSends(t *testing.T) {
	const size = 1 << 20
	for _, how := range []string{"action", "conn", "stop"} {
		t.Run(how, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := &replier{newLifetimes(), bytes.Repeat([]byte{'r'}, size), how}
				// Paused for its output, the server reads none of what
				// the peer sends after its request.
				eng, addr := serve(t, h, p, WithNumEventLoop(1), WithSocketSendBuffer(32<<10), WithBackpressureMark(64<<10))
				c := dialSmall(t, addr)
				id := h.next(t)
				_, err := c.Write([]byte("go"))
				require.NoError(t, err)
				// The first bytes of the reply say the request was taken;
				// what the peer sends now, the server never reads.
				first := make([]byte, 1)
				_, err = io.ReadFull(c, first)
				require.NoError(t, err)
				_, err = c.Write(make([]byte, 64<<10))
				require.NoError(t, err)
				stopped := make(chan error, 1)
				if how == "stop" {
					go func() { stopped <- eng.Stop(context.Background()) }()
				}
				got, err := readSlowly(c, 16<<10, time.Millisecond)
				require.NoError(t, err, "after %d of %d bytes", len(got)+1, size)
				require.Equal(t, size, len(got)+1)
				c.Close()
				if how == "stop" {
					require.NoError(t, <-stopped)
				}
				return outcome{Delivered: []int{len(got) + 1}, Closed: h.closedErrs(t, id)}
			})
		})
	}
}

// A lingering close ends at its bounds: the time, for a peer that never
// sends its FIN, and the bytes, for one that never stops sending. The
// reply is more than the peer's receive buffer holds, so that it is
// still in flight when the engine is done sending it, and it lingers.
func TestLingeringCloseBounds(t *testing.T) {
	reply := bytes.Repeat([]byte{'r'}, 256<<10)
	// lingered reads the whole reply and the end of the stream that the
	// shutdown of the server's write side sends.
	lingered := func(t *testing.T, c net.Conn) {
		got, err := readSlowly(c, 16<<10, 0)
		require.NoError(t, err)
		require.Equal(t, len(reply), len(got))
	}
	t.Run("time", func(t *testing.T) {
		const linger = 300 * time.Millisecond
		onEachPoller(t, func(t *testing.T, p Option) outcome {
			h := &replier{newLifetimes(), reply, "action"}
			_, addr := serve(t, h, p, WithNumEventLoop(1), WithLingeringClose(linger, 1<<20))
			c := dialSmall(t, addr)
			id := h.next(t)
			_, err := c.Write([]byte("go"))
			require.NoError(t, err)
			lingered(t, c)
			after, cerr := h.waitClosed(t, id)
			assert.GreaterOrEqual(t, after, linger, "closed before its peer's FIN or the bound")
			assert.Less(t, after, linger+lateness)
			return outcome{Closed: []string{errName(cerr)}}
		})
	})
	t.Run("bytes", func(t *testing.T) {
		const bound = 64 << 10
		onEachPoller(t, func(t *testing.T, p Option) outcome {
			h := &replier{newLifetimes(), reply, "action"}
			_, addr := serve(t, h, p, WithNumEventLoop(1), WithLingeringClose(time.Minute, bound))
			c := dialSmall(t, addr)
			id := h.next(t)
			_, err := c.Write([]byte("go"))
			require.NoError(t, err)
			lingered(t, c)
			// Send until the server gives up, which only the bound on
			// bytes can make it do within the test.
			junk := make([]byte, 4<<10)
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			sent := 0
			for err == nil {
				var n int
				n, err = c.Write(junk)
				sent += n
			}
			assert.NotErrorIs(t, err, os.ErrDeadlineExceeded)
			assert.Greater(t, sent, bound, "the server closed before the bound")
			return outcome{Closed: h.closedErrs(t, id)}
		})
	})
}

// addrRecorder notes each connection's local address in OnOpen and checks
// in OnClose that every accessor still tells the truth about it.
type addrRecorder struct {
	BuiltinEventEngine
	mu     sync.Mutex
	local  map[uint64]string
	wrong  []string
	closed atomic.Int64
	open   atomic.Int64
	peak   atomic.Int64
	hold   time.Duration // how long OnClose takes
}

func (h *addrRecorder) OnOpen(c Conn) ([]byte, Action) {
	storeMax(&h.peak, int(h.open.Add(1)))
	h.mu.Lock()
	h.local[c.ID()] = c.LocalAddr().String()
	h.mu.Unlock()
	return nil, None
}

func (h *addrRecorder) OnClose(c Conn, err error) Action {
	time.Sleep(h.hold)
	h.open.Add(-1)
	h.mu.Lock()
	defer h.mu.Unlock()
	la, was := c.LocalAddr(), h.local[c.ID()]
	sa, err := unix.Getsockname(c.Fd())
	if stdBackend { // whose Fd is no kernel descriptor
		sa, err = nil, nil
	}
	switch {
	case la == nil:
		h.wrong = append(h.wrong, "LocalAddr is nil")
	case la.String() != was:
		h.wrong = append(h.wrong, fmt.Sprintf("LocalAddr %s, was %s", la, was))
	case err != nil:
		h.wrong = append(h.wrong, fmt.Sprintf("Fd: getsockname: %v", err))
	case sa != nil && socketAddrString(sa) != was:
		h.wrong = append(h.wrong, fmt.Sprintf("Fd names %s, was %s", socketAddrString(sa), was))
	}
	h.closed.Add(1)
	return None
}

func socketAddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
	case *unix.SockaddrInet6:
		return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
	}
	return fmt.Sprint(sa)
}

// Inside OnClose every Conn accessor is still true: the descriptor closes
// after OnClose returns, so it cannot have been reused by another socket.
func TestAccessorsInOnClose(t *testing.T) {
	const conns = 1000
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &addrRecorder{local: map[uint64]string{}}
		eng, addr := serve(t, h, p, WithNumEventLoop(2))
		var wg sync.WaitGroup
		for range conns / 100 {
			wg.Go(func() {
				for range 100 {
					c, err := net.Dial("tcp", addr[len("tcp://"):])
					if assert.NoError(t, err) {
						c.Close()
					}
				}
			})
		}
		wg.Wait()
		waitFor(t, 10*time.Second, func() bool { return h.closed.Load() == conns },
			func() string { return fmt.Sprintf("%d of %d closed", h.closed.Load(), conns) })
		h.mu.Lock()
		defer h.mu.Unlock()
		assert.Empty(t, h.wrong)
		return outcome{Stats: closedStats(t, eng)}
	})
}

// The handler never holds more connections than WithMaxConnections
// allows: a connection's slot goes back only once its OnClose has
// returned, however long OnClose takes.
func TestMaxConnectionsAsTheHandlerSeesThem(t *testing.T) {
	for _, limit := range []int{1, 10} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := &addrRecorder{local: map[uint64]string{}, hold: 100 * time.Millisecond}
				eng, addr := serve(t, h, p, WithNumEventLoop(2), WithReusePort(true), WithMaxConnections(limit))
				// Clients that come and go, so that slots are released
				// while OnClose runs and others try to take them.
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for range 2 * limit {
							c, err := net.Dial("tcp", addr[len("tcp://"):])
							if err == nil {
								c.Close()
							}
						}
					})
				}
				wg.Wait()
				// The kernel may still hold connections the loops have yet
				// to accept: wait for the engine to take and close them all.
				waitFor(t, 20*time.Second, func() bool {
					s := eng.Stats()
					return s.Conns == 0 && h.closed.Load() == int64(s.Accepted) && s.Accepted+s.RejectedMaxConns == 8*uint64(limit)
				}, func() string { return fmt.Sprintf("%d closed, %+v", h.closed.Load(), eng.Stats()) })
				assert.LessOrEqual(t, h.peak.Load(), int64(limit), "the handler held more connections than the limit")
				return outcome{}
			})
		})
	}
}

// Time that the engine holds a connection's reading paused, because its
// output is backed up, does not count against the read timeout: a peer
// that pauses reading is the write timeout's to judge.
func TestReadTimeoutSparesEnginePause(t *testing.T) {
	const requests, size = 40, 256 << 10
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &pipeliner{lifetimes: newLifetimes(), reply: bytes.Repeat([]byte{'r'}, size)}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithReadTimeout(300*time.Millisecond))
		c := dialSmall(t, addr)
		id := h.next(t)
		_, err := c.Write(bytes.Repeat([]byte{'q'}, requests))
		require.NoError(t, err)
		first := make([]byte, 1)
		_, err = io.ReadFull(c, first)
		require.NoError(t, err)
		// The peer pauses reading for longer than the read timeout, while
		// complete requests wait unread in the engine.
		time.Sleep(time.Second)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, requests*size-1)
		n, err := io.ReadFull(c, got)
		require.NoError(t, err, "after %d of %d bytes", n+1, requests*size)
		c.Close()
		closed := h.closedErrs(t, id)
		assert.Equal(t, []string{"nil"}, closed)
		return outcome{Delivered: []int{n + 1}, Closed: closed, Stats: closedStats(t, eng)}
	})
}

// A connection the peer resets before the engine accepts it is opened,
// counted and closed with the reset on both pollers (io_uring's accept
// cannot learn its address: it has none).
func TestResetBeforeAccept(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		release := make(chan struct{})
		h := newLifetimes()
		h.traffic = func(c Conn) Action {
			<-release // holds the only loop, so nothing is accepted
			c.Discard(-1)
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1))
		blocker := dial(t, addr)
		first := h.next(t)
		_, err := blocker.Write([]byte("x"))
		require.NoError(t, err)
		// The handshake completes in the kernel; the reset follows before
		// the loop, held, can accept.
		fd, err := connectRaw(addr)
		require.NoError(t, err)
		require.NoError(t, unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}))
		require.NoError(t, unix.Close(fd))
		close(release)
		reset := h.next(t)
		closed := h.closedErrs(t, reset)
		assert.Equal(t, []string{syscall.ECONNRESET.Error()}, closed)
		blocker.Close()
		closed = append(closed, h.closedErrs(t, first)...)
		s := closedStats(t, eng)
		assert.EqualValues(t, 2, s.Accepted)
		return outcome{Closed: closed, Stats: s}
	})
}

// frames is a handler for 16-byte frames that answers each with itself:
// one frame per call when one is set, and the engine calls it again, or
// every whole frame buffered in one call.
type frames struct {
	BuiltinEventEngine
	one bool
}

func (h frames) OnTraffic(c Conn) Action {
	for {
		f, err := c.Next(16)
		if err != nil {
			return None
		}
		c.Write(f)
		if h.one {
			return None
		}
	}
}

// echoFrames sends n bytes of 16-byte frames through c and reads them back.
func echoFrames(t testing.TB, c *rawClient, msg []byte) {
	done := make(chan error, 1)
	go func() { done <- writeAll(c.fd, msg) }()
	got := make([]byte, len(msg))
	for n := 0; n < len(got); {
		m, err := unix.Read(c.fd, got[n:])
		if err == unix.EINTR {
			continue
		}
		require.NoError(t, err)
		require.Positive(t, m, "the stream ended")
		n += m
	}
	require.NoError(t, <-done)
}

// The unread rest of what a handler that takes one frame per call leaves
// is not moved after each call: each byte consumed pays for at most one
// byte moved.
func TestOneFramePerCallMovesNothingConsumed(t *testing.T) {
	l := &eventloop{eng: &engine{}}
	c := &conn{loop: l}
	c.feed(make([]byte, 1<<20))
	c.keepUnread()
	start := &c.in.B[0]
	for i := 1; len(c.buf) > 0; i++ {
		_, err := c.Next(16)
		require.NoError(t, err)
		c.keepUnread()
		if len(c.buf) > 0 {
			require.Same(t, &c.in.B[16*i], &c.buf[0], "the unread rest moved after call %d", i)
			require.Same(t, start, &c.in.B[0])
		}
	}
	// A read moves what is kept forward once the consumed part is as
	// large: here it is all consumed but 16 bytes.
	c.feed(make([]byte, 1<<20))
	c.keepUnread()
	c.Next(1<<20 - 16)
	c.keepUnread()
	c.feed([]byte("x"))
	require.Equal(t, 17, len(c.in.B))
}

// The answers to frames taken one per call go out together: a write per
// high-water mark's worth of output, not one per frame.
func TestOneFramePerCallWritesInBatches(t *testing.T) {
	const size = 1 << 20
	msg := make([]byte, size)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		syscount.Enabled = true
		t.Cleanup(func() { syscount.Enabled = false })
		_, addr := serve(t, frames{one: true}, p, WithNumEventLoop(1))
		c := dialRaw(t, addr)
		before := syscount.Load()
		echoFrames(t, c, msg)
		calls := syscount.Load() - before
		t.Logf("%d system calls for %d frames", calls, size/16)
		assert.Less(t, calls, uint64(size/16/20), "more than one system call per 20 frames")
		return outcome{}
	})
}

// BenchmarkFramesPerCall echoes 4 MiB of 16-byte frames through a handler
// that takes one frame per call and through one that takes them all: the
// engine calling a handler again must cost it little.
func BenchmarkFramesPerCall(b *testing.B) {
	msg := make([]byte, 4<<20)
	for _, k := range pollerNames {
		for _, h := range []frames{{one: false}, {one: true}} {
			name := map[bool]string{false: "take-all", true: "one-per-call"}[h.one]
			b.Run(k.String()+"/"+name, func(b *testing.B) {
				if k == poller.IOUring {
					skipWithoutRing(b)
				}
				_, addr := serve(b, h, WithPoller(k), WithNumEventLoop(1))
				c := dialRaw(b, addr)
				b.SetBytes(int64(len(msg)))
				for b.Loop() {
					echoFrames(b, c, msg)
				}
			})
		}
	}
}

// comparable returns s without what only one poller counts.
func comparable(s Stats) Stats {
	s.RingBuffersExhausted = 0
	// How many bytes moved before a connection broke off, and how often
	// its reading paused, are the timing's.
	s.BytesIn, s.BytesOut, s.BackpressurePauses = 0, 0, 0
	return s
}

// closedStats waits for every connection of eng to be released, which is
// after its OnClose returns, and returns the counters both pollers keep.
func closedStats(t testing.TB, eng Engine) Stats {
	waitFor(t, 10*time.Second, func() bool { return eng.Stats().Conns == 0 },
		func() string { return fmt.Sprintf("%d connections still open", eng.Stats().Conns) })
	return comparable(eng.Stats())
}

// TestPeerBehaviours runs peers that are legal but unkind, each on both
// pollers: what the peer receives, why OnClose says its connection closed,
// and what the engine counts must be the same on both.
func TestPeerBehaviours(t *testing.T) {
	bulk := bytes.Repeat([]byte{'b'}, 8<<20)
	answerBulk := func(c Conn) Action {
		c.Discard(-1)
		c.Write(bulk)
		return None
	}
	tests := []struct {
		name string
		opts []Option
		// traffic, if set, is the server's OnTraffic; it echoes otherwise.
		traffic func(c Conn) Action
		// peer plays the client, and returns what it received.
		peer func(t *testing.T, eng Engine, addr string, h *lifetimes) int
		// opens is how many connections the handler must see.
		opens int
	}{
		{"resets mid-upload", nil, func(c Conn) Action { c.Discard(-1); return None },
			func(t *testing.T, _ Engine, addr string, h *lifetimes) int {
				c := dial(t, addr).(*net.TCPConn)
				h.next(t)
				_, err := c.Write(bulk[:1<<20])
				require.NoError(t, err)
				require.NoError(t, c.SetLinger(0))
				c.Close()
				return 0
			}, 1},
		{"half-closes, then reads the answer", nil, func(c Conn) Action {
			if c.InboundBuffered() == 2 {
				c.Discard(-1)
				c.Write(bulk)
			}
			return None
		}, func(t *testing.T, _ Engine, addr string, h *lifetimes) int {
			c := dialSmall(t, addr)
			_, err := c.Write([]byte("go"))
			require.NoError(t, err)
			require.NoError(t, c.CloseWrite())
			got, err := readSlowly(c, 64<<10, 0)
			require.NoError(t, err)
			return len(got)
		}, 1},
		{"never reads", []Option{WithWriteTimeout(200 * time.Millisecond)}, answerBulk,
			func(t *testing.T, _ Engine, addr string, h *lifetimes) int {
				c := dialSmall(t, addr)
				_, err := c.Write([]byte("go"))
				require.NoError(t, err)
				h.waitClosed(t, h.next(t))
				return 0
			}, 1},
		{"sends more than is read", []Option{WithMaxInboundBuffered(64 << 10)}, func(c Conn) Action { return None },
			func(t *testing.T, _ Engine, addr string, h *lifetimes) int {
				c := dial(t, addr)
				c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				c.Write(bulk[:1<<20]) // fails once the server closes
				h.waitClosed(t, h.next(t))
				return 0
			}, 1},
		{"stays idle", []Option{WithIdleTimeout(200 * time.Millisecond)}, nil,
			func(t *testing.T, _ Engine, addr string, h *lifetimes) int {
				c := dial(t, addr)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := c.Read(make([]byte, 1))
				require.ErrorIs(t, err, io.EOF)
				return n
			}, 1},
		{"stalls in its PROXY header", []Option{WithProxyProtocol(ProxyRequired, 200*time.Millisecond)}, nil,
			func(t *testing.T, eng Engine, addr string, h *lifetimes) int {
				c := dial(t, addr)
				_, err := c.Write([]byte("PROXY TCP4 192.0.2.1"))
				require.NoError(t, err)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := c.Read(make([]byte, 1))
				require.ErrorIs(t, err, io.EOF)
				waitFor(t, 5*time.Second, func() bool { return eng.Stats().Conns == 0 },
					func() string { return "the connection is still counted" })
				return n
			}, 0},
		{"is killed while it streams", nil, answerBulk,
			func(t *testing.T, eng Engine, addr string, h *lifetimes) int {
				c := dialSmall(t, addr)
				_, err := c.Write([]byte("go"))
				require.NoError(t, err)
				first := make([]byte, 1)
				_, err = io.ReadFull(c, first)
				require.NoError(t, err)
				require.NoError(t, eng.Kill(h.next(t)))
				_, err = readSlowly(c, 64<<10, 0)
				require.ErrorIs(t, err, syscall.ECONNRESET)
				return 0
			}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newLifetimes()
				h.traffic = tt.traffic
				eng, addr := serve(t, h, append([]Option{p, WithNumEventLoop(1)}, tt.opts...)...)
				got := tt.peer(t, eng, addr, h)
				waitFor(t, 10*time.Second, func() bool { return eng.Stats().Conns == 0 },
					func() string { return fmt.Sprintf("%d connections still open", eng.Stats().Conns) })
				h.mu.Lock()
				var closed []string
				for _, cl := range h.closed {
					closed = append(closed, errName(cl.err))
				}
				h.mu.Unlock()
				assert.Len(t, closed, tt.opens, "OnClose calls")
				return outcome{Delivered: []int{got}, Closed: closed, Stats: comparable(eng.Stats())}
			})
		})
	}
}

// closer echoes, and closes after answering when close is set.
type closer struct {
	BuiltinEventEngine
	close bool
}

func (h closer) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	c.Write(b)
	if h.close {
		return Close
	}
	return None
}

// BenchmarkConnectEchoClose is B-1's shape in one process: connect, one
// 64-byte round trip, close, with the client closing first or the server,
// and the lingering close on (the default) and off: what lingering costs a
// connection that lives for one request.
func BenchmarkConnectEchoClose(b *testing.B) {
	msg := make([]byte, 64)
	for _, k := range pollerNames {
		for _, serverCloses := range []bool{false, true} {
			for _, linger := range []time.Duration{DefaultLingerTimeout, 0} {
				name := fmt.Sprintf("%s/server-closes=%v/linger=%v", k, serverCloses, linger)
				b.Run(name, func(b *testing.B) {
					if k == poller.IOUring {
						skipWithoutRing(b)
					}
					_, addr := serve(b, closer{close: serverCloses}, WithPoller(k), WithNumEventLoop(1),
						WithLingeringClose(linger, DefaultLingerBytes))
					got := make([]byte, 64)
					for b.Loop() {
						fd, err := connectRaw(addr)
						require.NoError(b, err)
						_, err = unix.Write(fd, msg)
						require.NoError(b, err)
						for n := 0; n < len(got); {
							m, err := unix.Read(fd, got[n:])
							if err == unix.EINTR {
								continue
							}
							require.Positive(b, m, "read: %v", err)
							n += m
						}
						unix.Close(fd)
					}
				})
			}
		}
	}
}

// A handler that bounds its own output below the high-water mark, and so
// is never paused, is called again once that output has drained.
func TestHandlerBoundBelowTheMarkIsCalledAgain(t *testing.T) {
	const requests, size = 50, 4 << 10
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &pipeliner{lifetimes: newLifetimes(), reply: bytes.Repeat([]byte{'r'}, size), limit: 16 << 10}
		_, addr := serve(t, h, p, WithNumEventLoop(1))
		c := dialSmall(t, addr)
		_, err := c.Write(bytes.Repeat([]byte{'q'}, requests))
		require.NoError(t, err)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, requests*size)
		n, err := io.ReadFull(c, got)
		require.NoError(t, err, "%d of %d answers", n/size, requests)
		return outcome{Delivered: []int{n}}
	})
}

// twoStep answers a 'B' with a megabyte, flushed at once so that reading
// pauses, and leaves what follows; a 'Q' it is offered later closes.
type twoStep struct{ *lifetimes }

func (h twoStep) OnTraffic(c Conn) Action {
	b, _ := c.Peek(1)
	switch {
	case len(b) == 1 && b[0] == 'B':
		c.Discard(1)
		c.Write(make([]byte, 1<<20))
		c.Flush()
	case len(b) == 1 && b[0] == 'Q':
		c.Discard(1)
		return Close
	}
	return None
}

// A connection that closes after its held bytes were handed over lingers
// with a receive armed: the peer's FIN ends the close at once, not the
// linger bound.
func TestLingerAfterHandOver(t *testing.T) {
	const linger = 3 * time.Second
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := twoStep{newLifetimes()}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithLingeringClose(linger, 1<<20), WithSocketSendBuffer(32<<10))
		c := dialSmall(t, addr)
		id := h.next(t)
		_, err := c.Write([]byte("BQ"))
		require.NoError(t, err)
		got, err := readSlowly(c, 64<<10, 0)
		require.NoError(t, err)
		require.Equal(t, 1<<20, len(got))
		c.Close()
		closedAt := time.Now()
		h.waitClosed(t, id)
		h.mu.Lock()
		took := h.closed[id].at.Sub(closedAt)
		h.mu.Unlock()
		assert.Less(t, took, linger/2, "the peer's FIN went unread: the close waited for its bound")
		return outcome{}
	})
}

// waker answers 'W' with a megabyte, flushed so that reading pauses, and
// leaves the rest unread until it is woken, when it drops it.
type waker struct {
	*lifetimes
	woken  atomic.Bool
	paused chan Conn
}

func (h *waker) OnTraffic(c Conn) Action {
	if b, _ := c.Peek(1); len(b) == 1 && b[0] == 'W' {
		c.Discard(1)
		c.Write(make([]byte, 1<<20))
		c.Flush()
		h.paused <- c
	} else if h.woken.Load() {
		c.Discard(-1)
	}
	return None
}

// A peer's end of stream that arrives while its connection is paused with
// unread bytes closes the connection once its output drains, even when
// the handler took those bytes meanwhile.
func TestEndOfStreamAfterBytesTakenWhilePaused(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &waker{lifetimes: newLifetimes(), paused: make(chan Conn, 1)}
		sent := make(chan struct{})
		// OnOpen waits for the peer to have sent its bytes and its end of
		// stream, so that the first receive finds both.
		h.onOpen = func(Conn) { <-sent }
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithSocketSendBuffer(32<<10))
		c := dialSmall(t, addr)
		_, err := c.Write([]byte("WPPP"))
		require.NoError(t, err)
		require.NoError(t, c.CloseWrite())
		close(sent)
		id := h.next(t)
		sc := <-h.paused
		h.woken.Store(true)
		require.NoError(t, sc.Wake(nil))
		got, err := readSlowly(c, 64<<10, 0)
		require.NoError(t, err, "after %d bytes", len(got))
		require.Equal(t, 1<<20, len(got))
		return outcome{Closed: h.closedErrs(t, id)}
	})
}

// An empty write to another connection takes no buffer for it.
func TestEmptyWriteTakesNoBuffer(t *testing.T) {
	var other Conn // touched only on the loop
	seen, empty := make(chan struct{}, 1), make(chan bool, 1)
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		switch b, _ := c.Next(-1); string(b) {
		case "x":
			other = c
			seen <- struct{}{}
		case "e":
			other.Write(nil)
			empty <- other.(*conn).out == nil
		}
		return None
	}
	_, addr := serve(t, h, WithNumEventLoop(1))
	a, b := dial(t, addr), dial(t, addr)
	_, err := a.Write([]byte("x"))
	require.NoError(t, err)
	<-seen
	_, err = b.Write([]byte("e"))
	require.NoError(t, err)
	require.True(t, <-empty)
}
