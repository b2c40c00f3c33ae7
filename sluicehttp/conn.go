package sluicehttp

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/wheel"
)

// hconn is a connection's HTTP state. Its fields belong to the
// connection's loop: every method of it runs there. What a handler on
// the pool shares with it goes through an exchange, a body or a
// hijackConn, each with a lock of its own.
type hconn struct {
	s  *Server
	ls *loopState
	c  sluice.Conn

	slot    int32 // in ls.conns, and the handle of its timers
	scanned int32 // how much of a partial head has been searched for its end
	flags   hflags
	paused  pauses   // why it is not read; none when it is
	wait    readWait // what the read timer waits for
	start   int64    // when the request being read began, on ls's clock; kept only with a ReadTimeout

	rtimer, wtimer wheel.Timer

	x         *exchange   // the requests out on the pool, until their answers are queued
	body      *body       // the body being received
	pend      *response   // inline: the request whose body is being received
	hj        *hijackConn // the connection a handler took over
	drainWait *poster     // a writer waiting for the output to drain

	// Per connection, made with its first request.
	remote string
	local  net.Addr
	tls    *tls.ConnectionState
}

type hflags uint8

const (
	fPeerDone hflags = 1 << iota // the client has finished sending
	fClosing                     // no more requests: the connection closes once what is owed is answered
	fClosed                      // OnClose has run
	fLastPOST                    // the last request was a POST: CR and LF after it are skipped
)

// pauses are the reasons a connection is not read.
type pauses uint8

const (
	pauseHeld   pauses = 1 << iota // requests wait behind those out on the pool
	pauseWindow                    // a body's reader has not taken what came
	pauseHijack                    // a hijacked connection's reader has not taken what came
	pauseOut                       // answers wait for the client to read them
)

// readWait is what the read timer of a connection waits for.
type readWait uint8

const (
	readNone    readWait = iota // nothing: the timer is off
	readOpening                 // a new connection's first byte
	readIdle                    // the next request's first byte
	readHead                    // the rest of a request's head
	readBody                    // the rest of a request's body (ReadTimeout)
)

// maxRun is how many requests one run hands to the pool: a parsed request
// costs tens of times its bytes, so those pipelined beyond it wait as
// bytes (up to heldMark) rather than as requests.
const maxRun = 64

// heldMark is how many bytes of requests that follow may wait unread
// behind those out on the pool before the connection stops being read.
const heldMark = 64 << 10

func (hc *hconn) pause(why pauses) {
	if hc.paused == 0 {
		_ = hc.c.PauseRead()
	}
	hc.paused |= why
}

func (hc *hconn) unpause(why pauses) {
	if hc.paused&why == 0 {
		return
	}
	hc.paused &^= why
	if hc.paused == 0 {
		_ = hc.c.ResumeRead()
	}
}

// serve takes what the connection has buffered: a hijacked connection's
// bytes, a body's, or requests.
func (hc *hconn) serve() {
	for hc.flags&fClosed == 0 {
		switch {
		case hc.hj != nil:
			hc.hj.take(hc)
			return
		case hc.body != nil:
			hc.feed(nil) // the body of a run's only request: nothing follows it yet
			if hc.body != nil {
				return
			}
			hc.runPending()
			continue
		case hc.x != nil:
			// Requests that follow wait for the answers of those out.
			if hc.c.InboundBuffered() > heldMark {
				hc.pause(pauseHeld)
			}
			return
		case hc.flags&fClosing != 0:
			hc.settle()
			return
		case hc.outFull():
			// Requests that follow wait until the client reads the
			// answers before them (OnDrain).
			hc.pause(pauseOut)
			return
		}
		hc.parse()
		if hc.x == nil && hc.body == nil && hc.hj == nil && !hc.outFull() {
			break
		}
	}
	hc.settle()
}

// outFull reports whether the connection holds more unsent output than
// Server.WriteBufferSize.
func (hc *hconn) outFull() bool { return hc.c.OutboundBuffered() > hc.s.writeMark() }

