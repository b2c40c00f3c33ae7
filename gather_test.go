//go:build unix

package sluice

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request that comes soon after a loop began to wait is held, where the
// loop gathers (io_uring on Linux 6.12), until the gathering time has
// passed since the wait began, and no longer; elsewhere the option is
// ignored and it is answered at once. Either way every echo comes back.
func TestGatherWaitHoldsOnlyWhereItGathers(t *testing.T) {
	const d = time.Second
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(d))
		c := dialRaw(t, addr)
		c.readTimeout(t, 10*time.Second)
		c.roundTrip(t)
		// On io_uring the receive arms the ring's timer for idle buffers
		// (ringIdleRelease), which ends the wait as it fires: the request
		// comes after it, early in the wait that begins then.
		time.Sleep(ringIdleWait)
		start := time.Now()
		c.roundTrip(t)
		took := time.Since(start)
		if gathering(t, eng) {
			assert.GreaterOrEqual(t, took, d/2, "the request was not held for more")
			assert.Less(t, took, 3*d, "held past the bound")
		} else {
			assert.Less(t, took, d/2, "held where the option is ignored")
		}
		return outcome{Delivered: []int{len(c.got)}}
	})
}

// A loop that has been waiting for longer than the gathering time answers
// the next request at once, and its reply is not held back by the wait
// that begins as it is sent.
func TestGatherWaitLoneRequestWaitsForNothing(t *testing.T) {
	const d = 300 * time.Millisecond
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(d))
		c := dialRaw(t, addr)
		c.readTimeout(t, 10*time.Second)
		c.roundTrip(t)
		time.Sleep(d + d/2) // the loop's wait outlasts the gathering time
		start := time.Now()
		c.roundTrip(t)
		assert.Less(t, time.Since(start), d/2)
		return outcome{Delivered: []int{len(c.got)}}
	})
}

// A loop with tasks queued does not wait for more events: a chain of
// tasks, each posted by the last from the loop itself, runs through
// without a gathering wait between them, which, with no event to end it,
// would last until the next event.
func TestGatherWaitQueuedTasksDoNotWait(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, _ := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(time.Second))
		lp := eng.Loop(0)
		done := make(chan struct{})
		left := 1000
		var next func()
		next = func() {
			if left--; left == 0 {
				close(done)
				return
			}
			require.NoError(t, lp.Execute(next))
		}
		require.NoError(t, lp.Execute(next))
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d tasks of 1000 still to run after 10 s", left)
		}
		return outcome{}
	})
}

// Out of range, the option turns gathering off or caps it.
func TestWithGatherWaitRange(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		-time.Second: 0, 0: 0, time.Nanosecond: 0, time.Microsecond: time.Microsecond,
		20 * time.Microsecond: 20 * time.Microsecond, time.Minute: time.Second,
	} {
		o := defaultOptions()
		WithGatherWait(d)(&o)
		assert.Equal(t, want, o.gatherWait, "WithGatherWait(%v)", d)
	}
}

// A gathering loop that holds its P through its waits leaves it to other
// goroutines all the same: with a single P, clients in goroutines of the
// same process still get their round trips through.
func TestGatherWaitSharesTheP(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(100*time.Microsecond))
		const clients, trips = 5, 50
		var wg sync.WaitGroup
		done := make([]int, clients)
		for i := range clients {
			c := dial(t, addr)
			wg.Go(func() {
				c.SetDeadline(time.Now().Add(20 * time.Second))
				msg, got := []byte("gathered"), make([]byte, len("gathered"))
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

// tickCounter counts its OnTick calls, each asking for the next in
// tickEvery.
type tickCounter struct {
	echoHandler
	ticks atomic.Int64
}

const tickEvery = 10 * time.Millisecond

func (h *tickCounter) OnTick() (time.Duration, Action) {
	h.ticks.Add(1)
	return tickEvery, None
}

// The loop's timers are not held back by gathering: a wait whose next
// timer is due within the gathering time ends when the timer is due, so
// an idle loop's OnTick, every 10ms, keeps time where the loop gathers for
// a second, rather than running once a gathering time.
func TestGatherWaitKeepsTimers(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &tickCounter{}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithTicker(true), WithGatherWait(time.Second))
		c := dialRaw(t, addr)
		c.readTimeout(t, 10*time.Second)
		c.roundTrip(t)
		from := h.ticks.Load()
		waitFor(t, 5*time.Second, func() bool { return h.ticks.Load()-from >= 50 },
			func() string { return fmt.Sprintf("%d ticks of 10ms in 5s", h.ticks.Load()-from) })
		return outcome{}
	})
}

// A new connection's first request, sent as it connects, is answered at
// once by a loop that was idle for longer than the gathering time: the
// receive armed for it as it is accepted is not held for a gathering time
// that began with the accept.
func TestGatherWaitNewConnAnsweredAtOnce(t *testing.T) {
	const d = time.Second
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(d))
		warm := dialRaw(t, addr)
		warm.readTimeout(t, 10*time.Second)
		warm.roundTrip(t)
		time.Sleep(d + ringIdleWait) // past the gathering time and the ring's idle timer
		start := time.Now()
		c := dialRaw(t, addr)
		c.readTimeout(t, 10*time.Second)
		c.roundTrip(t)
		assert.Less(t, time.Since(start), d/2, "a new connection's first request was held")
		return outcome{Delivered: []int{len(c.got)}}
	})
}

// A stop asked of a gathering loop early in its wait waits with the
// events, and for no more than the gathering time: not a gathering time
// again for each turn of its drain.
func TestGatherWaitStopsWithinTheBound(t *testing.T) {
	const d = time.Second
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(d))
		for range 4 {
			c := dialRaw(t, addr)
			c.readTimeout(t, 10*time.Second)
			c.roundTrip(t)
		}
		// Past the ring's idle timer, whose firing ends a wait: the stop
		// comes early in the wait that begins then.
		time.Sleep(ringIdleWait)
		start := time.Now()
		require.NoError(t, eng.Stop(context.Background()))
		took := time.Since(start)
		t.Logf("stop took %v", took)
		assert.Less(t, took, d+d/2, "the stop was held past the gathering time")
		return outcome{}
	})
}
