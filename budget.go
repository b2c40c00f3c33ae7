package sluice

import (
	"math"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/sluicenet/sluice/internal/sysmem"
)

// The budgets bound the bytes all connections together hold, as Redis's
// maxmemory-clients bounds its clients' buffers: the inbound budget
// (WithInboundBudget) what their inbound buffers hold, the outbound budget
// (WithOutboundBudget) their unsent output. Past either, the connections
// holding the most of it are closed first, until the total is back under
// it.
//
// A connection's inbound share is the capacity of its own inbound buffer,
// c.in, which exists only while it keeps bytes the handler left unread (or,
// on io_uring, received while it was paused); its outbound share is its
// unsent output as watch last stored it in c.held. Each engine-wide sum is
// one atomic, changed only where its share changes, so a round trip that
// keeps nothing costs nothing. The loop that takes a total past its budget
// wakes the shedder, a goroutine of the engine's own, which asks every
// loop for its largest holders, closes the largest across all loops until
// what they hold covers the excess, and looks again once those closes are
// done: a budget may be passed for as long as that takes, by what the
// loops read or queue meanwhile.

// budget is one of the engine's two bounds on what all its connections
// hold together.
type budget struct {
	limit int           // zero: none
	sum   *atomic.Int64 // what the connections hold, all together
	share func(*conn) int
	err   error   // what OnClose receives for a connection shed
	count counter // and the count of them
}

// budgets returns the engine's inbound and outbound budgets.
func (e *engine) budgets() [2]budget {
	return [2]budget{
		{e.opts.inBudget, &e.mem.held, inboundShare, ErrInboundOverBudget, countInboundOverBudget},
		{e.opts.outBudget, &e.mem.out, outboundShare, ErrOutboundOverBudget, countOutboundOverBudget},
	}
}

// inboundShare is what c holds of the inbound budget.
func inboundShare(c *conn) int {
	if c.in == nil {
		return 0
	}
	return cap(c.in.B)
}

// outboundShare is what c holds of the outbound budget.
func outboundShare(c *conn) int { return int(c.held.Load()) }

// over reports whether the connections hold more than b allows.
func (b *budget) over() bool { return b.limit > 0 && b.sum.Load() > int64(b.limit) }

// budgetShare is the part of the memory the process may use that each
// default budget is.
const budgetShare = 4

// defaultBudget returns the budget used when WithInboundBudget or
// WithOutboundBudget is not given: a quarter of the memory the process may
// use, the least of the machine's, its cgroup's limit and the Go
// runtime's soft limit (GOMEMLIMIT, debug.SetMemoryLimit); zero, no
// budget, where none of them is known.
func defaultBudget() int {
	total := sysmem.Total()
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 && (total == 0 || uint64(limit) < total) {
		total = uint64(limit)
	}
	return int(min(total/budgetShare, math.MaxInt))
}

// overBudget returns the error of a budget the connections together hold
// more than, or nil. A new connection is refused while one is passed.
func (e *engine) overBudget() error {
	for _, b := range e.budgets() {
		if b.over() {
			return b.err
		}
	}
	return nil
}

// holdIn adds n, which may be negative, to the inbound bytes the engine
// holds, and wakes the shedder when that takes the total past the budget.
func (e *engine) holdIn(n int) {
	e.hold(&e.mem.held, e.opts.inBudget, int64(n))
}

// holdOut adds n, which may be negative, to the unsent output the engine
// holds, and wakes the shedder when that takes the total past the budget.
func (e *engine) holdOut(n int64) {
	e.hold(&e.mem.out, e.opts.outBudget, n)
}

// hold adds n to sum, and wakes the shedder when that takes it past limit.
func (e *engine) hold(sum *atomic.Int64, limit int, n int64) {
	if total := sum.Add(n); n > 0 && limit > 0 && total > int64(limit) {
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

// shedder closes the largest holders while a total is over its budget,
// until the engine's loops have stopped.
func (e *engine) shedder() {
	budgets := e.budgets()
	for {
		select {
		case <-e.mem.quit:
			return
		case <-e.mem.shed:
		}
		for i := range budgets {
			for b := &budgets[i]; b.over() && e.shedRound(b); {
			}
		}
	}
}

// shedRound closes the connections that hold the most of b, across all
// loops, until what they held covers the excess over it, and returns once
// their loops have closed them. It reports false when there was nothing
// to close, or a loop no longer runs.
func (e *engine) shedRound(b *budget) bool {
	excess := b.sum.Load() - int64(b.limit)
	reports := make(chan []holder, len(e.loops))
	asked := 0
	for _, l := range e.loops {
		if l.post(executeTask(func() { reports <- l.holders(b, excess) })) == nil {
			asked++
		}
	}
	var all []holder
	for range asked {
		all = append(all, <-reports...)
	}
	slices.SortFunc(all, func(a, b holder) int { return b.held - a.held })
	excess = b.sum.Load() - int64(b.limit)
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
		if h.loop.post(executeTask(func() { h.loop.shed(b, h.fd, h.id); done <- struct{}{} })) == nil {
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

// holders returns the loop's connections that hold some of b, largest
// first, as many as it takes to hold excess bytes, or all of them.
func (l *eventloop) holders(b *budget, excess int64) []holder {
	var hs []holder
	for _, c := range l.conns {
		if c == nil || c.state == stateClosed {
			continue
		}
		if n := b.share(c); n > 0 {
			hs = append(hs, holder{held: n, loop: l, fd: c.fd, id: c.id})
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

// shed resets the connection at fd for holding too much of b, if it is
// still id: it may have closed since its loop reported it.
func (l *eventloop) shed(b *budget, fd int, id uint64) {
	if fd < len(l.conns) && l.conns[fd] != nil && l.conns[fd].id == id {
		l.counts.add(b.count)
		l.reset(l.conns[fd], b.err)
	}
}