// drained takes requests again once the answers that stopped it have
// drained (OnDrain).
func (hc *hconn) drained() {
	if hc.paused&pauseOut != 0 {
		hc.unpause(pauseOut)
		hc.serve()
	}
}

// parse reads the requests buffered, and runs them inline or hands them
// to the pool.
func (hc *hconn) parse() {
	s, c := hc.s, hc.c
	var x *exchange
	for hc.flags&fClosing == 0 && hc.hj == nil && hc.body == nil {
		if x != nil && len(x.reqs) >= maxRun {
			break // the rest wait, as bytes, for this run's answers
		}
		if (s.Inline || hc.ls.lh != nil) && hc.outFull() {
			break // the rest wait for the client to read (serve)
		}
		p, _ := c.Peek(-1)
		if len(p) == 0 {
			break
		}
		if hc.flags&fLastPOST != 0 {
			// net/http forgives up to four CR or LF after a POST's body,
			// as old clients sent.
			if len(p) < 4 && hc.flags&fPeerDone == 0 {
				hc.beginHead()
				break
			}
			n := 0
			for n < min(len(p), 4) && (p[n] == '\r' || p[n] == '\n') {
				n++
			}
			hc.consume(x, n)
			hc.flags &^= fLastPOST
			continue
		}
		end := headEnd(p, int(hc.scanned))
		limit := s.headLimit()
		if end < 0 {
			if len(p) > limit {
				x = hc.refuse(x, errTooLarge)
				break
			}
			hc.scanned = int32(resumeAt(p))
			hc.beginHead()
			break
		}
		hc.scanned = 0
		if end > limit {
			x = hc.refuse(x, errTooLarge)
			break
		}
		if hc.wait != readHead {
			hc.markStart()
		}
		// The wait for this request is over, whatever its timer still
		// says: settle sets the next one's, rather than leave the
		// connection to a wait armed before it.
		hc.wait = readNone
		if lh := hc.ls.lh; lh != nil {
			if x != nil && !x.inline && len(x.reqs) > 0 {
				break // it may be lh's: it waits for the answers before it
			}
			if hc.serveLoop(lh, p[:end], &x) {
				continue
			}
		}
		w, e := hc.newRequest(p[:end])
		if e == nil && w.body != nil && x != nil && !x.inline && len(x.reqs) > 0 &&
			(w.head.chunked || w.head.length > int64(len(p)-end)) {
			// Its body is still to come: the request begins the next
			// run, so that what a handler of this one that hijacks is
			// owed is all in x.rest (consume), and that holds no body
			// still arriving.
			w.ctx.cancel()
			break
		}
		hc.consume(x, end)
		if e != nil {
			x = hc.refuse(x, e)
			break
		}
		if w.req.Method == http.MethodPost {
			hc.flags |= fLastPOST
		}
		if lim := s.bodyLimit(); lim > 0 && w.head.length > lim {
			x = hc.refuse(x, errBodyTooLarge)
			break
		}
		if w.head.both {
			// A request framed by Transfer-Encoding despite a
			// Content-Length is answered, and the connection closed
			// after it (RFC 9112, section 6.1).
			w.wantsClose = true
		}
		if w.wantsClose {
			hc.flags |= fClosing
		}
		if x == nil {
			x = newExchange(hc)
		}
		if w.body != nil {
			hc.body = w.body
			hc.feed(x)
			if hc.body != nil {
				// The rest of the body is to come.
				hc.armBody()
				if s.Inline {
					hc.pend = w
					if w.head.expect {
						x.appendRaw(continueLine)
					}
					break
				}
				x.add(w)
				break
			}
		}
		if s.Inline {
			x.runInline(w)
			continue
		}
		x.add(w)
		if r := &w.req; r.Method == http.MethodConnect || w.head.first(r.Header, hasUpgrade, "Upgrade") != "" {
			// Its handler will likely take the connection over
			// (Hijack): what follows is not parsed as requests, which
			// it would then be owed as bytes, until the run is done.
			break
		}
	}
	hc.flush(x)
}

