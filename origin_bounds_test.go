//go:build unix

package sluice

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The tests in this file hold a connection the engine dialed or was
// handed (Enroll) to every bound on memory and time an accepted one has,
// against a peer that never reads: each scenario is written once and run
// for each Origin.

// origin is a way a connection comes to an engine: an Origin, and for a
// dialed one whether it is a TLS client's (DialTLS).
type origin struct {
	Origin
	tls bool
}

func (o origin) String() string {
	if o.tls {
		return o.Origin.String() + "TLS"
	}
	return o.Origin.String()
}

// connOrigins are the ways a connection comes to an engine.
var connOrigins = []origin{{Origin: Accepted}, {Origin: Dialed}, {Origin: Enrolled}, {Origin: Dialed, tls: true}}

// onEachOrigin runs scenario once for each way a connection comes to an
// engine.
func onEachOrigin(t *testing.T, scenario func(t *testing.T, o origin)) {
	for _, o := range connOrigins {
		t.Run(o.String(), func(t *testing.T) { scenario(t, o) })
	}
}

// drainCounter is lifetimes that counts OnDrain.
type drainCounter struct {
	*lifetimes
	drains atomic.Int64
}

func (h *drainCounter) OnDrain(Conn) Action {
	h.drains.Add(1)
	return None
}

// smallListener listens on loopback with a 4 KiB receive buffer, which
// the sockets it accepts inherit, so that the kernel holds little of
// what is written to a peer that reads nothing.
func smallListener(t testing.TB) net.Listener {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<10)
		})
		return err
	}}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// acceptOne returns the next connection ln accepts, closed on cleanup.
