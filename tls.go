package sluice

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/poller"
)

// TLS on a loop, with the standard library's crypto/tls. A connection of a
// TLS listener has a phase between its admission (and its PROXY header, if
// any) and OnOpen: the handshake, which runs on a goroutine of its own over
// an in-memory connection (wire) that the loop feeds with what the socket
// brings and whose output the loop writes to the socket. Once it is over,
// the loop owns the tls.Conn and uses it as the record layer: wire bytes go
// in, plaintext comes out for the handler, and the handler's output is
// sealed where it leaves the connection's buffers (conn.queue, send).

// DefaultTLSHandshakeTimeout bounds a TLS handshake, from the connection's
// admission (or the end of its PROXY header) to its end, unless
// WithTLSHandshakeTimeout says otherwise.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// DefaultTLSMaxHandshakes is how many TLS handshakes an engine runs at once
// unless WithTLSMaxHandshakes says otherwise.
const DefaultTLSMaxHandshakes = 1024

// TLSFailedHandler is an EventHandler that hears of the TLS handshakes that
// failed. Such a connection is closed unseen: no OnOpen or OnClose runs for
// it.
type TLSFailedHandler interface {
	// OnTLSFailed runs on the connection's loop. remote is the client's
	// address (after a PROXY header, the one it names); err is crypto/tls's
	// error, or ErrTLSHandshakeTimeout, or ErrTooManyHandshakes.
	OnTLSFailed(remote net.Addr, err error)
}

// recordHeaderLen is the length of a TLS record's header, and
// maxRecordLen the most a record's body may hold on the wire (TLS 1.2's
// bound, the larger).
const (
	recordHeaderLen = 5
	maxRecordLen    = 16384 + 2048
)

// errWouldBlock is what the wire's Read returns, once the handshake is
// over, when it holds no whole record more: a temporary error, which
// crypto/tls does not keep.
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "sluice: no whole TLS record buffered" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// errRecordOverflow closes a connection whose peer announced a record
// longer than TLS allows.
var errRecordOverflow = errors.New("sluice: TLS record too long")

// tlsSession is a TLS connection's state: behind conn.ext, so that plain
// connections pay one nil pointer for it.
type tlsSession struct {
	cfg   *tls.Config
	tc    *tls.Conn
	wire  wire
	ready bool // the handshake is over: the loop owns tc
	ended bool // the peer's close_notify, or an error, was read: no more input
	sent  bool // close_notify is queued
}

// wire is the in-memory net.Conn under a tls.Conn. During the handshake
// its Read blocks for bytes the loop feeds, and what is written is posted
// to the loop; after it, Read returns only whole records, and Write
// appends to the connection's output at once: both run on the loop then.
type wire struct {
	mu     sync.Mutex
	cond   sync.Cond
	c      *conn
	in     []byte // fed, not yet read
	head   int    // in[head:] is unread
	lent   bool   // in is the bytes the loop is handing over, not the wire's own
	own    []byte // the wire's own array for in, kept between reads
	out    []byte // written during the handshake, for the loop to send
	posted bool   // a taskTLS is queued for the loop
	closed bool   // Close: the handshake gives up
	eof    bool   // the peer finished sending
	loop   bool   // the handshake is over
	done   bool   // the handshake goroutine returned, with err
	err    error

	// Where records end, from the first byte: a scanner of the stream.
	fed, read int64 // bytes fed, and read by the tls.Conn
	whole     int64 // the end of the last whole record
	body      int64 // bytes of the current record's body still to come
	hdr       [recordHeaderLen]byte
	got       int // header bytes of the next record seen
	overflow  bool

	local, remote net.Addr
}

// feed appends p, wire bytes from the socket, and notes where records end.
// Once the handshake is over, when the wire holds nothing unread, it
// reads p where it lies rather than copying it: settle, before the loop
// lets go of p, keeps what was left of it.
func (w *wire) feed(p []byte) {
	w.mu.Lock()
	switch {
	case w.loop && w.head == len(w.in):
		w.in, w.head, w.lent = p, 0, true
	default:
		if w.head > 0 && w.head == len(w.in) {
			w.in, w.head = w.in[:0], 0
		}
		w.in = append(w.in, p...)
	}
	w.scan(p)
	w.mu.Unlock()
	w.cond.Signal()
}