// runPending runs the inline request whose body has ended, whole or
// not, and reports whether there was one.
func (hc *hconn) runPending() bool {
	w := hc.pend
	if w == nil {
		return false
	}
	hc.pend = nil
	x := newExchange(hc)
	x.runInline(w)
	hc.flush(x)
	return true
}

// flush ends what parse gathered: inline answers are written; requests
// for the pool are handed to it.
func (hc *hconn) flush(x *exchange) {
	switch {
	case x == nil:
	case x.inline:
		x.mu.Lock()
		x.post()
		hc.keepOut(x)
		x.releaseLocked()
		x.mu.Unlock()
		if x.closeAfter {
			hc.close()
			return
		}
		hc.recycle(x)
	case len(x.reqs) > 0:
		hc.dispatch(x)
	default:
		hc.flushLoop(x)
	}
}

// dispatch hands x's requests to the pool.
func (hc *hconn) dispatch(x *exchange) {
	s := hc.s
	hc.x = x
	if hc.body == nil {
		hc.stopReadTimer()
	}
	if d := s.WriteTimeout; d > 0 {
		hc.ls.arm(hc, timerWrite, d, 0)
	}
	if err := s.Pool.Submit(x.runFn); err != nil {
		// Every worker is busy, or the pool is closed: answer that,
		// and close.
		hc.x = nil
		hc.ls.disarm(&hc.wtimer)
		x.putRest()
		for _, w := range x.reqs {
			w.ctx.cancel()
		}
		if hc.body != nil {
			hc.body.fail(errBodyCut)
			hc.body = nil
		}
		if x.out != nil {
			// A LoopHandler's answers to the requests before it.
			_ = x.writeOnLoop()
			x.releaseLocked()
		}
		hc.answer(errOverloaded)
		return
	}
	hc.ls.handedOff()
}

// newRequest makes the request whose head is p.
func (hc *hconn) newRequest(p []byte) (*response, *reqError) {
	w := &response{contentLength: -1}
	var b []byte
	if len(p) <= len(w.head.small) {
		b = w.head.small[:len(p)]
	} else {
		b = make([]byte, len(p))
	}
	copy(b, p)
	r := &w.req
	if e := parseHead(b, r, &w.head, nil); e != nil {
		return nil, e
	}
	if hc.local == nil {
		hc.remote = hc.c.RemoteAddr().String()
		hc.local = hc.c.LocalAddr()
		if cs, ok := hc.c.ConnectionState(); ok {
			hc.tls = &cs
		}
	}
	r.RemoteAddr, r.TLS = hc.remote, hc.tls
	w.ctx.local = hc.local
	*r = *r.WithContext(&w.ctx)
	conn := w.head.first(r.Header, hasConnection, "Connection")
	w.wants10KeepAlive = r.ProtoMajor == 1 && r.ProtoMinor == 0 && hasToken(conn, "keep-alive")
	w.wantsClose = r.Close || hasToken(conn, "close")
	if w.head.length != 0 {
		w.body = newBody(hc, w)
		r.Body = w.body
	} else {
		r.Body = http.NoBody
	}
	return w, nil
}

// beginHead notes that a request's head has begun arriving: its time
// starts, or, for a new connection's first, goes on from the opening, as
// net/http counts it.
func (hc *hconn) beginHead() {
	switch hc.wait {
	case readHead:
		return
	case readOpening:
		hc.wait = readHead
		return
	}
	hc.markStart()
	hc.wait = readHead
	if d := hc.s.headTimeout(); d > 0 {
		hc.ls.arm(hc, timerRead, d, readHead)
	} else {
		hc.stopReadTimer()
		hc.wait = readHead
	}
}

// markStart notes that a request begins now, for ReadTimeout, the only
// reader of hc.start (armBody): without one, the clock is not read for
// every request.
func (hc *hconn) markStart() {
	if hc.s.ReadTimeout > 0 {
		hc.start = hc.ls.now()
	}
}

