package sluice

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// A loop gathering on io_uring (WithGatherWait, up to heldMost; no other
// loop holds a wait) holds its waits: it keeps its P (the Go scheduler's)
// through them where no other P can stand in for it (GOMAXPROCS no more
// than the engine's loops). There the runtime's sysmon retakes the P of a
// loop blocked in an ordinary wait and, once it has, polls every 20µs,
// retaking nearly every wait and waking another thread to hold the P,
// which the loop then has to take back (ARCHITECTURE.md, "How the loop
// meets the Go runtime"). A held wait is made without telling the runtime
// (uring.Ring.SetHeld: the ring's raw system call), so the loop looks like
// a running goroutine, which sysmon leaves alone.
//
// While a loop holds its P, no other goroutine runs on it. So before a
// held wait the loop looks whether any goroutine is runnable (one its
// callbacks readied, a pool handler, one a timer or the network woke)
// and, if one is, passes through the scheduler first so that it runs;
// should one still be runnable, the wait is an ordinary one. A held wait
// lasts at most heldMost; one that comes back empty is followed by an
// ordinary one, so an idle loop sleeps as before. What a held wait still
// delays are goroutines that become runnable while it lasts: those a Go
// timer wakes, whose timers a held P runs only when the loop passes
// through the scheduler (every 5ms at most: yieldEvery), and those Go's
// own network poller wakes, which nothing polls while every P is held but
// the runtime's sysmon, every 10ms.
type heldWait struct {
	spare    bool // GOMAXPROCS exceeds the engine's loops: waits are not held
	capped   bool // the wait under way is held and cut to heldMost
	quiet    bool // the last capped wait brought nothing: the next is ordinary
	runnable [1]metrics.Sample
}

// heldMost is how long, at most, a wait is held: a longer one is cut to
// it, and when that brings nothing the wait after it is ordinary.
const heldMost = time.Millisecond

func (h *heldWait) init(loops int) {
	h.runnable[0].Name = "/sched/goroutines/runnable:goroutines"
	h.count(loops)
}

// count notes whether a P is spare for loops loops. GOMAXPROCS may change
// as the process runs; the loop counts again each time it yields.
func (h *heldWait) count(loops int) {
	h.spare = runtime.GOMAXPROCS(0) > loops
}

// holds reports whether the loop's next wait, which its driver could
// hold, is held, running first whatever goroutine is runnable.
func (l *eventloop) holds() bool {
	h := &l.held
	if h.spare || h.quiet {
		return false
	}
	// A pass through the scheduler runs what waits on this P, but one pass
	// in 61 takes a goroutine from the global queue first (the loop
	// itself, perhaps): hence a second.
	for range 2 {
		if !h.anyRunnable() {
			return true
		}
		l.yielded = l.now()
		runtime.Gosched()
	}
	return !h.anyRunnable()
}

// anyRunnable reports whether some goroutine waits for a P.
func (h *heldWait) anyRunnable() bool {
	metrics.Read(h.runnable[:])
	return h.runnable[0].Value.Uint64() > 0
}
