package sluice

import (
	"time"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/wheel"
)

// A loop keeps its connections' deadlines as timers on its own timing
// wheel, made only when a deadline is first set. It reads the clock at most
// once per iteration: before it blocks (see yield), and when a deadline or
// the ticker needs the time. Activity moves an idle or write deadline later with one store
// (wheel.Extend); the wheel refiles the timer when its old time comes.
//
// A deadline therefore counts from the time the loop read in the iteration
// that saw the activity, which a long iteration leaves behind the moment
// the callback ran, and fires at the first iteration after it passes, up
// to one tick (10ms) late.

// timerKind says which of a connection's deadlines a timer stands for. A
// timer's handle is the connection's descriptor shifted left by
// timerKindBits, with the kind in the bits below.
type timerKind uint64

const (
	timerIdle timerKind = iota
	timerRead
	timerWrite
	timerHeader    // the wait for a PROXY header, kept in readTimer (proxy.go)
	timerLinger    // a lingering close's bound, kept in readTimer
	timerConnect   // a dial's bound, kept in readTimer (dial.go)
	timerSoft      // over WithOutboundSoftLimit for its time
	timerHandshake // a TLS handshake's bound, kept in readTimer (tls.go)
	timerSession   // a datagram session's idle deadline; its handle holds the session's slot (udp_session.go)

	timerKindBits = 4
)

// noTimer is the zero Timer, which stands for a deadline not set.
var noTimer wheel.Timer

// now returns the loop's time: nanoseconds on the monotonic clock since the
// engine started, read the first time it is asked for in each iteration.
func (l *eventloop) now() int64 {
	if !l.clockRead {
		l.clock = int64(time.Since(l.eng.epoch))
		l.clockRead = true
	}
	return l.clock
}

// timers returns the loop's wheel, making it on first use: a connection
// may ask for an idle timeout on an engine that set none.
func (l *eventloop) timers() *wheel.Wheel {
	if l.wheel == nil {
		l.wheel = wheel.New(wheel.DefaultTick, l.now())
	}
	return l.wheel
}

// arm sets c's timer *t, of the given kind, to fire d from now.
func (l *eventloop) arm(c *conn, t *wheel.Timer, kind timerKind, d time.Duration) {
	l.disarm(t)
	*t = l.timers().Insert(l.now()+int64(d), uint64(c.fd)<<timerKindBits|uint64(kind))
}

// disarm cancels the timer *t, if it is set.
func (l *eventloop) disarm(t *wheel.Timer) {
	if *t != noTimer {
		l.wheel.Cancel(*t)
		*t = noTimer
	}
}

// stopTimers cancels every deadline of c, which is closing.
func (l *eventloop) stopTimers(c *conn) {
	l.disarm(&c.idleTimer)
	l.disarm(&c.readTimer)
	l.disarm(&c.writeTimer)
	l.disarm(&c.softTimer)
}

// setIdleTimeout gives c an idle timeout of d from now on, or none when d
// is zero or less.
func (l *eventloop) setIdleTimeout(c *conn, d time.Duration) {
	c.idle = max(d, 0)
	if d > 0 {
		l.arm(c, &c.idleTimer, timerIdle, d)
	} else {
		l.disarm(&c.idleTimer)
	}
}

// active records that c moved bytes: its idle deadline starts over.
func (l *eventloop) active(c *conn) {
	if c.idle > 0 {
		l.wheel.Extend(c.idleTimer, l.now()+int64(c.idle))
	}
}

// sent records that c's socket took output: its idle and write deadlines
// start over.
func (l *eventloop) sent(c *conn) {
	l.active(c)
	if c.writeTimer != noTimer {
		l.wheel.Extend(c.writeTimer, l.now()+int64(l.eng.opts.writeTimeout))
		c.flags &^= flagWriteWaited
	}
}

// writeWaits reports whether c's write deadline, which has just passed,
// is set once more rather than closing c, and sets it if so. The loop sees
// output progress only as the socket taking more of it, and the socket
// takes more only once TCP hears the peer make room; a peer whose window
// is closed is asked with window probes, the first at least 200 ms after
// it closed (TCP's minimum retransmission timeout on Linux) and each next
// one twice as late. A peer can read steadily and still keep its window
// closed that long: over loopback, where a segment is 64 KiB, a receive
// buffer of a few segments frees room only as each whole segment is read.
// So the kernel is asked (one system call, only when a deadline passes).
// The first deadline of a stall waits once more unless TCP has already
// found the peer's window closed (or its segments unanswered) twice in a
// row; each later one waits again only if the peer acknowledged output
// past the window it offered at the last look, room it can make only by
// reading: the rest of that window its kernel may take without reading a
// byte, and TCP sends its last piece smaller than a segment only with a
// window probe. A peer that stopped reading is closed within two
// timeouts, and at the first deadline when the timeout is longer than
// TCP's first two probes.
func (l *eventloop) writeWaits(c *conn) bool {
	acked, offered, waiting, ok := socket.Delivery(c.fd)
	if !ok {
		return false
	}
	first := c.flags&flagWriteWaited == 0
	moved := !first && int32(uint32(acked)-c.acked) > 0
	if !(first && waiting) && !moved {
		return false
	}
	c.flags |= flagWriteWaited
	c.acked = uint32(offered)
	l.arm(c, &c.writeTimer, timerWrite, l.eng.opts.writeTimeout)
	return true
}