// stopReadTimer turns the read timer off.
func (hc *hconn) stopReadTimer() {
	hc.ls.disarm(&hc.rtimer)
	hc.wait = readNone
}

// armBody bounds the wait for the rest of a body by what ReadTimeout left
// of the request's time.
func (hc *hconn) armBody() {
	hc.wait = readBody
	if d := hc.s.ReadTimeout; d > 0 {
		left := time.Duration(hc.start + int64(d) - hc.ls.now())
		hc.ls.arm(hc, timerRead, max(left, time.Millisecond), readBody)
	} else {
		hc.stopReadTimer()
		hc.wait = readBody
	}
}

// settle sets what a connection with nothing out waits for: the rest of a
// head, or the next request; or closes it, if it owes nothing and is
// closing or its client has finished.
func (hc *hconn) settle() {
	if hc.flags&fClosed != 0 || hc.x != nil || hc.hj != nil || hc.body != nil {
		return
	}
	switch {
	case hc.flags&fClosing != 0:
		hc.close()
	case hc.c.InboundBuffered() > 0 && hc.flags&fPeerDone != 0:
		// The client finished in the middle of a request: net/http
		// answers that as malformed.
		hc.answer(errBadRequest)
	case hc.c.InboundBuffered() > 0:
		hc.beginHead()
	case hc.flags&fPeerDone != 0:
		hc.close()
	case hc.wait != readIdle && hc.wait != readOpening:
		hc.wait = readIdle
		if d := hc.s.idleTimeout(); d > 0 {
			hc.ls.arm(hc, timerRead, d, readIdle)
		} else {
			hc.stopReadTimer()
			hc.wait = readIdle
		}
	}
}

// idle reports whether the connection waits for a request, owing
// nothing: Shutdown closes such connections.
func (hc *hconn) idle() bool {
	return hc.flags&(fClosed|fClosing) == 0 && hc.x == nil && hc.hj == nil &&
		hc.body == nil && hc.c.InboundBuffered() == 0
}

// refuse answers why a request was refused, after the answers x owes,
// and closes the connection.
func (hc *hconn) refuse(x *exchange, e *reqError) *exchange {
	hc.flags |= fClosing
	switch {
	case x == nil:
		hc.answer(e)
	case x.inline:
		x.appendRaw(errorResponse(e))
		x.closeAfter = true
	default:
		x.tail = e
	}
	return x
}

// answer writes the answer to a refused request, and closes.
func (hc *hconn) answer(e *reqError) {
	_, _ = hc.c.Write(errorResponse(e))
	hc.close()
}

// close closes the connection once what it has queued is sent.
func (hc *hconn) close() {
	if hc.flags&fClosed != 0 {
		return
	}
	hc.flags |= fClosing
	hc.stopReadTimer()
	_ = hc.c.Close()
}

// feed hands the body being received what has come of it; x is the run
// of requests on the pool it belongs to, if any (consume).
func (hc *hconn) feed(x *exchange) {
	b := hc.body
	p, _ := hc.c.Peek(-1)
	n, finished, full := b.feed(hc, p)
	hc.consume(x, n)
	if !finished && !full && hc.flags&fPeerDone != 0 {
		// The client finished before this body did (peerDone came while
		// requests before it were out): the rest never comes.
		b.fail(errBodyCut)
		finished = true
	}
	switch {
	case finished:
		hc.body = nil
		hc.unpause(pauseWindow)
		if b.broken() {
			hc.flags |= fClosing
		}
		if hc.wait == readBody {
			hc.stopReadTimer() // settle sets the next
		}
	case full:
		hc.pause(pauseWindow)
	default:
		hc.unpause(pauseWindow)
	}
}