// ownSmall is the largest array the wire keeps while it holds nothing:
// an idle connection does not keep a large read's worth.
const ownSmall = 4 << 10

// settle ends a hand-over of wire bytes on the loop: the unread rest (the
// part of a record) moves to the front of the wire's own array, and a
// large array, once empty, goes.
func (w *wire) settle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	rest := w.in[w.head:]
	switch {
	case len(rest) == 0:
		if cap(w.own) > ownSmall {
			w.own = nil
		}
		w.in = w.own[:0]
	case w.lent || w.head > 0:
		w.own = append(w.own[:0], rest...)
		w.in = w.own
	}
	w.head, w.lent = 0, false
}

// scan follows the record framing over p.
func (w *wire) scan(p []byte) {
	for len(p) > 0 {
		if w.body == 0 && w.got < recordHeaderLen {
			n := copy(w.hdr[w.got:], p)
			w.got += n
			w.fed += int64(n)
			p = p[n:]
			if w.got == recordHeaderLen {
				w.body = int64(w.hdr[3])<<8 | int64(w.hdr[4])
				if w.body > maxRecordLen {
					w.overflow = true
				}
				if w.body == 0 {
					w.got = 0
					w.whole = w.fed
				}
			}
			continue
		}
		n := int(min(int64(len(p)), w.body))
		w.body -= int64(n)
		w.fed += int64(n)
		p = p[n:]
		if w.body == 0 {
			w.got = 0
			w.whole = w.fed
		}
	}
}

// partial reports whether the stream stops inside a record.
func (w *wire) partial() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fed != w.whole
}

// ripe reports whether a whole record has come that the tls.Conn has not
// read.
func (w *wire) ripe() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.whole > w.read
}

func (w *wire) Read(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.loop && !w.closed && w.head == len(w.in) && !w.eof {
		w.cond.Wait()
	}
	if w.closed {
		return 0, net.ErrClosed
	}
	avail := w.in[w.head:]
	if w.loop {
		// Only whole records: the part of one stays here, where the
		// scanner sees it, rather than inside the tls.Conn.
		avail = avail[:max(0, min(int64(len(avail)), w.whole-w.read))]
	}
	if len(avail) == 0 {
		if w.loop {
			return 0, errWouldBlock
		}
		return 0, io.EOF
	}
	n := copy(b, avail)
	w.head += n
	w.read += int64(n)
	return n, nil
}

func (w *wire) Write(b []byte) (int, error) {
	w.mu.Lock()
	if w.loop {
		w.mu.Unlock()
		w.c.queueRaw(b)
		return len(b), nil
	}
	w.out = append(w.out, b...)
	post := !w.posted
	w.posted = true
	w.mu.Unlock()
	if post {
		w.c.loop.post(newTask(taskTLS, w.c)) // a stopped loop has closed w
	}
	return len(b), nil
}

// finished records the handshake's end and tells the loop.
func (w *wire) finished(err error) {
	w.mu.Lock()
	w.done, w.err = true, err
	post := !w.posted
	w.posted = true
	w.mu.Unlock()
	if post {
		w.c.loop.post(newTask(taskTLS, w.c))
	}
}

// take returns what the handshake wrote since the last take, and whether
// it is over and how.
func (w *wire) take() (out []byte, done bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out, w.out = w.out, nil
	w.posted = false
	return out, w.done, w.err
}

// Close aborts the handshake: it never blocks.
func (w *wire) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cond.Broadcast()
	return nil
}

// end marks the peer's end of stream, which ends a handshake under way.
func (w *wire) end() {
	w.mu.Lock()
	w.eof = true
	w.mu.Unlock()
	w.cond.Broadcast()
}

func (w *wire) LocalAddr() net.Addr  { return w.local }
func (w *wire) RemoteAddr() net.Addr { return w.remote }

// The deadlines are the loop's: crypto/tls sets a write deadline around
// close_notify, which must succeed and do nothing.
func (w *wire) SetDeadline(time.Time) error      { return nil }
func (w *wire) SetReadDeadline(time.Time) error  { return nil }
func (w *wire) SetWriteDeadline(time.Time) error { return nil }