func acceptOne(t testing.TB, ln net.Listener) net.Conn {
	t.Helper()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// withPeer starts an engine with h and opts on one loop, and gives it one
// connection of origin o: accepted from a client, dialed to a listener
// (as a TLS client, whose peer is crypto/tls's server), or enrolled from a
// net.Conn dialed to one. It returns the engine, the peer's end, whose
// receive buffer is 4 KiB and which reads nothing until the test reads
// it, and the engine's Conn, once OnOpen has run for it.
func withPeer(t *testing.T, o origin, h EventHandler, ids *lifetimes, opts ...Option) (Engine, net.Conn, Conn) {
	t.Helper()
	eng, addr := serve(t, h, append(opts, WithNumEventLoop(1))...)
	var peer net.Conn
	switch {
	case o.tls:
		ln := smallListener(t)
		require.NoError(t, eng.Dial("tcp://"+ln.Addr().String(), nil, DialTLS(clientTLS(t, 0))))
		tc := tls.Server(acceptOne(t, ln), serverTLS(t))
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		require.NoError(t, tc.Handshake())
		tc.SetDeadline(time.Time{})
		peer = tc
	case o.Origin == Accepted:
		c, err := dialReadBuffer(addr, 4<<10)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		peer = c
	case o.Origin == Dialed:
		ln := smallListener(t)
		require.NoError(t, eng.Dial("tcp://"+ln.Addr().String(), nil))
		peer = acceptOne(t, ln)
	case o.Origin == Enrolled:
		ln := smallListener(t)
		nc, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		require.NoError(t, err)
		peer = acceptOne(t, ln)
		require.NoError(t, eng.Enroll(nc, nil))
	}
	c := ids.conn(ids.next(t))
	var got Origin
	onConnLoop(t, c, func() { got = c.Origin() }) // the loop's to read
	require.Equal(t, o.Origin, got)
	return eng, peer, c
}

// writeOnLoop has c's loop write what p returns to c from a callback
// (Wake's), and returns Write's error once the loop has counted what it
// queued.
func writeOnLoop(t testing.TB, c Conn, p func() []byte) error {
	t.Helper()
	var werr error
	onConnLoop(t, c, func() {
		werr = c.Wake(func(c Conn, err error) {
			if err == nil {
				_, err = c.Write(p())
			}
			werr = err
		})
	})
	onConnLoop(t, c, func() {}) // the Wake's task ran, and the output was watched
	return werr
}

// bytesOf returns a function that returns n bytes.
func bytesOf(n int) func() []byte { return func() []byte { return make([]byte, n) } }

// A connection of every origin whose peer reads nothing is held to
// WithMaxOutbound: AsyncWrite from another goroutine, and Write on the
// loop, are refused whole with ErrOutboundFull once they would pass it,
// and counted; OutboundQueued stays within it and Writable turns false.
// Once the peer reads, every byte accepted arrives, OnDrain runs, and the
// connection takes writes again.
func TestOriginsMaxOutbound(t *testing.T) {
	const hard = 256 << 10
	onEachOrigin(t, func(t *testing.T, o origin) {
		h := &drainCounter{lifetimes: newLifetimes()}
		eng, peer, c := withPeer(t, o, h, h.lifetimes, WithMaxOutbound(hard), WithSocketSendBuffer(16<<10))
		chunk := bytes.Repeat([]byte{'x'}, 32<<10)
		accepted := 0
		for {
			err := c.AsyncWrite(chunk, nil)
			if err != nil {
				require.ErrorIs(t, err, ErrOutboundFull)
				break
			}
			accepted++
			require.Less(t, accepted, 1000, "AsyncWrite never refused")
		}
		assert.LessOrEqual(t, c.OutboundQueued(), hard)
		assert.False(t, c.Writable(), "%d bytes queued", c.OutboundQueued())
		// Write on the loop is refused too, one byte past the room left,
		// and queues nothing.
		assert.ErrorIs(t, writeOnLoop(t, c, func() []byte { return make([]byte, hard-c.OutboundQueued()+1) }),
			ErrOutboundFull)
		assert.LessOrEqual(t, c.OutboundQueued(), hard)
		assert.GreaterOrEqual(t, eng.Stats().OutboundRefused, uint64(2))

		got := make([]byte, accepted*len(chunk))
		peer.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadFull(peer, got)
		require.NoError(t, err)
		waitFor(t, 10*time.Second, func() bool { return h.drains.Load() > 0 },
			func() string { return "no OnDrain once the peer read everything" })
		assert.True(t, c.Writable())
		// The count follows what the loop last saw: on the development
		// backend the socket's writer tells it a moment after sending.
		waitFor(t, 10*time.Second, func() bool { return c.OutboundQueued() == 0 },
			func() string { return fmt.Sprintf("%d bytes queued once the peer read everything", c.OutboundQueued()) })
		require.NoError(t, c.AsyncWrite(chunk, nil))
	})
}

// A connection of every origin whose peer stops reading is closed by the
// write timeout, whether its output was written in a callback or posted
// with AsyncWrite.
func TestOriginsWriteTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, posted := range []bool{false, true} {
		t.Run(fmt.Sprintf("posted=%v", posted), func(t *testing.T) {
			onEachOrigin(t, func(t *testing.T, o origin) {
				h := newLifetimes()
				eng, _, c := withPeer(t, o, h, h, WithWriteTimeout(timeout), WithSocketSendBuffer(16<<10))
				p := make([]byte, 1<<20)
				if posted {
					require.NoError(t, c.AsyncWrite(p, nil))
				} else {
					require.NoError(t, writeOnLoop(t, c, func() []byte { return p }))
				}
				_, err := h.waitClosed(t, c.ID())
				require.ErrorIs(t, err, ErrWriteTimeout)
				assert.EqualValues(t, 1, eng.Stats().WriteTimeouts)
			})
		})
	}
}

// A connection of every origin counts its unsent output in
// Stats.OutboundHeld, and is reset once that passes WithOutboundBudget.
func TestOriginsOutboundBudget(t *testing.T) {
	const mib = 1 << 20
	onEachOrigin(t, func(t *testing.T, o origin) {
		h := newLifetimes()
		eng, _, c := withPeer(t, o, h, h, WithOutboundBudget(2*mib), WithSocketSendBuffer(16<<10))
		require.NoError(t, writeOnLoop(t, c, bytesOf(mib)))
		// On io_uring the send in flight is counted once the kernel has
		// answered it, with what it took.
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().OutboundHeld > mib/2 },
			func() string { return fmt.Sprintf("%d bytes of unsent output counted", eng.Stats().OutboundHeld) })
		assert.Zero(t, eng.Stats().OutboundOverBudget, "under the budget")
		require.NoError(t, c.AsyncWrite(make([]byte, 2*mib), nil))
		_, err := h.waitClosed(t, c.ID())
		require.ErrorIs(t, err, ErrOutboundOverBudget)
		assert.EqualValues(t, 1, eng.Stats().OutboundOverBudget)
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().OutboundHeld == 0 },
			func() string { return fmt.Sprintf("%d bytes held once reset", eng.Stats().OutboundHeld) })
	})
}

