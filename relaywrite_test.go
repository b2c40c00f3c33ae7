//go:build unix && !sluice_std

package sluice

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// relayHandler pairs the connections its loop opens, each with the next,
// and relays what one of a pair sends to the other from its own OnTraffic,
// as examples/proxy does: Write, then Flush if flush is set. Like the
// proxy, it pauses a sender while its peer holds more than mark unsent,
// and resumes it on the peer's OnDrain.
type relayHandler struct {
	BuiltinEventEngine
	flush  bool
	mark   int
	alone  Conn         // opened, not yet paired; the loop's own
	paired atomic.Int32 // pairs made
	queued atomic.Int64 // the most output a peer held after a relayed write
}

func (h *relayHandler) OnOpen(c Conn) ([]byte, Action) {
	if h.alone == nil {
		h.alone = c
		return nil, None
	}
	c.SetContext(h.alone)
	h.alone.SetContext(c)
	h.alone = nil
	h.paired.Add(1)
	return nil, None
}

func (h *relayHandler) OnTraffic(c Conn) Action {
	peer, _ := c.Context().(Conn)
	b, _ := c.Next(-1)
	if _, err := peer.Write(b); err != nil {
		return Close
	}
	if h.flush && peer.Flush() != nil {
		return Close
	}
	n := peer.OutboundBuffered()
	if int64(n) > h.queued.Load() {
		h.queued.Store(int64(n))
	}
	if n > h.mark {
		c.PauseRead()
	}
	return None
}

func (h *relayHandler) OnDrain(c Conn) Action {
	c.Context().(Conn).ResumeRead()
	return None
}

// relayModes are the ways relayHandler writes to the peer.
var relayModes = []struct {
	name  string
	flush bool
}{{"write", false}, {"write+flush", true}}

// dialPair connects two raw clients to addr, which h pairs.
func dialPair(t *testing.T, addr string, h *relayHandler) (a, b *rawClient) {
	t.Helper()
	a, b = dialRaw(t, addr), dialRaw(t, addr)
	waitFor(t, 5*time.Second, func() bool { return h.paired.Load() == 1 }, func() string { return "the connections were not paired" })
	a.readTimeout(t, 5*time.Second)
	b.readTimeout(t, 5*time.Second)
	return a, b
}

// relayTrip sends a's message through the relay to b, and b's back to a.
func relayTrip(t testing.TB, a, b *rawClient) {
	a.send(t)
	b.receive(t)
	if !bytes.Equal(b.got, a.msg) {
		t.Fatal("the relay changed the message")
	}
	b.send(t)
	a.receive(t)
	if !bytes.Equal(a.got, b.msg) {
		t.Fatal("the relay changed the message")
	}
}

// A message relayed to another connection of the loop, written from the
// sender's OnTraffic with or without Flush, costs what an echo does when
// the socket takes it all: on epoll a read, a write and a wait, never a
// change of what the poller watches for (epoll_ctl); on io_uring one
// enter, whose submission carries the send, never a poll for writable and
// the turn its completion takes. A Flush asks for the write at once, which
// on io_uring is a write of its own.
func TestRelayedWriteSystemCalls(t *testing.T) {
	for _, m := range relayModes {
		t.Run(m.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				syscount.Enabled = true
				t.Cleanup(func() { syscount.Enabled = false })
				h := &relayHandler{flush: m.flush, mark: 64 << 10}
				eng, addr := serve(t, h, p, WithNumEventLoop(1))
				a, b := dialPair(t, addr, h)
				for range 100 {
					relayTrip(t, a, b) // warm up: pools, buffers
				}
				loop := eng.e.loops[0]
				const trips = 500
				began := time.Now()
				calls := fewestSystemCalls(loop, func() {
					for range trips {
						relayTrip(t, a, b)
					}
				})
				perMsg := float64(calls) / (2 * trips)
				t.Logf("%.3f system calls per relayed 64-byte message", perMsg)
				budget := 3.0 // read, write, epoll_wait
				_, polling := loop.drv.(*pollDriver)
				switch {
				case !polling && m.flush:
					budget = 2.0 // write, io_uring_enter
				case !polling:
					budget = 1.0 // io_uring_enter
				}
				if !polling {
					// The ring's idle release arms a timer once per 100 ms
					// of traffic, whose completion may take an enter of its
					// own: on a busy machine the window spans a few.
					budget += float64(time.Since(began)/(100*time.Millisecond)+1) / (2 * trips)
				}
				require.LessOrEqual(t, perMsg, budget)
				return outcome{}
			})
		})
	}
}