// tlsConfig returns the configuration a listener serves TLS with: a copy
// of cfg, which renegotiation, which would run a handshake inside a
// record read on the loop, is kept off.
func tlsConfig(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return nil
	}
	cfg = cfg.Clone()
	cfg.Renegotiation = tls.RenegotiateNever
	return cfg
}

// sec returns c's TLS state, or nil for a plain connection.
func (c *conn) sec() *tlsSession {
	if c.ext == nil {
		return nil
	}
	return c.ext.sec
}

// beginHandshake starts c's TLS handshake on a goroutine, bounded by the
// handshake timeout, or refuses c when the engine runs as many as it may.
func (l *eventloop) beginHandshake(c *conn) {
	e := l.eng
	if e.handshakes.Add(1) > int64(e.opts.tlsMaxHandshakes) {
		e.handshakes.Add(-1)
		l.tlsFailed(c, ErrTooManyHandshakes, countTLSHandshakeFailures)
		return
	}
	s := c.ext.sec
	s.wire.c = c
	s.wire.cond.L = &s.wire.mu
	s.wire.local, s.wire.remote = c.LocalAddr(), c.RemoteAddr()
	s.tc = tls.Server(&s.wire, s.cfg)
	c.state = stateHandshake
	if len(c.buf) > 0 {
		// Bytes that followed a PROXY header in the same read.
		s.wire.feed(c.buf)
		c.buf = c.buf[len(c.buf):]
		c.keepUnread()
	}
	l.arm(c, &c.readTimer, timerHandshake, e.opts.tlsTimeout)
	go func() {
		err := s.tc.Handshake()
		e.handshakes.Add(-1)
		s.wire.finished(err)
	}()
	l.runHandshakes()
}

// runHandshakes has the handshake goroutines the loop started or fed in
// this turn run at its end: the loop then passes through the scheduler
// (yield) before it blocks, rather than up to yieldEvery later. Nothing
// else runs them sooner where there are as many Ps as loops, since a loop
// keeps its P, and its thread, while it waits; left to the next yield, a
// loop with 50 handshakes under way sat idle half the time.
func (l *eventloop) runHandshakes() {
	l.yielded = min(l.yielded, l.now()-int64(yieldEvery))
}

// handshakeArrived feeds p, read from c during its handshake, to the
// handshake, within the bound on what c may hold unread.
func (l *eventloop) handshakeArrived(c *conn, p []byte) {
	s := c.ext.sec
	s.wire.feed(p)
	l.runHandshakes()
	if l.eng.opts.wipe {
		clear(p)
	}
	s.wire.mu.Lock()
	held := len(s.wire.in) - s.wire.head
	s.wire.mu.Unlock()
	if held > l.eng.opts.tlsMaxEarly() {
		l.counts.add(countInboundTooLarge)
		l.closeConn(c, nil)
	}
}

// tlsMaxEarly bounds what a connection may send before its handshake ends.
func (o *options) tlsMaxEarly() int {
	if o.maxInbound > 0 {
		return max(o.maxInbound, 2*maxRecordLen)
	}
	return 1 << 20
}

// handshakeProgress runs on the loop when c's handshake wrote or ended:
// it sends what the handshake wrote, and at its end opens c or closes it.
func (l *eventloop) handshakeProgress(c *conn) {
	if c.state != stateHandshake {
		return // closed meanwhile: the goroutine has been told
	}
	s := c.ext.sec
	out, done, err := s.wire.take()
	if len(out) > 0 {
		c.queueRaw(out)
		l.send(c)
		if c.state != stateHandshake {
			return
		}
	}
	if !done {
		return
	}
	l.disarm(&c.readTimer)
	if err != nil {
		l.tlsFailed(c, err, countTLSHandshakeFailures)
		return
	}
	s.wire.mu.Lock()
	s.wire.loop = true
	s.wire.mu.Unlock()
	s.ready = true
	c.state = stateOpen
	l.start(c)
	if c.state == stateOpen {
		// What came with the client's last flight, kept in the tls.Conn
		// or the wire.
		l.unseal(c, true)
		s.wire.settle()
	}
}

// handshakeTimeout closes c, whose handshake did not end in time.
func (l *eventloop) handshakeTimeout(c *conn) {
	l.tlsFailed(c, ErrTLSHandshakeTimeout, countTLSHandshakeTimeouts)
}

