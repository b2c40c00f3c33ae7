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
//
// The hold is checked against a time the test knows the wait began
// after: the loop runs a task, then waits. A request sent once the loop
// is seen in a gathering wait, and within the gathering time of the task,
// comes within the gathering time of that wait, whatever the scheduler
// did meanwhile, and so is answered no sooner than the gathering time
// after the task. A send the scheduler delayed past that proves nothing,
// and is tried again.
func TestGatherWaitHoldsOnlyWhereItGathers(t *testing.T) {
	const d = time.Second
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(d))
		c := dialRaw(t, addr)
		c.readTimeout(t, 10*time.Second)
		c.roundTrip(t)
		gathers, tid := gathering(t, eng), 0
		if gathers {
			tid = loopThread(t, eng)
		}
		for try := 1; ; try++ {
			began := quietLoop(t, eng)
			if gathers {
				awaitGatheringWait(t, tid)
			}
			c.send(t)
			sent := time.Now()
			c.receive(t)
			answered := time.Now()
			if sent.Sub(began) >= d {
				require.Less(t, try, 5, "the request never went within the gathering time of the wait")
				continue
			}
			if gathers {
				assert.GreaterOrEqual(t, answered.Sub(began), d, "the request was not held for the gathering time")
				// Not held for long past it: the bound is a time, so
				// only a time can check it; 2 s of slack is more than a
				// round trip on loopback takes on a loaded machine under
				// the race detector.
				assert.Less(t, answered.Sub(sent), 3*d, "held past the bound")
			} else {
				// A hold would last until the gathering time after a
				// wait that began after the task: the whole gathering
				// time is the margin for a round trip.
				assert.Less(t, answered.Sub(began), d, "held where the option is ignored")
			}
			return outcome{Delivered: []int{len(c.got)}}
		}
	})
}

// quietLoop waits until eng's first loop has nothing armed that would end
// its wait early (the ring's idle timer, armed by a receive), and returns
// when it last ran a task: its next wait began after that.
func quietLoop(t testing.TB, eng Engine) time.Time {
	var began time.Time
	waitFor(t, 10*time.Second, func() bool {
		idle := false
		onLoopOf(t, eng, 0, func() { idle, began = ringIdle(eng), time.Now() })
		return idle
	}, func() string { return "the ring's idle timer stayed armed" })
	return began
}

// servedThenIdle serves echo on one loop gathering for d, makes a round
// trip over a client, and returns once the loop is past the ring's idle
// timer and has had twice the gathering time from its last task to begin
// its wait: a wait that began after that task would hold what comes next
// until the gathering time after it at least.
func servedThenIdle(t *testing.T, p Option, d time.Duration) (addr string, c *rawClient) {
	eng, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithGatherWait(d))
	c = dialRaw(t, addr)
	c.readTimeout(t, 10*time.Second)
	c.roundTrip(t)
	time.Sleep(time.Until(quietLoop(t, eng).Add(2 * d)))
	return addr, c
}

// A loop that has been waiting for longer than the gathering time answers
// the next request at once, and its reply is not held back by the wait
// that begins as it is sent. The loop has twice the gathering time from
// its last task to begin waiting, and a hold, from a wait that began after
// the task, would last until the gathering time after it: a reply that
// comes within the gathering time of the request was not held, and the
// whole gathering time, a second, is the margin for the round trip.
func TestGatherWaitLoneRequestWaitsForNothing(t *testing.T) {
	const d = time.Second
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, c := servedThenIdle(t, p, d)
		start := time.Now()
		c.roundTrip(t)
		assert.Less(t, time.Since(start), d)
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
		// A hold of the new connection's request, by a wait that began
		// with the accept or before, would last until the gathering time
		// after the connect at least. The whole gathering time, a second,
		// is the margin for the connect and the round trip.
		addr, _ := servedThenIdle(t, p, d)
		start := time.Now()
		c := dialRaw(t, addr)
		c.readTimeout(t, 10*time.Second)
		c.roundTrip(t)
		assert.Less(t, time.Since(start), d, "a new connection's first request was held")
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
		// Past the ring's idle timer, whose firing would end a wait: the
		// stop comes early in the wait that begins after the loop's last
		// task, once it has had a tenth of the gathering time to begin.
		time.Sleep(time.Until(quietLoop(t, eng).Add(d / 10)))
		start := time.Now()
		require.NoError(t, eng.Stop(context.Background()))
		took := time.Since(start)
		t.Logf("stop took %v", took)
		// A gathering time again for a turn of the drain would make it
		// two; a second short of that is the margin for the drain itself
		// on a loaded machine.
		assert.Less(t, took, 2*d, "the stop was held past the gathering time")
		return outcome{}
	})
}
