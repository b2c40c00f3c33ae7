package sluice

import (
	"math"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/kill"
)

// maxTableSlots bounds the connection table's default capacity: 24 MiB
// of slots.
const maxTableSlots = 1 << 20

// tableCapacity returns how many connections the engine's table holds:
// WithMaxConnections' bound, or else the descriptor limit, since no more
// connections than that can be open.
func tableCapacity(o *options) int {
	if o.maxConns > 0 {
		return min(o.maxConns, math.MaxUint32-1)
	}
	n := socket.MaxFiles()
	if n == 0 || n > maxTableSlots {
		return maxTableSlots
	}
	return int(n)
}

// admit registers c, just accepted and assigned its loop, in the engine's
// connection table, which gives it its ID, and counts it against its
// source's limit. It reports false, having counted the rejection, when c
// is over a limit; the caller then closes c's descriptor. When its
// listener reads a PROXY header, the source is the client the header
// names, so c is counted against it once the header is read (proxy.go).
func (l *eventloop) admit(c *conn) bool {
	e := l.eng
	id, err := e.table.Claim(c.loop.idx, uint64(c.fd))
	if err != nil {
		l.counts.add(countRejectedMaxConns)
		return false
	}
	c.id = uint64(id)
	if c.state == stateHeader {
		return true
	}
	if !l.admitSource(c) {
		e.table.Release(id)
		return false
	}
	return true
}

// admitSource counts c against its source's limit and as accepted. It
// reports false, having counted the rejection, when the source is at its
// limit.
func (l *eventloop) admitSource(c *conn) bool {
	if !l.eng.acquireSource(c) {
		l.counts.add(countRejectedPerSource)
		return false
	}
	l.counts.add(countAccepted)
	return true
}

// acquireSource counts c against the per-source limit, keyed by its
// remote address: after a PROXY header, the original client's.
func (e *engine) acquireSource(c *conn) bool {
	if e.sources == nil || !c.remote.IsValid() {
		return true
	}
	if !e.sources.Acquire(kill.SourceKey(c.remote.Addr()), e.opts.maxConnsPerSource) {
		return false
	}
	c.flags |= flagSourced
	return true
}

// forget undoes admit for c, which has closed: its ID goes stale, and its
// source may open another connection.
func (e *engine) forget(c *conn) {
	e.table.Release(kill.ConnID(c.id))
	if c.flags&flagSourced != 0 {
		e.sources.Release(kill.SourceKey(c.remote.Addr()))
		c.flags &^= flagSourced
	}
}