// tlsFailed closes c, whose handshake failed, unseen, counts it, and tells
// the handler if it listens.
func (l *eventloop) tlsFailed(c *conn, err error, why counter) {
	l.counts.add(why)
	if c.out != nil {
		// The alert that says why, if the handshake wrote one: once,
		// without waiting.
		socket.Write(c.fd, c.out.B[c.outHead:]) // best effort
	}
	remote := c.RemoteAddr()
	l.closeConn(c, nil)
	if h, ok := l.eng.handler.(TLSFailedHandler); ok {
		l.onTLSFailed(h, remote, err)
	}
}

func (l *eventloop) onTLSFailed(h TLSFailedHandler, remote net.Addr, err error) {
	defer l.recoverConn(nil)
	h.OnTLSFailed(remote, err)
}

// tlsArrived hands c, open, the wire bytes p: the plaintext of the records
// they complete goes to the handler.
func (l *eventloop) tlsArrived(c *conn, p []byte) {
	s := c.ext.sec
	if s.ended {
		if l.eng.opts.wipe {
			clear(p)
		}
		return
	}
	s.wire.feed(p)
	l.unseal(c, false)
	s.wire.settle()
	if l.eng.opts.wipe {
		clear(p)
	}
}

// unseal reads the records c's wire holds, if a whole one is there or
// always is set, and hands their plaintext to the handler, or holds it
// while c is not read. What the reads wrote (alerts, key update replies)
// is queued in c's output, and sent. The peer's close_notify is its end
// of stream; a record that does not open closes c.
func (l *eventloop) unseal(c *conn, always bool) {
	s := c.ext.sec
	if s.wire.overflow {
		l.tlsBroken(c, errRecordOverflow)
		return
	}
	if !always && !s.wire.ripe() {
		return
	}
	l.active(c)
	b := l.plain[:0]
	var err error
	for {
		if cap(b)-len(b) < maxRecordLen {
			b = slices.Grow(b, 2*maxRecordLen)
		}
		var n int
		n, err = s.tc.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			break
		}
	}
	l.plain = b[:0]
	if err == errWouldBlock {
		err = nil
	}
	if len(b) > 0 {
		if c.events&poller.Readable == 0 {
			l.hold(c, b)
		} else {
			l.received(c, b)
		}
	} else if c.pending() > 0 {
		l.send(c)
	}
	if err == nil || c.state == stateClosed {
		return
	}
	s.ended = true
	if err == io.EOF {
		l.peerClosed(c)
		return
	}
	l.tlsBroken(c, err)
}

// tlsBroken closes c, whose records failed, after one try at sending the
// alert the failure queued.
func (l *eventloop) tlsBroken(c *conn, err error) {
	s := c.ext.sec
	s.ended = true
	if c.out != nil {
		socket.Write(c.fd, c.out.B[c.outHead:]) // best effort
	}
	l.closeConn(c, err)
}

// tlsPeerClosed handles the end of c's stream during its handshake, which
// then fails, or after it: a record cut short is an error, not data.
func (l *eventloop) tlsPeerClosed(c *conn) bool {
	s := c.sec()
	switch {
	case s == nil:
		return false
	case c.state == stateHandshake:
		s.wire.end()
		l.runHandshakes()
		return true
	case s.ready && !s.ended && c.state == stateOpen && s.wire.partial():
		s.ended = true
		l.closeConn(c, io.ErrUnexpectedEOF)
		return true
	}
	return false
}

// closeNotify queues TLS's close_notify for c, once, before its write side
// shuts down.
func (l *eventloop) closeNotify(c *conn) {
	s := c.sec()
	if s == nil || !s.ready || s.sent {
		return
	}
	s.sent = true
	s.tc.CloseWrite() // a failed record layer has closed c
}

// sealOut seals the output c's running callback gathered in the loop's
// write buffer into c's own.
func (l *eventloop) sealOut(c *conn) {
	if c.pending()+len(l.wbuf) > l.eng.opts.writeBufCap {
		c.flags |= flagOverHigh
	}
	c.queue(l.wbuf)
	l.drv.spent()
}

func (c *conn) ConnectionState() (tls.ConnectionState, bool) {
	s := c.sec()
	if s == nil || !s.ready {
		return tls.ConnectionState{}, false
	}
	return s.tc.ConnectionState(), true
}
