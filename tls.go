package sluice

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/poller"
)

// TLS on a loop, with the standard library's crypto/tls. A connection of a
// TLS listener has a phase between its admission (and its PROXY header, if
// any) and OnOpen, and so has one dialed or enrolled with DialTLS between
// its connect and OnOpen: the handshake, which runs on a goroutine of its
// own over an in-memory connection (wire) that the loop feeds with what
// the socket brings and whose output the loop writes to the socket. Once
// it is over, the loop owns the tls.Conn and uses it as the record layer:
// wire bytes go in, plaintext comes out for the handler, and the handler's
// output is sealed where it leaves the connection's buffers (conn.queue,
// send). Accepted connections are its server side, dialed and enrolled
// ones its client side.

// DefaultTLSHandshakeTimeout bounds a TLS handshake, from the connection's
// admission (or the end of its PROXY header) to its end, unless
// WithTLSHandshakeTimeout says otherwise.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// DefaultTLSMaxHandshakes is how many TLS handshakes an engine runs at once
// unless WithTLSMaxHandshakes says otherwise.
const DefaultTLSMaxHandshakes = 1024

// TLSFailedHandler is an EventHandler that hears of the TLS handshakes that
// failed on accepted connections. Such a connection is closed unseen: no
// OnOpen or OnClose runs for it. A dialed or enrolled connection's failed
// handshake (DialTLS) fails its dial, which OnDialFailed hears of.
type TLSFailedHandler interface {
	// OnTLSFailed runs on the connection's loop. remote is the client's
	// address (after a PROXY header, the one it names); err is crypto/tls's
	// error, or the socket's (an *os.SyscallError: a reset), or
	// ErrTLSHandshakeTimeout, or ErrTooManyHandshakes, or wraps
	// ErrHandlerPanic when a callback of the tls.Config panicked.
	OnTLSFailed(remote net.Addr, err error)
}

// recordHeaderLen is the length of a TLS record's header, and
// maxRecordLen the most a record's body may hold on the wire (TLS 1.2's
// bound, the larger).
const (
	recordHeaderLen = 5
	maxPlaintext    = 16384
	maxRecordLen    = maxPlaintext + 2048
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

	// overhead is the most sealing adds to a record, once the handshake
	// is over: what a posted write counts (conn.postedSize).
	overhead int
}

// wire is the in-memory net.Conn under a tls.Conn. During the handshake
// its Read blocks for bytes the loop feeds, and what is written is posted
// to the loop; after it, Read returns only whole records, and Write
// appends to the connection's output at once: both run on the loop then.
// Unless in is lent, it is a slice of own from its start.
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
	full   bool   // the loop stopped reading: the handshake holds enough (handshakeArrived)
	closed bool   // Close: the handshake gives up
	eof    bool   // the peer finished sending
	loop   bool   // the handshake is over
	done   bool   // the handshake goroutine returned, with err
	err    error
	wipe   bool // WithWipeBuffers: an array the wire lets go of is cleared first

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
		w.in = w.grow(w.in, p)
		w.own = w.in
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
	if w.closed {
		return // Close let go of everything
	}
	rest := w.in[w.head:]
	switch {
	case len(rest) == 0:
		if cap(w.own) > ownSmall {
			if w.wipe {
				clear(w.own[:cap(w.own)])
			}
			w.own = nil
		}
		w.in = w.own[:0]
	case w.lent || w.head > 0:
		w.own = w.grow(w.own[:0], rest)
		w.in = w.own
	}
	w.head, w.lent = 0, false
}

// grow appends p to b; an array it moves out of is cleared first
// WithWipeBuffers.
func (w *wire) grow(b, p []byte) []byte {
	if !w.wipe || len(b)+len(p) <= cap(b) {
		return append(b, p...)
	}
	moved := append(b[:len(b):len(b)], p...)
	clear(b[:cap(b)])
	return moved
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

// isFull reports whether the loop stopped reading for the handshake
// (handshakeArrived).
func (w *wire) isFull() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.full
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
	n, post, err := w.read1(b)
	w.mu.Unlock()
	if post {
		// The handshake has read what held up the socket: the loop reads
		// it again (handshakeProgress).
		w.c.loop.post(newTask(taskTLS, w.c)) // a stopped loop has closed w
	}
	return n, err
}