// A connection of every origin whose handler paused its reading holds no
// more of what its peer sends than a read's worth, however much the peer
// sends: the rest waits in the kernel, whose buffers then stop the peer.
func TestOriginsPausedHoldsLittle(t *testing.T) {
	const sent = 8 << 20
	onEachOrigin(t, func(t *testing.T, o origin) {
		h := newLifetimes()
		eng, peer, c := withPeer(t, o, h, h)
		onConnLoop(t, c, func() { require.NoError(t, c.PauseRead()) })
		wrote := make(chan int, 1)
		go func() {
			peer.SetWriteDeadline(time.Now().Add(time.Second))
			n, _ := peer.Write(make([]byte, sent))
			wrote <- n
		}()
		n := <-wrote // the peer's write times out once the kernel's buffers are full
		assert.Less(t, n, sent, "the peer sent everything to a paused connection")
		var most int64
		assert.True(t, holdsFor(200*time.Millisecond, func() bool {
			most = max(most, eng.Stats().InboundHeld)
			return most <= 1<<20
		}), "%d bytes held for a paused connection", most)
	})
}

// A connection of every origin whose peer sends nothing and reads nothing
// is closed by the idle timeout, also while its handler has paused it.
func TestOriginsIdlePeer(t *testing.T) {
	const idle = 200 * time.Millisecond
	onEachOrigin(t, func(t *testing.T, o origin) {
		h := newLifetimes()
		eng, _, c := withPeer(t, o, h, h, WithIdleTimeout(idle))
		onConnLoop(t, c, func() { require.NoError(t, c.PauseRead()) })
		_, err := h.waitClosed(t, c.ID())
		require.ErrorIs(t, err, ErrIdleTimeout)
		assert.EqualValues(t, 1, eng.Stats().IdleTimeouts)
	})
}

// OnOpen's out is held to WithMaxOutbound as any write is, for every
// origin: one the bound refuses closes the connection, with an error
// errors.Is tells as ErrOutboundFull, rather than leave it open with its
// greeting silently dropped and the peer reading what follows as if it
// were first. One within the bound is sent whole.
func TestOriginsOpenOutPastTheBound(t *testing.T) {
	const bound = 16 << 10
	// Within the bound: half of it, leaving room for what a TLS client's
	// handshake may still have queued (on the development backend, where
	// the socket's writer holds its last flight a moment longer).
	for _, size := range []int{bound / 2, bound + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			onEachOrigin(t, func(t *testing.T, o origin) {
				greeting := bytes.Repeat([]byte{'g'}, size)
				h := &openGreeter{lifetimes: newLifetimes(), out: greeting}
				eng, peer, c := withPeer(t, o, h, h.lifetimes, WithMaxOutbound(bound))
				peer.SetReadDeadline(time.Now().Add(10 * time.Second))
				if size <= bound {
					got := make([]byte, size)
					_, err := io.ReadFull(peer, got)
					if err != nil {
						_, cerr := h.waitClosed(t, c.ID())
						t.Fatalf("%v; closed with %v", err, cerr)
					}
					return
				}
				got, err := io.ReadAll(peer) // to the end of the stream, or a reset
				require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the connection stayed open")
				assert.Empty(t, got, "bytes of a greeting the bound refused")
				_, cerr := h.waitClosed(t, c.ID())
				require.ErrorIs(t, cerr, ErrOutboundFull)
				assert.EqualValues(t, 1, eng.Stats().OutboundRefused)
			})
		})
	}
}

// openGreeter is lifetimes whose OnOpen returns out.
type openGreeter struct {
	*lifetimes
	out []byte
}

func (h *openGreeter) OnOpen(c Conn) ([]byte, Action) {
	h.lifetimes.OnOpen(c)
	return h.out, None
}
