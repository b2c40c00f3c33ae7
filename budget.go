package sluice

import (
	"math"
	"runtime/debug"
	"slices"

	"github.com/sluicenet/sluice/internal/sysmem"
)

// The inbound budget bounds the bytes all connections together hold in
// their inbound buffers (WithInboundBudget), as Redis's
// maxmemory-clients bounds its clients' buffers: past it, the connections
// holding the most are closed first, until the total is back under it.
//
// A connection's share is the capacity of its own inbound buffer, c.in,
// which exists only while it keeps bytes the handler left unread (or, on
// io_uring, received while it was paused); the engine-wide sum is one
// atomic, changed only where c.in is taken, grown or given back, so a
// round trip that keeps nothing costs nothing. The loop that takes the
// total past the budget wakes the shedder, a goroutine of the engine's
// own, which asks every loop for its largest holders, closes the largest
// across all loops until what they hold covers the excess, and looks
// again once those closes are done: the budget may be passed for as long
// as that takes, by what the loops read meanwhile.

// budgetShare is the part of the memory the process may use that the
// default inbound budget is.
const budgetShare = 4

// defaultInboundBudget returns the inbound budget used when
// WithInboundBudget is not given: a quarter of the memory the process may
// use, the least of the machine's, its cgroup's limit and the Go
// runtime's soft limit (GOMEMLIMIT, debug.SetMemoryLimit); zero, no
// budget, where none of them is known.
func defaultInboundBudget() int {
	total := sysmem.Total()
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 && (total == 0 || uint64(limit) < total) {
		total = uint64(limit)
	}
	return int(min(total/budgetShare, math.MaxInt))
}

// overBudget reports whether the connections together hold more inbound
// bytes than the budget allows. A refusal of new connections while that
// holds would ask it.
func (e *engine) overBudget() bool {
	b := e.opts.inBudget
	return b > 0 && e.mem.held.Load() > int64(b)
}

// holdIn adds n, which may be negative, to the inbound bytes the engine
// holds, and wakes the shedder when that takes the total past the budget.
func (e *engine) holdIn(n int) {
	total := e.mem.held.Add(int64(n))
	if b := e.opts.inBudget; n > 0 && b > 0 && total > int64(b) {
		select {
		case e.mem.shed <- struct{}{}:
		default:
		}
	}
}

// holder is a connection that holds inbound bytes, as its loop reports it
// to the shedder.
type holder struct {
	held int
	loop *eventloop
	fd   int
	id   uint64
}

// shedder closes the largest holders of inbound bytes while the total is
// over the budget, until the engine's loops have stopped.
func (e *engine) shedder() {
	for {
		select {
		case <-e.mem.quit:
			return
		case <-e.mem.shed:
		}
		for e.overBudget() && e.shedRound() {
		}
	}
}

// shedRound closes the connections that hold the most inbound bytes, across
// all loops, until what they held covers the excess over the budget, and
// returns once their loops have closed them. It reports false when there
// was nothing to close, or a loop no longer runs.
func (e *engine) shedRound() bool {
	excess := e.mem.held.Load() - int64(e.opts.inBudget)
	reports := make(chan []holder, len(e.loops))
	asked := 0
	for _, l := range e.loops {
		if l.post(executeTask(func() { reports <- l.holders(excess) })) == nil {
			asked++
		}
	}
	var all []holder
	for range asked {
		all = append(all, <-reports...)
	}
	slices.SortFunc(all, func(a, b holder) int { return b.held - a.held })
	excess = e.mem.held.Load() - int64(e.opts.inBudget)
	n, sum := 0, int64(0)
	for ; n < len(all) && sum < excess; n++ {
		sum += int64(all[n].held)
	}
	if n == 0 {
		return false
	}
	done := make(chan struct{}, n)
	posted := 0
	for _, h := range all[:n] {
		if h.loop.post(executeTask(func() { h.loop.shed(h.fd, h.id); done <- struct{}{} })) == nil {
			posted++
		}
	}
	for range posted {
		<-done
	}
	return posted == n && asked == len(e.loops)
}

// executeTask returns a task that runs fn on the loop it is posted to.
func executeTask(fn func()) *task {
	t := newTask(taskExecute, nil)
	t.fn = fn
	return t
}

// holders returns the loop's connections that hold inbound bytes, largest
// first, as many as it takes to hold excess bytes, or all of them.
func (l *eventloop) holders(excess int64) []holder {
	var hs []holder
	for _, c := range l.conns {
		if c != nil && c.in != nil && c.state != stateClosed {
			hs = append(hs, holder{held: cap(c.in.B), loop: l, fd: c.fd, id: c.id})
		}
	}
	slices.SortFunc(hs, func(a, b holder) int { return b.held - a.held })
	sum := int64(0)
	for i, h := range hs {
		if sum >= excess {
			return hs[:i]
		}
		sum += int64(h.held)
	}
	return hs
}

// shed resets the connection at fd for holding too many of the engine's
// inbound bytes, if it is still id: it may have closed since its loop
// reported it.
func (l *eventloop) shed(fd int, id uint64) {
	if fd < len(l.conns) && l.conns[fd] != nil && l.conns[fd].id == id {
		l.counts.add(countInboundOverBudget)
		l.reset(l.conns[fd], ErrInboundOverBudget)
	}
}