// read1 is Read with w.mu held; post says to tell the loop.
func (w *wire) read1(b []byte) (n int, post bool, err error) {
	for !w.loop && !w.closed && w.head == len(w.in) && !w.eof {
		w.cond.Wait()
	}
	if w.closed {
		return 0, false, net.ErrClosed
	}
	avail := w.in[w.head:]
	if w.loop {
		// Only whole records: the part of one stays here, where the
		// scanner sees it, rather than inside the tls.Conn.
		avail = avail[:max(0, min(int64(len(avail)), w.whole-w.read))]
	}
	if len(avail) == 0 {
		if w.loop {
			return 0, false, errWouldBlock
		}
		return 0, false, io.EOF
	}
	n = copy(b, avail)
	w.head += n
	w.read += int64(n)
	if w.full && len(w.in)-w.head <= handshakeHold/2 {
		w.full = false
		post = !w.posted
		w.posted = true
	}
	return n, post, nil
}

func (w *wire) Write(b []byte) (int, error) {
	w.mu.Lock()
	if w.loop {
		w.mu.Unlock()
		w.c.queueRaw(b)
		return len(b), nil
	}
	if w.closed {
		w.mu.Unlock()
		return 0, net.ErrClosed
	}
	w.out = w.grow(w.out, b)
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

// Close aborts the handshake, and lets go of the bytes the wire holds,
// cleared first WithWipeBuffers: its connection has closed. It never
// blocks. in, when lent, is the loop's read buffer, which the loop clears.
func (w *wire) Close() error {
	w.mu.Lock()
	w.closed = true
	if w.wipe {
		clear(w.own[:cap(w.own)])
		clear(w.out[:cap(w.out)])
	}
	w.in, w.own, w.out, w.head, w.lent = nil, nil, nil, 0, false
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
// An accepted connection is the server's side, a dialed or enrolled one
// the client's: nothing else differs.
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
	s.wire.wipe = e.opts.wipe
	if c.Origin() == Accepted {
		s.tc = tls.Server(&s.wire, s.cfg)
	} else {
		s.tc = tls.Client(&s.wire, s.cfg)
	}
	c.state = stateHandshake
	if len(c.buf) > 0 {
		// Bytes that followed a PROXY header in the same read.
		s.wire.feed(c.buf)
		c.buf = c.buf[len(c.buf):]
		c.keepUnread()
	}
	l.arm(c, &c.readTimer, timerHandshake, e.opts.tlsTimeout)
	go func() {
		err := handshake(s.tc, e.opts.logger)
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

// handshake runs tc's handshake. The configuration's callbacks
// (GetCertificate, VerifyConnection, ...) run in it, on a goroutine of
// the engine's: a panic there fails the handshake, logged with its stack,
// rather than the process.
func handshake(tc *tls.Conn, logger *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			logger.Error("sluice: a TLS configuration callback panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", ErrHandlerPanic, r)
		}
	}()
	return tc.Handshake()
}

// handshakeHold is how much the wire of a connection in its handshake
// may hold unread before the loop stops reading the socket: two records
// of the largest size, so that the handshake always finds a whole one.
const handshakeHold = 2 * (recordHeaderLen + maxRecordLen)

// handshakeArrived feeds p, read from c during its handshake, to the
// handshake, within the bound on what c may hold unread. Once the wire
// holds handshakeHold, c is not read until the handshake has read half
// of it (wire.Read) or ended: a handshake that does not read, as one
// whose GetCertificate waits on the network, or whose goroutine waits
// for a busy processor, leaves the peer's bytes in the kernel, which
// stops the peer, rather than in the engine.
func (l *eventloop) handshakeArrived(c *conn, p []byte) {
	s := c.ext.sec
	s.wire.feed(p)
	l.runHandshakes()
	if l.eng.opts.wipe {
		clear(p)
	}
	s.wire.mu.Lock()
	held := len(s.wire.in) - s.wire.head
	full := held > handshakeHold
	s.wire.full = full
	s.wire.mu.Unlock()
	switch {
	case held > l.eng.opts.tlsMaxEarly():
		// What a driver received before it stopped passed the bound.
		l.counts.add(countInboundTooLarge)
		l.closeConn(c, ErrInboundTooLarge) // heard only by a dial's OnDialFailed
	case full:
		l.watch(c) // stops reading (unread)
	}
}

// handshakeUnread reports whether c, in its handshake, is not to be read
// now: its peer has finished sending, or the handshake holds enough.
func handshakeUnread(c *conn) bool {
	return c.flags&flagEOF != 0 || c.ext.sec.wire.isFull()
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
		if l.eng.opts.wipe {
			clear(out)
		}
		l.send(c)
		if c.state != stateHandshake {
			return
		}
	}
	if !done {
		l.watch(c) // reads again if the handshake has read enough
		return
	}
	l.disarm(&c.readTimer)
	if err != nil {
		l.tlsFailed(c, err, countTLSHandshakeFailures)
		return
	}
	s.wire.mu.Lock()
	s.wire.loop, s.wire.full = true, false
	s.wire.mu.Unlock()
	s.ready = true
	s.overhead = sealOverhead(s.tc.ConnectionState())
	if d, ok := c.ctx.(*dialSpec); ok {
		l.dialOpened(c, d)
	} else {
		c.state = stateOpen
		l.start(c)
	}
	if c.state == stateOpen {
		// What came with the peer's last flight, kept in the tls.Conn or
		// the wire.
		l.unseal(c, true)
		s.wire.settle()
	}
	if c.state == stateOpen && c.flags&flagEOF != 0 && !s.ended {
		// The peer's stream ended during the handshake.
		l.peerClosed(c)
	}
}

