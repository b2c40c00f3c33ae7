package sluice

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"
)

// Large buffers leave. A connection's inbound or outbound buffer that grew
// past maxPooled for one large message is not pooled when it empties: a
// pool keeps what it holds until two garbage collections have passed, and
// a loop that allocates nothing gives the collector no reason to run, so
// a burst of large requests stayed resident for minutes, until the
// runtime's periodic collections. The engine counts the large arrays it
// lets go (emptied buffers, the arrays a growing inbound buffer leaves
// behind, the loop's write buffers a burst grew), and once they pass
// reclaimAt a goroutine of its own, never a loop, hands the memory back to
// the system with debug.FreeOSMemory: a collection, then every free page
// returned. It waits until large arrays have stopped going for a moment,
// so that it does not hand back pages a burst still under way takes again
// at once, and runs at most once a second, and no more often than every
// reclaimShare times as long as its last run took, so that a stream of
// large requests over a large live heap costs a bounded share of a core.

// maxPooled is the capacity above which an emptied connection buffer is
// let go rather than pooled: four read buffers, which holds a frame that
// straddles a few reads, at least 256 KiB.
func (o *options) maxPooled() int {
	return max(4*o.readBufferCap, 256<<10)
}

const (
	// reclaimAt is how many bytes of large buffers let go make the engine
	// hand memory back to the system.
	reclaimAt = 16 << 20
	// reclaimQuiet is how long after the last large buffer went the
	// memory goes back, and reclaimWait how long at most, while large
	// buffers keep going: a reclaim in the middle of a burst hands back
	// pages the burst takes again at once.
	reclaimQuiet = 250 * time.Millisecond
	reclaimWait  = time.Second
	// reclaimGap is the shortest time between two reclaims, and
	// reclaimShare how many times its last reclaim's duration an engine
	// waits before the next at least.
	reclaimGap   = time.Second
	reclaimShare = 5
)

// memory is what an engine knows of the memory its connections hold:
// inbound bytes and unsent output held (budget.go) and large buffers let
// go.
type memory struct {
	// held is the capacity of every connection's inbound buffer, summed;
	// each connection's share is cap(c.in.B), so a conn needs no field of
	// its own for it. Padded: every loop adds to it.
	_    [64]byte
	held atomic.Int64
	_    [56]byte
	// out is every connection's unsent output, summed; each connection's
	// share is c.held. Padded too.
	out atomic.Int64
	_   [56]byte
	// freed counts the bytes of large buffers let go since the last
	// reclaim.
	freed   atomic.Int64
	reclaim chan struct{} // wakes the reclaimer
	shed    chan struct{} // wakes the shedder (budget.go)
	quit    chan struct{} // closed once the loops have stopped
	helpers sync.WaitGroup
}

// startHelpers starts the goroutines that watch the engine's memory: the
// reclaimer, and the shedder when there is an inbound budget. The function
// it returns stops them, once the loops have stopped.
func (e *engine) startHelpers() (stop func()) {
	m := &e.mem
	m.quit = make(chan struct{})
	if !e.opts.keepMemory {
		m.reclaim = make(chan struct{}, 1)
		m.helpers.Go(e.reclaimer)
	}
	if e.opts.inBudget > 0 || e.opts.outBudget > 0 {
		m.shed = make(chan struct{}, 1)
		m.helpers.Go(e.shedder)
	}
	return func() {
		close(m.quit)
		m.helpers.Wait()
	}
}

// recycle puts b, emptied, back in pool p, zeroed first WithWipeBuffers,
// or lets it go if it grew too large to be worth keeping.
func (e *engine) recycle(p *bytebufferpool.Pool, b *bytebufferpool.ByteBuffer) {
	if e.opts.wipe {
		clear(b.B[:cap(b.B)])
	}
	if n := cap(b.B); n > e.opts.maxPooled() {
		e.letGo(n)
		return
	}
	p.Put(b)
}

// letGo counts n bytes of a large buffer no longer referenced, and wakes
// the reclaimer, if there is one, once enough have gone.
func (e *engine) letGo(n int) {
	if e.mem.reclaim != nil && e.mem.freed.Add(int64(n)) >= reclaimAt {
		select {
		case e.mem.reclaim <- struct{}{}:
		default:
		}
	}
}

// reclaimer hands memory back to the system when woken: once large
// buffers have stopped going for reclaimQuiet, or reclaimWait after it
// was woken if they keep going, and no sooner than reclaimGap, or
// reclaimShare times the last reclaim's duration, after the last. It
// returns once the engine's loops have stopped.
func (e *engine) reclaimer() {
	m := &e.mem
	var next time.Time // when the next reclaim may run
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	sleep := func(d time.Duration) bool {
		wait.Reset(d)
		select {
		case <-m.quit:
			wait.Stop()
			return false
		case <-wait.C:
			return true
		}
	}
	for {
		select {
		case <-m.quit:
			return
		case <-m.reclaim:
		}
		woken := time.Now()
		for {
			seen := m.freed.Load()
			if !sleep(reclaimQuiet) {
				return
			}
			if m.freed.Load() == seen || time.Since(woken) >= reclaimWait {
				break
			}
		}
		if d := time.Until(next); d > 0 && !sleep(d) {
			return
		}
		if n := m.freed.Swap(0); n < reclaimAt {
			m.freed.Add(n) // a wake-up from before the last reclaim
			continue
		}
		start := time.Now()
		debug.FreeOSMemory()
		took := time.Since(start)
		next = time.Now().Add(max(reclaimGap, reclaimShare*took))
	}
}
