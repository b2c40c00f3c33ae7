//go:build unix

package sluice

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"net"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ack is what ackFrames answers a whole frame with.
var ack = []byte("ok")

// ackFrames answers each whole frame, a 4-byte length and that many bytes,
// with "ok", and leaves one that has not all arrived unread, as a RESP
// server leaves a command: the engine holds it until it is whole.
func ackFrames(c Conn) Action {
	for {
		hdr, err := c.Peek(4)
		if err != nil {
			return None
		}
		n := 4 + int(binary.BigEndian.Uint32(hdr))
		if c.InboundBuffered() < n {
			return None
		}
		c.Discard(n)
		c.Write(ack)
	}
}

// frameSender dials addr and sends frames for ackFrames, from one
// shared chunk, so that clients sending large frames hold little memory of
// their own.
type frameSender struct {
	net.Conn
	chunk []byte
}

var sharedChunk = bytes.Repeat([]byte{'x'}, 1<<20)

func dialFrames(addr string) (*frameSender, error) {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(addr, "tcp://"), 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &frameSender{Conn: c, chunk: sharedChunk}, nil
}

// begin sends the header of a frame of size bytes and the first n of them.
func (s *frameSender) begin(size, n int) error {
	if _, err := s.Write(binary.BigEndian.AppendUint32(nil, uint32(size))); err != nil {
		return err
	}
	return s.body(n)
}

// body sends n bytes of a frame's body.
func (s *frameSender) body(n int) error {
	for n > 0 {
		k := min(n, len(s.chunk))
		if _, err := s.Write(s.chunk[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// acked waits for ackFrames' answer to a whole frame.
func (s *frameSender) acked() error {
	s.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, len(ack))
	if _, err := io.ReadFull(s, got); err != nil {
		return err
	}
	if !bytes.Equal(got, ack) {
		return fmt.Errorf("answered %q, not %q", got, ack)
	}
	return nil
}

// TestLargeBuffersLeave holds the engine to handing the memory of a burst
// of large requests back to the system within seconds of its end: 20
// clients each send a 64 MiB frame, which the engine holds until it is
// whole, and once all are answered resident memory must fall back to
// within twice what it was before, in under 10 s, though the loops
// allocate nothing meanwhile that would make the collector run. Run it
// without the race detector, whose shadow memory makes resident size
// meaningless: with it, the frames are smaller and only the path is
// checked.
func TestLargeBuffersLeave(t *testing.T) {
	clients, size := 20, 64<<20
	if raceEnabled {
		size = 4 << 20
	}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		h.traffic = ackFrames
		eng, addr := serve(t, h, p, WithNumEventLoop(2), WithInboundBudget(0))
		debug.FreeOSMemory()
		base := rss(t)

		var peak atomic.Uint64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					peak.Store(max(peak.Load(), rss(t)))
				}
			}
		})
		defer func() {
			close(stop)
			sampler.Wait()
		}()

		errs := make(chan error, clients)
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				s, err := dialFrames(addr)
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				if err := s.begin(size, size); err != nil {
					errs <- err
					return
				}
				errs <- s.acked()
			})
		}
		wg.Wait()
		ended := time.Now()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().InboundHeld == 0 },
			func() string {
				return fmt.Sprintf("%d inbound bytes held after every frame was answered", eng.Stats().InboundHeld)
			})
		if raceEnabled {
			return outcome{}
		}
		waitFor(t, 10*time.Second, func() bool { return rss(t) <= 2*base }, func() string {
			return fmt.Sprintf("resident memory %d MiB 10 s after the burst, %d MiB before it, %d MiB at its peak",
				rss(t)>>20, base>>20, peak.Load()>>20)
		})
		t.Logf("resident memory %d MiB before, %d MiB at the peak, %d MiB %v after the burst",
			base>>20, peak.Load()>>20, rss(t)>>20, time.Since(ended).Round(10*time.Millisecond))
		return outcome{}
	})
}

