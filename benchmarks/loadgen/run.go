package loadgen

import (
	"time"

	"golang.org/x/sys/unix"
)

// A plan says when one worker's run starts round trips and when it stops.
type plan struct {
	until int64 // stop starting round trips at this time (on now's clock); 0 for never
	quota int64 // round trips to start in all; negative for no limit
	gap   int64 // open loop: nanoseconds between this worker's intended sends; 0 for closed loop
	span  int64 // open loop: how long the schedule runs from the worker's start (sets until)
}

// allows reports whether a run of p that has started started round trips
// may start another at t.
func (p plan) allows(started, t int64) bool {
	return (p.quota < 0 || started < p.quota) && (p.until == 0 || t < p.until)
}

// closedFor plans the closed loop for d from now, on every worker.
func closedFor(d time.Duration) func(i int) plan {
	until := now() + int64(d)
	return func(int) plan { return plan{until: until, quota: -1} }
}

// exactly plans the closed loop for n round trips in all, worker i of
// parts taking its share.
func exactly(n int64, parts int) func(i int) plan {
	return func(i int) plan {
		from, to := share(int(n), parts, i)
		return plan{quota: int64(to - from)}
	}
}

// pacedAt plans the open loop for d at rate round trips a second in all,
// over parts workers: each sends every parts/rate seconds for d from when
// it starts. The schedule, not the clock, says what is sent: a worker that
// starts late or is held up still sends every message due within d (late,
// its latency counted from when it was due), so a run sends rate*d in all
// however busy the machine.
func pacedAt(rate int, d time.Duration, parts int) func(i int) plan {
	gap := max(int64(time.Second)*int64(parts)/int64(max(rate, 1)), 1)
	return func(int) plan { return plan{span: int64(d), quota: -1, gap: gap} }
}

// start fixes a plan's schedule to a run that starts at t0.
func (p plan) start(t0 int64) plan {
	if p.span > 0 {
		p.until = t0 + p.span
	}
	return p
}

// runState is one run in progress on a worker.
type runState struct {
	plan
	t0       int64 // when the run started
	started  int64 // round trips begun
	inflight int
	live     int   // connections not closed
	slot     int64 // open loop: the next global send slot; slot s goes to connection s%len(conns)
}

func (s *runState) canStart(t int64) bool { return s.allows(s.started, t) }

// intended returns when connection i's message k is due in the open loop:
// the connections take turns, each every len(conns) slots.
func (s *runState) intended(i int, k int64, n int) int64 {
	return s.t0 + (k*int64(n)+int64(i))*s.gap
}

// run runs plan p on the worker's connections and leaves its figures in
// w.res. It returns when it has stopped starting round trips and every one in
// flight has finished, or drainTimeout after it stopped starting them.
func (w *worker) run(p plan) {
	preciseTimers()
	w.res = Result{}
	t0 := now()
	s := runState{plan: p.start(t0), t0: t0}
	for i := range w.conns {
		if w.conns[i].dead {
			continue
		}
		w.conns[i].turn = 0
		s.live++
		if s.gap == 0 && s.canStart(s.t0) {
			w.begin(&s, i, s.t0)
		}
	}
	var drainBy int64
	for {
		t := now()
		if s.gap > 0 {
			w.sendDue(&s, t)
		}
		stopping := !s.canStart(t) || s.live == 0
		if stopping && s.inflight == 0 {
			break
		}
		if stopping && drainBy == 0 {
			drainBy = t + int64(drainTimeout)
		}
		if drainBy > 0 && t >= drainBy {
			w.abandon()
			break
		}
		for _, ev := range w.wait(s.timeout(t, drainBy)) {
			w.handle(&s, int(ev.Fd), ev.Events)
		}
	}
}

// timeout returns how long the loop may wait for events at time t: until the
// next open-loop slot, the end of the run or the drain deadline.
func (s *runState) timeout(t, drainBy int64) int64 {
	next := int64(-1)
	switch {
	case drainBy > 0:
		next = drainBy
	case s.gap > 0:
		next = s.t0 + s.slot*s.gap
	case s.until > 0:
		next = s.until
	}
	if next < 0 {
		return -1
	}
	return max(next-t, 0)
}

// sendDue starts the open-loop sends whose slots have come by time t, every
// one due before the run's end even if t is past it. A connection still
// waiting for its last echo sends when that echo arrives.
func (w *worker) sendDue(s *runState, t int64) {
	n := len(w.conns)
	for ; s.t0+s.slot*s.gap <= t && s.canStart(s.t0+s.slot*s.gap); s.slot++ {
		i := int(s.slot % int64(n))
		c := &w.conns[i]
		if !c.dead && !c.busy && c.turn <= s.slot/int64(n) {
			w.begin(s, i, s.intended(i, c.turn, n))
		}
	}
}

// begin starts a round trip on connection i that counts its latency from at.
func (w *worker) begin(s *runState, i int, at int64) {
	c := &w.conns[i]
	c.stamp()
	c.sent, c.got, c.start, c.busy = 0, 0, at, true
	s.started++
	s.inflight++
	if r := c.write(); r == failed || (r == pending && w.watch(unix.EPOLL_CTL_MOD, i, true) != nil) {
		w.res.Errors.Closed++
		w.fail(s, c)
	}
}

// handle acts on the events epoll reported for connection i.
func (w *worker) handle(s *runState, i int, events uint32) {
	c := &w.conns[i]
	if c.dead {
		return
	}
	if events&unix.EPOLLOUT != 0 && c.unsent() {
		if r := c.write(); r == failed || (r == complete && w.watch(unix.EPOLL_CTL_MOD, i, false) != nil) {
			w.res.Errors.Closed++
			w.fail(s, c)
			return
		}
	}
	if events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
		return
	}
	switch c.read(w.buf, &w.res.Errors) {
	case complete:
		t := now()
		c.busy = false
		c.seq++
		c.turn++
		s.inflight--
		w.res.RoundTrips++
		w.res.Latency.Record(time.Duration(t - c.start))
		w.again(s, i, t)
	case failed:
		w.fail(s, c)
	}
}

// again starts connection i's next round trip after an echo came back at t:
// at once in the closed loop, and in the open loop if it came due (within
// the run) while the connection waited.
func (w *worker) again(s *runState, i int, t int64) {
	if s.gap == 0 {
		if s.canStart(t) {
			w.begin(s, i, t)
		}
		return
	}
	if due := s.intended(i, w.conns[i].turn, len(w.conns)); due <= t && s.canStart(due) {
		w.begin(s, i, due)
	}
}

// fail closes a connection whose round trip broke; the caller has counted
// the error.
func (w *worker) fail(s *runState, c *conn) {
	if c.busy {
		s.inflight--
	}
	s.live--
	w.kill(c)
}
