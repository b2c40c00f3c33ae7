//go:build unix

package sluice

import (
	"bytes"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syscount"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/pool"
)

// readier answers each message from another goroutine, which its
// OnTraffic readies (submit: a channel send, pool.Submit) and which writes
// the answer with AsyncWrite. That goroutine notes whether the loop had
// already begun to wait when it ran: where no P is spare, a loop holding
// its P in that wait would keep it from running until the wait ended.
type readier struct {
	BuiltinEventEngine
	loop   atomic.Pointer[eventloop]
	submit func(func())
	late   atomic.Int64 // answers whose goroutine ran once the loop waited
}

func (h *readier) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	msg := bytes.Clone(b)
	h.submit(func() {
		if h.loop.Load().sleeping.Load() {
			h.late.Add(1)
		}
		_ = c.AsyncWrite(msg, nil)
	})
	return None
}

// A goroutine that a callback readies, by a channel send or pool.Submit,
// runs before the loop's held wait, with a single P: none of them finds
// the loop waiting, so each answer it writes costs no wake-up, and no
// answer waits for a hold to end.
func TestHeldWaitRunsReadiedGoroutines(t *testing.T) {
	channel := func(t *testing.T) func(func()) {
		work := make(chan func())
		go func() {
			for f := range work {
				f()
			}
		}()
		t.Cleanup(func() { close(work) })
		return func(f func()) { work <- f }
	}
	pooled := func(t *testing.T) func(func()) {
		p, err := pool.New()
		require.NoError(t, err)
		t.Cleanup(p.Release)
		return func(f func()) { require.NoError(t, p.Submit(f)) }
	}
	for name, submitter := range map[string]func(*testing.T) func(func()){"channel": channel, "pool": pooled} {
		t.Run(name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
				h := &readier{submit: submitter(t)}
				eng, addr := serve(t, h, p, WithNumEventLoop(1), WithHeldWaits(true))
				h.loop.Store(eng.e.loops[0])
				c := dial(t, addr)
				require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
				const trips = 100
				msg, got := []byte("readied"), make([]byte, len("readied"))
				for range trips {
					_, err := c.Write(msg)
					require.NoError(t, err)
					_, err = io.ReadFull(c, got)
					require.NoError(t, err)
					require.Equal(t, msg, got)
				}
				if poller.HeldWaits { // the development backend holds no wait
					assert.Zero(t, h.late.Load(), "answers of %d whose goroutine ran once the loop waited", trips)
				}
				return outcome{}
			})
		})
	}
}

// A loop holding its waits leaves its P to other goroutines all the same:
// with a single P, clients in goroutines of the same process get their
// round trips through.
func TestHeldWaitSharesTheP(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithHeldWaits(true))
		const clients, trips = 5, 50
		var wg sync.WaitGroup
		done := make([]int, clients)
		for i := range clients {
			c := dial(t, addr)
			wg.Go(func() {
				c.SetDeadline(time.Now().Add(20 * time.Second))
				msg, got := []byte("held"), make([]byte, len("held"))
				for range trips {
					if _, err := c.Write(msg); err != nil {
						return
					}
					if _, err := io.ReadFull(c, got); err != nil {
						return
					}
					done[i]++
				}
			})
		}
		wg.Wait()
		for i, n := range done {
			assert.Equal(t, trips, n, "client %d's round trips", i)
		}
		return outcome{Delivered: done}
	})
}

// A loop with nothing to do sleeps: its held wait (heldMost) comes back
// empty once, and the wait after it is an ordinary one, which lasts until
// something comes, not a held wait a millisecond at a time.
func TestHeldWaitIdleLoopSleeps(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		syscount.Enabled = true
		t.Cleanup(func() { syscount.Enabled = false })
		_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithHeldWaits(true))
		c := dialRaw(t, addr)
		c.readTimeout(t, 10*time.Second)
		c.roundTrip(t)
		time.Sleep(ringIdleWait) // past the ring's idle timer, which wakes the loop
		before := syscount.Load()
		time.Sleep(200 * time.Millisecond)
		idle := syscount.Load() - before
		require.Less(t, idle, uint64(10), "system calls of a loop idle for 200ms")
		c.roundTrip(t)
		return outcome{}
	})
}

// Held waits are off unless asked for; with a P to spare a loop holds no
// wait, since the runtime leaves a waiting loop's P alone there.
func TestWithHeldWaits(t *testing.T) {
	o := defaultOptions()
	assert.False(t, o.heldWaits)
	WithHeldWaits(true)(&o)
	assert.True(t, o.heldWaits)
	var h heldWait
	h.count(runtime.GOMAXPROCS(0) - 1)
	assert.True(t, h.spare, "a P spare")
	h.count(runtime.GOMAXPROCS(0))
	assert.False(t, h.spare, "no P spare")
}