// watchOutput keeps c's write deadline set exactly while output is queued.
func (l *eventloop) watchOutput(c *conn, queued bool) {
	switch {
	case !queued:
		l.disarm(&c.writeTimer)
	case c.writeTimer == noTimer && l.eng.opts.writeTimeout > 0:
		l.arm(c, &c.writeTimer, timerWrite, l.eng.opts.writeTimeout)
	}
}

// checkUnread applies the bounds on what the handler left unread when
// OnTraffic returned: the inbound limit and the read deadline. consumed
// says whether the handler took any bytes, which ends a frame and so
// starts the deadline of the next one over. The deadline is cleared when
// the buffer empties (finish).
func (l *eventloop) checkUnread(c *conn, consumed bool) {
	n := len(c.buf)
	if limit := l.eng.opts.maxInbound; limit > 0 && n > limit {
		l.counts.add(countInboundTooLarge)
		l.closeConn(c, ErrInboundTooLarge)
		return
	}
	d := l.eng.opts.readTimeout
	switch {
	case d <= 0 || n == 0:
	case c.events&poller.Readable == 0 || c.pending() > 0 || l.drv.sending(c):
		// Paused for its output (watch), or holding answers the peer has
		// yet to read, as a handler that bounds its output leaves them:
		// the peer is waited on to read, not to send, which the write
		// deadline judges. Once the output has drained, the bytes are
		// offered again and the deadline starts over.
		l.disarm(&c.readTimer)
	case c.readTimer == noTimer:
		l.arm(c, &c.readTimer, timerRead, d)
	case consumed:
		l.wheel.Extend(c.readTimer, l.now()+int64(d))
	}
}

// runTimers closes the connections whose deadlines have passed.
func (l *eventloop) runTimers() {
	if l.wheel != nil && l.wheel.Len() > 0 {
		l.wheel.Advance(l.now(), l.fire)
	}
}

// expire closes the connection whose timer fired, with the error of its
// kind. The descriptor in the handle still names that connection: closing
// a connection cancels its timers.
func (l *eventloop) expire(handle uint64) {
	if timerKind(handle&(1<<timerKindBits-1)) == timerSession {
		l.sessionIdle(int32(handle >> timerKindBits))
		return
	}
	c := l.conns[handle>>timerKindBits]
	if c == nil {
		return // closing a connection cancels its timers; this is a bug's guard
	}
	var err error
	switch timerKind(handle & (1<<timerKindBits - 1)) {
	case timerIdle:
		c.idleTimer = noTimer
		l.counts.add(countIdleTimeouts)
		err = ErrIdleTimeout
	case timerRead:
		c.readTimer = noTimer
		l.counts.add(countReadTimeouts)
		err = ErrReadTimeout
	case timerWrite:
		c.writeTimer = noTimer
		if l.writeWaits(c) {
			return
		}
		l.counts.add(countWriteTimeouts)
		err = ErrWriteTimeout
	case timerHeader:
		c.readTimer = noTimer
		l.headerTimeout(c)
		return
	case timerLinger:
		c.readTimer = noTimer // the close goes on as asked: the peer only kept it waiting
	case timerConnect:
		c.readTimer = noTimer
		err = ErrDialTimeout
	case timerHandshake:
		c.readTimer = noTimer
		l.handshakeTimeout(c)
		return
	case timerSoft:
		c.softTimer = noTimer
		l.counts.add(countOutboundOverLimit)
		l.reset(c, ErrOutboundOverLimit)
		return
	}
	l.closeConn(c, err)
}

// timeout returns how long the poller may wait: until the first timer or
// tick is due, or without limit when none is.
func (l *eventloop) timeout() time.Duration {
	var next int64
	ok := false
	if l.wheel != nil {
		next, ok = l.wheel.Next()
	}
	if l.ticking && !l.draining && (!ok || l.tickAt < next) {
		next, ok = l.tickAt, true
	}
	if l.acceptAt != 0 && (!ok || l.acceptAt < next) {
		next, ok = l.acceptAt, true
	}
	if !ok {
		return -1
	}
	return max(time.Duration(next-l.now()), 0)
}

// tick calls OnTick when it is due, on the loop that runs the ticker.
func (l *eventloop) tick() {
	if !l.ticking || l.draining || l.now() < l.tickAt {
		return
	}
	delay, a := l.onTick()
	l.tickAt = l.now() + int64(delay)
	if a == Shutdown {
		l.eng.shutdownAsked()
	}
}