// sealOverhead returns the most crypto/tls adds to a record's plaintext
// with what st agreed: its header, and in TLS 1.3 the content type and
// the tag; in TLS 1.2 the explicit nonce and the tag of GCM, the tag of
// ChaCha20-Poly1305, or the IV, MAC (SHA-256's at most) and padding of
// CBC.
func sealOverhead(st tls.ConnectionState) int {
	switch {
	case st.Version == tls.VersionTLS13:
		return recordHeaderLen + 1 + 16
	case strings.Contains(tls.CipherSuiteName(st.CipherSuite), "_GCM_"):
		return recordHeaderLen + 8 + 16
	case strings.Contains(tls.CipherSuiteName(st.CipherSuite), "CHACHA20"):
		return recordHeaderLen + 16
	}
	return recordHeaderLen + 16 + 32 + 16
}

// handshakeTimeout closes c, whose handshake did not end in time.
func (l *eventloop) handshakeTimeout(c *conn) {
	l.tlsFailed(c, ErrTLSHandshakeTimeout, countTLSHandshakeTimeouts)
}

// tlsFailed closes c, whose handshake failed, unseen, counts it, and tells
// the handler if it listens: OnDialFailed for a dial, which closeConn
// tells, OnTLSFailed for an accepted connection.
func (l *eventloop) tlsFailed(c *conn, err error, why counter) {
	l.counts.add(why)
	if c.out != nil {
		// The alert that says why, if the handshake wrote one: once,
		// without waiting.
		socket.Write(c.fd, c.out.B[c.outHead:]) // best effort
	}
	if _, dial := c.ctx.(*dialSpec); dial {
		l.closeConn(c, err)
		return
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
	before := c.pending()
	var err error
	for {
		if cap(b)-len(b) < maxRecordLen {
			grown := slices.Grow(b, 2*maxRecordLen)
			if l.eng.opts.wipe {
				clear(b[:cap(b)])
			}
			b = grown
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
	if err == nil && l.repliedPast(c, before) {
		err = errKeyUpdates
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

// errKeyUpdates closes a connection whose peer asked for more key updates
// than its bound on queued output (WithMaxOutbound) holds.
var errKeyUpdates = fmt.Errorf("sluice: TLS key update replies the peer does not read: %w", ErrOutboundFull)

// repliedPast reports whether the records just read had the record layer
// write (key update replies, which the handler never sees and so cannot
// bound) and take c's queued output, which was before, past
// WithMaxOutbound's bound, counting the refusal. Backpressure stops reading
// such a peer long before; without it, this is what bounds it.
func (l *eventloop) repliedPast(c *conn, before int) bool {
	limit := l.eng.opts.maxOutbound
	n := c.pending()
	if limit == 0 || n == before || n <= limit {
		return false
	}
	l.counts.add(countOutboundRefused)
	return true
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
		// The handshake may end on what it holds, with the peer's first
		// data: the end is acted on after them (handshakeProgress). Till
		// then c is not read, which would find the end again and again.
		c.flags |= flagEOF
		s.wire.end()
		l.watch(c) // stops reading (unread)
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
// shuts down. crypto/tls seals nothing after it: from then on writes to c
// fail with ErrConnClosed, as after CloseWrite, rather than vanish.
func (l *eventloop) closeNotify(c *conn) {
	s := c.sec()
	if s == nil || !s.ready || s.sent {
		return
	}
	s.sent = true
	c.flags |= flagWriteClosed
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