// A relay that writes faster than the receiving socket takes keeps every
// byte in order: a write the socket takes only part of queues the rest
// and watches for writable, the sender pauses past the mark, and the
// receiver's OnDrain resumes it. The buffers are wiped as they go back,
// so one wiped while it still holds bytes to send shows in the stream.
func TestRelayedWriteBackpressure(t *testing.T) {
	const size = 1 << 20
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i * 7 / 5)
	}
	for _, m := range relayModes {
		t.Run(m.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := &relayHandler{flush: m.flush, mark: 16 << 10}
				_, addr := serve(t, h, p, WithNumEventLoop(1), WithWriteBufferCap(16<<10), WithBackpressureMark(16<<10), WithSocketSendBuffer(4<<10), WithWipeBuffers(true))
				// The small send buffer has the relay's writes taken in part.
				a, b := dialPair(t, addr, h)
				sent := make(chan error, 1)
				go func() { sent <- writeAll(a.fd, payload) }()
				got := make([]byte, size)
				require.NoError(t, readFull(b.fd, got))
				require.NoError(t, <-sent)
				require.True(t, bytes.Equal(payload, got), "the relayed stream differs")
				require.Positive(t, h.queued.Load(), "no relayed write was ever taken in part")
				return outcome{}
			})
		})
	}
}

// readFull reads len(p) bytes from the blocking socket fd, whose reads
// time out (rawClient.readTimeout).
func readFull(fd int, p []byte) error {
	for n := 0; n < len(p); {
		m, err := unix.Read(fd, p[n:min(len(p), n+4<<10)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return fmt.Errorf("read after %d bytes: %w", n, err)
		case m == 0:
			return fmt.Errorf("read after %d bytes: %w", n, io.ErrUnexpectedEOF)
		}
		n += m
	}
	return nil
}

// A connection that closes with output queued, which a Flush from
// elsewhere on its loop then sends whole, still lingers and closes: the
// flush must not leave it watched for nothing.
func TestFlushOfAClosingConnectionCloses(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		_, addr := serve(t, h, p, WithNumEventLoop(1))
		client := dial(t, addr)
		sc := h.conn(h.next(t))
		done := make(chan error, 1)
		require.NoError(t, sc.Loop().Execute(func() {
			_, err := sc.Write([]byte("bye")) // outside a callback: queued
			c := sc.(*conn)
			c.loop.closeGraceful(c) // closing, "bye" still queued
			sc.Flush()              // sends it all, and so closes sc: ErrConnClosed
			done <- err
		}))
		require.NoError(t, <-done)
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(client)
		require.NoError(t, err, "the server's end of stream did not come")
		assert.Equal(t, "bye", string(got))
		return outcome{Delivered: []int{len(got)}}
	})
}

// A relay that writes its message to the peer and then closes the peer
// from the sender's callback delivers the whole message before the peer's
// end of stream, on io_uring too, where the send takes the peer's output
// buffer along and the close waits for its result; with the buffers wiped
// as they go back, a buffer wiped too early would show as zeros.
func TestRelayedWriteThenCloseDeliversAll(t *testing.T) {
	msg := bytes.Repeat([]byte("relayed tail "), 1000)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &relayCloser{}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithWipeBuffers(true))
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		waitFor(t, 5*time.Second, func() bool { return h.paired.Load() }, func() string { return "the connections were not paired" })
		b.readTimeout(t, 5*time.Second)
		require.NoError(t, writeAll(a.fd, msg))
		got := make([]byte, len(msg))
		require.NoError(t, readFull(b.fd, got))
		require.True(t, bytes.Equal(msg, got), "the relayed message differs")
		n, err := unix.Read(b.fd, got[:1])
		require.NoError(t, err)
		require.Zero(t, n, "no end of stream after the message")
		return outcome{Delivered: []int{len(got)}}
	})
}

// relayCloser pairs the first two connections of its loop; the first
// relays to the second until it has relayed a whole message, then closes
// the second in the same callback.
type relayCloser struct {
	BuiltinEventEngine
	first, second Conn
	relayed       int
	paired        atomic.Bool
}

func (h *relayCloser) OnOpen(c Conn) ([]byte, Action) {
	if h.first == nil {
		h.first = c
	} else {
		h.second = c
		h.paired.Store(true)
	}
	return nil, None
}

func (h *relayCloser) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	if c != h.first || h.second == nil {
		return None
	}
	if _, err := h.second.Write(b); err != nil {
		return Close
	}
	if h.relayed += len(b); h.relayed == 13000 {
		h.second.Close()
	}
	return None
}
