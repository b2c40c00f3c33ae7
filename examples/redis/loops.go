package main

import (
	"math"
	"sync"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/wheel"
)

// loopState is what the server keeps for each event loop: work other
// loops hand it for its clients. A client belongs to one loop, whose
// goroutine alone touches the client's own state (its subscriptions, its
// blocked command, its transaction); another loop that has something for
// it posts it here, and the loop takes it up between callbacks
// (sluice.Loop.Execute), as it would a read.
type loopState struct {
	srv  *server
	loop sluice.Loop

	// The buffer the replies of a batch of commands gather in, one per
	// loop, so that an idle connection holds none; the batch running
	// holds it (call.begin), and it is nil meanwhile.
	replies []byte

	// Pub/sub messages for this loop's clients, posted by publishers on
	// other loops and written in one task, however many were posted
	// before it ran.
	mu      sync.Mutex
	inbox   []delivery
	spare   []delivery // the inbox's other array, the loop's own
	posted  bool       // a task to drain the inbox is on its way
	drainFn func()

	// The timeouts of its blocked clients, on a timing wheel of its own,
	// which a runtime timer set for the wheel's next deadline advances by
	// posting to the loop: a blocked client times out on its loop, to the
	// wheel's 10 ms. All the loop's.
	wheel  *wheel.Wheel
	timer  *time.Timer
	armed  int64              // when timer fires, on the clock; 0 when it is not set
	timed  map[uint64]*waiter // by their timers' handles
	handle uint64             // the last handle given
	tickFn func()
}

func newLoopState(s *server, lp sluice.Loop) *loopState {
	ls := &loopState{srv: s, loop: lp, timed: make(map[uint64]*waiter)}
	ls.drainFn, ls.tickFn = ls.drain, ls.tick
	return ls
}

// clock returns the time on the server's monotonic clock, in nanoseconds
// since it started, as the wheel counts it.
func (ls *loopState) clock() int64 { return int64(time.Since(ls.srv.started)) }

// startTimer times w out after ms milliseconds.
func (ls *loopState) startTimer(w *waiter, ms int64) {
	now := ls.clock()
	if ls.wheel == nil {
		ls.wheel = wheel.New(wheel.DefaultTick, now)
	}
	deadline := now + min(ms, math.MaxInt64/int64(time.Millisecond)-now/int64(time.Millisecond)-1)*int64(time.Millisecond)
	ls.handle++
	w.handle = ls.handle
	ls.timed[w.handle] = w
	w.timer = ls.wheel.Insert(deadline, w.handle)
	ls.arm(now)
}

// stopTimer forgets w's timer, if it has one.
func (ls *loopState) stopTimer(w *waiter) {
	if w.handle == 0 {
		return
	}
	ls.wheel.Cancel(w.timer)
	delete(ls.timed, w.handle)
	w.handle = 0
}

// arm sets the runtime timer for the wheel's next deadline, unless it is
// set for one as early.
func (ls *loopState) arm(now int64) {
	next, ok := ls.wheel.Next()
	if !ok || (ls.armed != 0 && ls.armed <= next) {
		return
	}
	ls.armed = next
	if ls.timer == nil {
		ls.timer = time.AfterFunc(time.Duration(next-now), ls.ring)
	} else {
		ls.timer.Reset(time.Duration(next - now))
	}
}

// ring runs on the runtime's timer goroutine, and has the loop tick.
func (ls *loopState) ring() { ls.loop.Execute(ls.tickFn) }

// tick times out the waiters whose time is up, on the loop.
func (ls *loopState) tick() {
	ls.armed = 0
	now := ls.clock()
	ls.wheel.Advance(now, ls.fire)
	ls.arm(now)
}

func (ls *loopState) fire(handle uint64) {
	w := ls.timed[handle]
	delete(ls.timed, handle)
	w.handle = 0
	w.timeout()
}

// stop stops the runtime timer, as the engine shuts down.
func (ls *loopState) stop() {
	if ls.timer != nil {
		ls.timer.Stop()
	}
}

// delivery is a message for a client: its bytes, ready to write, and the
// subscription it came through, checked again on the client's loop, since
// the client may have dropped it since it was published.
type delivery struct {
	cl   *client
	msg  []byte
	kind subKind
	name string // the channel or pattern
}

// post hands d to the loop, from another, without waiting for it.
func (ls *loopState) post(d delivery) {
	ls.mu.Lock()
	ls.inbox = append(ls.inbox, d)
	first := !ls.posted
	ls.posted = true
	ls.mu.Unlock()
	if first && ls.loop.Execute(ls.drainFn) != nil {
		// The engine is stopping, and the clients with it.
		ls.mu.Lock()
		ls.posted = false
		ls.mu.Unlock()
	}
}

// drain writes the messages posted for the loop's clients, on the loop.
func (ls *loopState) drain() {
	ls.mu.Lock()
	batch := ls.inbox
	ls.inbox, ls.spare, ls.posted = ls.spare, nil, false
	ls.mu.Unlock()
	for i := range batch {
		d := &batch[i]
		if !d.cl.subscribed(d.kind, d.name) || !d.cl.gather(d.msg) {
			d.cl.pending.Add(-int64(len(d.msg)))
		}
		*d = delivery{}
	}
	ls.spare = batch[:0]
}