// peerDone handles the client's end of stream, once every byte before it
// has been offered.
func (hc *hconn) peerDone() {
	hc.flags |= fPeerDone
	switch {
	case hc.hj != nil:
		hc.hj.finished()
		return
	case hc.body != nil:
		// The body was cut short: its reader hears so.
		b := hc.body
		hc.body = nil
		b.fail(errBodyCut)
		hc.flags |= fClosing
		if hc.runPending() {
			return
		}
	}
	if hc.x != nil {
		// As net/http does, the requests out hear of it through their
		// contexts; their answers are still sent.
		for _, w := range hc.x.reqs {
			w.ctx.cancel()
		}
		return
	}
	hc.settle()
}

// closed tidies up once the connection has closed.
func (hc *hconn) closed(err error) {
	hc.flags |= fClosed
	hc.ls.remove(hc)
	if hc.hj == nil {
		hc.s.served.Add(-1)
	}
	if x := hc.x; x != nil {
		hc.x = nil
		x.putRest()
		for _, w := range x.reqs {
			w.ctx.cancel()
		}
		if !x.inline {
			// A handler on the pool that hijacked, whose hand-over
			// (hijack) has yet to run, hears why from here: the
			// hand-over only finds the connection closed.
			x.mu.Lock()
			hj := x.hj
			x.mu.Unlock()
			if hj != nil {
				hj.gone(err)
			}
		}
	}
	if p := hc.drainWait; p != nil {
		hc.drainWait = nil
		p.fail(sluice.ErrConnClosed)
	}
	if b := hc.body; b != nil {
		hc.body = nil
		b.fail(errBodyCut)
	}
	if hc.pend != nil {
		hc.pend.ctx.cancel()
		hc.pend = nil
	}
	if hc.hj != nil {
		hc.hj.gone(err)
	}
}

// readTimedOut acts on the read timer.
func (hc *hconn) readTimedOut() {
	switch hc.wait {
	case readOpening, readIdle:
		hc.close()
	case readHead:
		if hc.x == nil && hc.hj == nil {
			hc.answer(errTimeout)
		}
	case readBody:
		if b := hc.body; b != nil {
			hc.body = nil
			b.fail(errBodyTimeout)
			hc.flags |= fClosing
			hc.runPending()
		}
	}
}

// writeTimedOut resets a connection whose handler took longer than
// WriteTimeout.
func (hc *hconn) writeTimedOut() {
	if hc.x != nil {
		_ = hc.s.eng.Kill(hc.c.ID())
	}
}

// hijack makes hj the owner of the connection, on the loop: every byte
// from now on is hj's, after read, those read already that followed the
// hijacking request, and the server forgets the connection.
func (hc *hconn) hijack(hj *hijackConn, read []byte) {
	if hc.flags&fClosed != 0 {
		hj.gone(sluice.ErrConnClosed)
		return
	}
	hj.mu.Lock()
	hj.in = append(hj.in, read...)
	hj.mu.Unlock()
	hc.hj = hj
	hc.s.served.Add(-1)
	hc.stopReadTimer()
	hc.ls.disarm(&hc.wtimer)
	if b := hc.body; b != nil {
		hc.body = nil
		b.fail(http.ErrHijacked)
	}
	hc.unpause(pauseHeld | pauseWindow)
	hj.take(hc)
	if hc.flags&fPeerDone != 0 {
		hj.finished()
	}
}

// consume consumes n inbound bytes that parse or feed have taken. Once
// x, a run of requests for the pool, holds a request, it keeps a copy of
// them: what the client sent after that request is owed to its handler
// if it hijacks the connection (hijack), as net/http's would find it in
// the bufio.Reader Hijack returns.
func (hc *hconn) consume(x *exchange, n int) {
	if x != nil && !x.inline && len(x.reqs) > 0 && n > 0 {
		p, _ := hc.c.Peek(n)
		if x.rest == nil {
			x.rest = outPool.Get()
		}
		x.rest.B = append(x.rest.B, p...)
	}
	discard(hc.c, n)
}

// discard consumes n of c's inbound bytes: none when n is 0, where
// Conn.Discard would take them all.
func discard(c sluice.Conn, n int) {
	if n > 0 {
		_, _ = c.Discard(n)
	}
}