// TestLargeFrameBufferGrows holds a connection's inbound buffer, while a
// frame many reads long arrives, to moving to an array a quarter larger
// each time it fills, no more often, and never to one larger than
// WithMaxInboundBuffered.
func TestLargeFrameBufferGrows(t *testing.T) {
	size, limit := 40<<20, 48<<20
	if raceEnabled {
		size, limit = 5<<20, 6<<20
	}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		var seen []int // the capacities the handler found the buffer at; the loop's
		h := newLifetimes()
		h.traffic = func(c Conn) Action {
			if in := c.(*conn).in; in != nil && (len(seen) == 0 || cap(in.B) != seen[len(seen)-1]) {
				seen = append(seen, cap(in.B))
			}
			return ackFrames(c)
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithMaxInboundBuffered(limit), WithInboundBudget(0))
		s, err := dialFrames(addr)
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.begin(size, size))
		require.NoError(t, s.acked())
		var caps []int
		onLoopOf(t, eng, 0, func() { caps = slices.Clone(seen) })
		require.NotEmpty(t, caps)
		moves, steps := len(caps)-1, 0
		for c := caps[0]; c < limit; c += c / 4 {
			steps++
		}
		assert.LessOrEqual(t, moves, steps+1, "the buffer moved from %d bytes to %d in %d steps: %v",
			caps[0], caps[len(caps)-1], moves, caps)
		assert.LessOrEqual(t, slices.Max(caps), limit, "the buffer grew past WithMaxInboundBuffered")
		return outcome{}
	})
}

// TestLargeBuffersAreNotPooled holds the engine to letting go of the
// buffers a large frame grew, rather than pooling them: each is counted as
// let go, while small ones go back to their pool uncounted.
func TestLargeBuffersAreNotPooled(t *testing.T) {
	h := newLifetimes()
	h.traffic = ackFrames
	eng, addr := serve(t, h, WithNumEventLoop(1))
	e := eng.e
	s, err := dialFrames(addr)
	require.NoError(t, err)
	defer s.Close()

	// A frame the first read holds whole: no buffer of the connection's own.
	require.NoError(t, s.begin(100, 100))
	require.NoError(t, s.acked())
	small := e.mem.freed.Load()

	size := 4 * e.opts.maxPooled()
	require.NoError(t, s.begin(size, size))
	require.NoError(t, s.acked())
	// Let go: the buffer the frame filled, and each array it outgrew past
	// the ceiling.
	assert.Greater(t, e.mem.freed.Load()-small, int64(size), "large buffers let go")
	assert.Zero(t, eng.Stats().InboundHeld)
	for range 64 {
		b := e.inPool.Get()
		require.LessOrEqual(t, cap(b.B), e.opts.maxPooled(), "a buffer past the ceiling was pooled")
		defer e.inPool.Put(b)
	}
}

// TestReleaseMemoryOff holds WithReleaseMemory(false) to its word: the
// engine forces no collection however many large buffers go, while the
// same burst with the default forces one. Forced collections are counted
// by the runtime (debug.FreeOSMemory is one), so the test sees exactly
// what a program that tunes its own collector would.
func TestReleaseMemoryOff(t *testing.T) {
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	burst := func(addr string) {
		for range 3 {
			s, err := dialFrames(addr)
			require.NoError(t, err)
			require.NoError(t, s.begin(8<<20, 8<<20))
			require.NoError(t, s.acked())
			s.Close()
		}
	}
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprint("release=", release), func(t *testing.T) {
			h := newLifetimes()
			h.traffic = ackFrames
			eng, addr := serve(t, h, WithReleaseMemory(release), WithInboundBudget(0))
			before := forced()
			burst(addr)
			waitFor(t, 10*time.Second, func() bool { return eng.Stats().InboundHeld == 0 },
				func() string { return "the frames' buffers are still held" })
			if release {
				waitFor(t, 10*time.Second, func() bool { return forced() > before },
					func() string { return "no collection forced after 24 MiB of large buffers went" })
				return
			}
			// The reclaimer would have run within reclaimWait plus
			// reclaimGap of the last buffer going.
			assert.True(t, holdsFor(reclaimWait+reclaimGap+time.Second, func() bool { return forced() == before }),
				"a collection was forced with WithReleaseMemory(false)")
		})
	}
}

