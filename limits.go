package sluice

import (
	"math"
	"net"
	"net/netip"

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
		// Compared as uint64: an int cannot hold the bound on 32-bit
		// platforms, where maxConns is under it anyway.
		return int(min(uint64(o.maxConns), math.MaxUint32-1))
	}
	n := socket.MaxFiles()
	if n == 0 || n > maxTableSlots {
		return maxTableSlots
	}
	return int(n)
}

// admit registers a connection, fd just accepted from remote (zero for a
// unix socket) for the loop owner, in the engine's connection table, which
// gives it its ID, and counts it against its source's limit. It returns
// the ID and the flags to start the connection with, or why it is
// refused, having counted the refusal: ErrInboundOverBudget or
// ErrOutboundOverBudget while the connections together hold more than
// WithInboundBudget or WithOutboundBudget allows, ErrTooManyConns
// or ErrTooManyFromSource. When its listener reads a PROXY header (header),
// the source is the client the header names, so the connection is counted
// against it once the header is read (proxy.go). No conn is made for a
// connection refused: a flood of them costs the loop its system calls and
// nothing more.
func (l *eventloop) admit(owner *eventloop, fd int, remote netip.AddrPort, header bool) (kill.ConnID, connFlags, error) {
	e := l.eng
	if err := e.overBudget(); err != nil {
		// The largest holders are being closed; a newcomer would only
		// add to them.
		l.counts.add(countRejectedOverBudget)
		return 0, 0, err
	}
	id, err := e.table.Claim(owner.idx, uint64(fd))
	if err != nil {
		l.counts.add(countRejectedMaxConns)
		return 0, 0, ErrTooManyConns
	}
	if header {
		return id, 0, nil
	}
	flags, err := l.admitSource(remote)
	if err != nil {
		e.table.Release(id)
		return 0, 0, err
	}
	return id, flags, nil
}

// admitSource counts a connection from remote against its source's limit
// and as accepted, and returns flagSourced if it counted it against its
// source. It returns ErrTooManyFromSource, having counted the refusal,
// when the source is at its limit.
func (l *eventloop) admitSource(remote netip.AddrPort) (connFlags, error) {
	flags, ok := l.eng.acquireSource(remote)
	if !ok {
		l.counts.add(countRejectedPerSource)
		return 0, ErrTooManyFromSource
	}
	l.counts.add(countAccepted)
	return flags, nil
}

// acquireSource counts a connection from remote against the per-source
// limit: after a PROXY header, the original client's address. It returns
// flagSourced if it counted it, and false when the source is at its limit.
func (e *engine) acquireSource(remote netip.AddrPort) (connFlags, bool) {
	if e.sources == nil || !remote.IsValid() {
		return 0, true
	}
	if !e.sources.Acquire(kill.SourceKey(remote.Addr()), e.opts.maxConnsPerSource) {
		return 0, false
	}
	return flagSourced, true
}

// turnAway answers a connection, refused for reason, with what the
// handler's OnRefuse returns, if the handler is a RefusalHandler. The
// answer is written once, without waiting: a new socket takes a few
// kilobytes at once. Then what the client has sent already is read and
// dropped, so that closing the socket, which the caller does next, ends
// the stream after the answer rather than resetting it: some systems drop
// what a socket received when a reset follows. Bytes that arrive between
// that read and the close still draw a reset, which a client on Linux
// reads only after the answer.
func (l *eventloop) turnAway(fd int, remote netip.AddrPort, reason error) {
	h := l.eng.refusal
	if h == nil {
		return
	}
	var addr net.Addr
	if remote.IsValid() {
		addr = net.TCPAddrFromAddrPort(remote)
	} else {
		addr = &net.UnixAddr{Name: socket.UnixPeer(fd), Net: "unix"}
	}
	p := l.onRefuse(h, addr, reason)
	if len(p) == 0 {
		return
	}
	socket.Write(fd, p)
	if n, _ := socket.Read(fd, l.buf); n > 0 && l.eng.opts.wipe {
		clear(l.buf[:n])
	}
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