// WithWipeBuffers: the bytes a handler leaves unread, kept while more
// arrive, leave nothing behind when the connection's buffer moves to a
// larger array, nor once they are consumed.
func TestWipeBuffersKeptBytesLeaveNothing(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		const chunk, chunks = 4 << 10, 16
		h := &keepUntil{want: chunk * chunks}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithWipeBuffers(true))
		c := dialRaw(t, addr)
		for i := 1; i <= chunks; i++ {
			require.NoError(t, writeAll(c.fd, bytes.Repeat([]byte("secret!!"), chunk/8)))
			waitFor(t, 5*time.Second, func() bool { return h.got.Load() >= int64(i*chunk) },
				func() string { return fmt.Sprintf("the handler has %d bytes of %d", h.got.Load(), i*chunk) })
		}
		var left int
		onLoopOf(t, eng, 0, func() {
			for _, b := range h.seen {
				if bytes.Contains(b, []byte("secret")) {
					left++
				}
			}
		})
		assert.Zero(t, left, "buffers still held a connection's kept bytes")
		return outcome{}
	})
}

// keepUntil leaves everything unread until want bytes have come, then
// consumes them all. It keeps what each call saw, past the call, only so
// that the test can look at that memory afterwards.
type keepUntil struct {
	BuiltinEventEngine
	want int
	got  atomic.Int64
	seen [][]byte // touched on the loop only
}

func (h *keepUntil) OnTraffic(c Conn) Action {
	b, _ := c.Peek(-1)
	h.seen = append(h.seen, b)
	h.got.Store(int64(len(b)))
	if len(b) >= h.want {
		c.Discard(len(b))
	}
	return None
}

// TestBufferKeptMostlyUnreadMovesSeldom holds the inbound buffer, for a
// handler that consumes in large steps while much stays unread, to moving
// seldom and never past WithMaxInboundBuffered: counting the bytes it had
// consumed, still in front of the unread ones, as room the buffer needed,
// it moved to an array of exactly the size needed, past the bound, and
// then again on every read.
func TestBufferKeptMostlyUnreadMovesSeldom(t *testing.T) {
	limit := 8 << 20
	total := 4 * limit
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		var seen []int // the capacities the handler found the buffer at; the loop's
		var got atomic.Int64
		h := newLifetimes()
		h.traffic = func(c Conn) Action {
			if in := c.(*conn).in; in != nil && (len(seen) == 0 || cap(in.B) != seen[len(seen)-1]) {
				seen = append(seen, cap(in.B))
			}
			n := c.InboundBuffered()
			if n >= limit*9/10 {
				n, _ = c.Discard(limit * 4 / 10)
				got.Add(int64(n))
			}
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithMaxInboundBuffered(limit), WithInboundBudget(0))
		client := dial(t, addr)
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < total; sent += len(chunk) {
			_, err := client.Write(chunk)
			require.NoError(t, err)
		}
		waitFor(t, 30*time.Second, func() bool { return got.Load() >= int64(total-limit) },
			func() string { return fmt.Sprintf("the handler consumed %d of %d bytes", got.Load(), total) })
		var caps []int
		onLoopOf(t, eng, 0, func() { caps = slices.Clone(seen) })
		// Each move is paid for by at least a tenth of the bound consumed.
		assert.LessOrEqual(t, len(caps)-1, 10*total/limit+bits.Len(uint(limit)), "the buffer moved %d times: %v", len(caps)-1, caps)
		assert.LessOrEqual(t, slices.Max(caps), limit, "the buffer grew past WithMaxInboundBuffered")
		return outcome{}
	})
}
