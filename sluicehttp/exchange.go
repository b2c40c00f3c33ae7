package sluicehttp

import (
	"io"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/pool"
)

// exchange is a run of requests a connection's loop read together, and
// their answers: handed to a goroutine of the pool, which runs their
// handlers one after another and queues the answers with one AsyncWrite
// (more when an answer is streamed), or run on the loop (inline). The
// loop reads nothing more of the connection's requests until the
// exchange is done: answers go out in the order the requests came.
type exchange struct {
	s      *Server
	hc     *hconn // the loop's: touched only in callbacks on the loop
	c      sluice.Conn
	inline bool
	reqs   []*response
	tail   *reqError    // a refusal owed after the answers, then a close
	rest   *pool.Buffer // on the pool, what the client sent after the first request (consume); the loop's

	mu    sync.Mutex // the output, for the handler and a body reader sending 100 Continue
	out   *pool.Buffer
	stage *pool.Buffer // the answer being written, until its head is known
	ans   decided      // what the header of the answer being written decides
	p     poster
	last  *pool.Buffer // the final output, in flight
	// held is how many bytes at the end of out the answer being written
	// put there since its head and staged body were committed, or since
	// it last flushed: what Hijack drops (dropUnflushed).
	held int

	// kept holds output buffers, empty, that the exchange keeps for its
	// next answers rather than give back to outPool and take out again
	// for every answer: the handlers' goroutine's during a run (under mu),
	// the loop's between runs. Nothing a handler sees is in them.
	kept  [2]*pool.Buffer
	nkept int

	stop       bool // answer nothing more: the connection closes, or was hijacked
	closeAfter bool
	hj         *hijackConn

	runFn  func()                   // run, made once
	doneFn func(sluice.Conn, error) // done, made once
}

// errWriteTimeout fails a hijacked connection's Write past its deadline.
var errWriteTimeout error = os.ErrDeadlineExceeded

// Buffers of output come from a pool of their own: their sizes, answers
// and runs of answers, differ from those of other buffers.
var outPool pool.BufferPool

// newExchange returns an exchange for hc's next run of requests: one a
// run on the loop left (recycle), or a new one.
func newExchange(hc *hconn) *exchange {
	ls := hc.ls
	if n := len(ls.spares); n > 0 {
		x := ls.spares[n-1]
		ls.spares[n-1] = nil
		ls.spares = ls.spares[:n-1]
		x.hc, x.c = hc, hc.c
		x.p.hc, x.p.c = hc, hc.c
		return x
	}
	x := &exchange{s: hc.s, hc: hc, c: hc.c, inline: hc.s.Inline}
	if !x.inline {
		x.p.init(hc) // inline answers are written on the loop, not posted
		x.runFn, x.doneFn = x.run, x.done
	}
	return x
}

// The sizes an exchange's output moves in.
const (
	// stageSize is how much of an answer is held until its handler
	// returns, so that its length can be sent; more, or a Flush, and it
	// is sent chunked. net/http holds 2 KiB.
	stageSize = 4 << 10
	// postSize is how much output gathers before it is queued on the
	// connection while a handler still runs.
	postSize = 32 << 10
)

// run runs the exchange's handlers on a goroutine of the pool, then
// queues what is left of their answers, and hands the connection back to
// its loop (done).
func (x *exchange) run() {
	for _, w := range x.reqs {
		if x.stop {
			w.ctx.cancel()
			if w.body != nil {
				w.body.handlerDone()
			}
			continue
		}
		x.call(w)
	}
	x.mu.Lock()
	if x.tail != nil && !x.stop {
		x.appendRaw(errorResponse(x.tail))
		x.closeAfter = true
	}
	x.last, x.out = x.out, nil
	x.releaseLocked()
	x.mu.Unlock()
	var b []byte
	if x.last != nil {
		b = x.last.B
	}
	if err := x.c.AsyncWrite(b, x.doneFn); err != nil {
		// The connection is gone, or refuses more output: its loop
		// hears of it through its close.
		x.putLast()
		_ = x.c.Close()
	}
}

// runInline runs w's handler on the loop.
func (x *exchange) runInline(w *response) {
	x.reqs = append(x.reqs[:0], w)
	x.call(w)
	if x.hj != nil {
		x.hj.inline.Store(false) // the handler has left the loop
	}
	if x.closeAfter {
		x.hc.flags |= fClosing
	}
}

// call runs w's handler and finishes its answer. A handler that panics
// gets 500 Internal Server Error, if it had answered nothing yet, and its
// connection closes; the panic is logged as net/http logs it, unless it
// is http.ErrAbortHandler.
func (x *exchange) call(w *response) {
	w.x = x
	panicked := true
	defer func() {
		if !panicked {
			return
		}
		if v := recover(); v != http.ErrAbortHandler {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			x.s.logf("http: panic serving %v: %v\n%s", w.req.RemoteAddr, v, buf)
		}
		w.abort()
	}()
	h := x.s.handler
	if w.req.Method == http.MethodOptions && w.req.RequestURI == "*" {
		h = globalOptions // as net/http's server answers it
	}
	h.ServeHTTP(w, &w.req)
	panicked = false
	w.finish()
}

// done runs on the loop once the exchange's last output is queued: the
// connection takes requests again, or closes.
func (x *exchange) done(c sluice.Conn, err error) {
	x.putLast()
	x.putRest()
	hc := x.hc
	if hc.x != x {
		return // closed meanwhile
	}
	hc.x = nil
	hc.ls.disarm(&hc.wtimer)
	if hc.drainWait == &x.p {
		hc.drainWait = nil
	}
	if x.hj != nil {
		return // the connection is the handler's now
	}
	hc.unpause(pauseHeld)
	if err != nil || x.closeAfter {
		hc.close()
		return
	}
	hc.recycle(x)
	hc.serve()
}

// maxSpares bounds the exchanges a loop keeps for its next runs of
// requests: as many as it has runs out at once under load, not one per
// connection, which an idle connection would hold for nothing.
const maxSpares = 256

// recycle keeps x, whose run of requests is over, for a next run on the
// loop: its handlers have returned and its output is queued, so that only
// the loop holds it (a writer used after its handler returned touches it
// no more: response.done). An exchange that ended otherwise than cleanly
// (hijacked, closing, failed) is left to the collector.
func (hc *hconn) recycle(x *exchange) {
	if len(hc.ls.spares) >= maxSpares {
		return
	}
	p := &x.p
	p.mu.Lock()
	clean := p.err == nil && len(p.inflight) == 0
	p.full = false
	p.mu.Unlock()
	if !clean || x.hj != nil || x.stop || x.closeAfter || x.tail != nil || x.out != nil || x.stage != nil || x.last != nil || x.rest != nil {
		return
	}
	if p.kick != nil {
		select {
		case <-p.kick: // a stale signal would only wake a writer early
		default:
		}
	}
	clear(x.reqs)
	x.reqs = x.reqs[:0]
	x.ans = decided{} // it points into the last handler's header
	hc.ls.spares = append(hc.ls.spares, x)
}

// add adds w to the run, noting where what follows it begins in x.rest.
func (x *exchange) add(w *response) {
	w.restAt = x.restLen()
	x.reqs = append(x.reqs, w)
}

func (x *exchange) restLen() int {
	if x.rest == nil {
		return 0
	}
	return len(x.rest.B)
}

// after returns what the client sent after w, as far as the loop has
// read it, for w's handler, which hijacks. On the loop.
func (x *exchange) after(w *response) []byte {
	if x.rest == nil {
		return nil
	}
	return x.rest.B[w.restAt:]
}

func (x *exchange) putRest() {
	if x.rest != nil {
		outPool.Put(x.rest)
		x.rest = nil
	}
}

func (x *exchange) putLast() {
	if x.last != nil {
		x.putBuf(x.last)
		x.last = nil
	}
}

// maxKeptOut bounds the buffers an exchange keeps (kept): a loop keeps
// at most maxSpares exchanges, each two of them.
const maxKeptOut = 4 << 10

// getBuf returns an empty output buffer: one x kept, or the pool's.
func (x *exchange) getBuf() *pool.Buffer {
	if x.nkept == 0 {
		return outPool.Get()
	}
	x.nkept--
	b := x.kept[x.nkept]
	x.kept[x.nkept] = nil
	return b
}

// putBuf takes back b, which nothing refers to any more: x keeps it, if
// it has room and b is small, or the pool has it back.
func (x *exchange) putBuf(b *pool.Buffer) {
	if x.nkept < len(x.kept) && cap(b.B) <= maxKeptOut {
		b.B = b.B[:0]
		x.kept[x.nkept] = b
		x.nkept++
		return
	}
	outPool.Put(b)
}

// appendRaw appends b to the output. x.mu is held, or x is inline.
func (x *exchange) appendRaw(b []byte) {
	if x.out == nil {
		x.out = x.getBuf()
	}
	x.out.B = append(x.out.B, b...)
}

// post queues the output gathered so far on the connection: at once
// inline, where the loop's own Write gathers it further; through the
// poster otherwise, which waits, first, for what the connection holds to
// drain below its mark. x.mu is held.
func (x *exchange) post() error {
	if x.out == nil || len(x.out.B) == 0 {
		return x.p.failure()
	}
	x.held = 0
	if x.inline {
		return x.writeOnLoop()
	}
	buf := x.out
	x.out = nil
	x.mu.Unlock()
	err := x.p.send(buf, true, nil)
	x.mu.Lock()
	return err
}

// writeOnLoop writes the output gathered so far with the loop's own
// Write, which gathers it further. A write refused (past
// sluice.WithMaxOutbound) fails every one after it, as the poster's do:
// an answer with a hole in it must not go on as if whole. finish then
// closes the connection. On the loop, with x.out not nil.
func (x *exchange) writeOnLoop() error {
	err := x.p.failure()
	if err == nil {
		if _, err = x.c.Write(x.out.B); err != nil {
			x.p.fail(err)
		}
	}
	x.out.B = x.out.B[:0]
	return err
}

// releaseLocked gives back the exchange's buffers. x.mu is held.
func (x *exchange) releaseLocked() {
	if x.stage != nil {
		x.putBuf(x.stage)
		x.stage = nil
	}
	if x.out != nil {
		x.putBuf(x.out)
		x.out = nil
	}
}

// poster queues output on a connection from a goroutine off its loop, one
// buffer at a time: before it queues the next, the last one's
// AsyncWrite must have run, and the connection's unsent output must be
// under Server.WriteBufferSize (its WithWriteBufferCap), or have drained
// to half of it since (OnDrain), so that a handler writing faster than
// its client reads waits rather than fills memory.
type poster struct {
	c    sluice.Conn
	hc   *hconn // the loop's
	mark int
	ack  func(sluice.Conn, error)

	mu       sync.Mutex
	inflight []*pool.Buffer // queued, their AsyncWrite not run yet
	full     bool           // over the mark, until OnDrain
	err      error          // the connection is gone
	kick     chan struct{}  // something above changed

	// failed is set once err is: failure's look, for every answer, takes
	// no lock while the connection is fine.
	failed atomic.Bool
}

func (p *poster) init(hc *hconn) {
	p.c, p.hc, p.mark = hc.c, hc, hc.s.writeMark()
	p.ack = p.acked
	p.kick = make(chan struct{}, 1)
}

// send queues buf, which the poster owns from then on. With wait, it
// first waits for the earlier buffers to be taken and the output to
// drain, until what deadline returns, if deadline is not nil and what it
// returns not zero: it asks again each time it wakes (signal).
func (p *poster) send(buf *pool.Buffer, wait bool, deadline func() time.Time) error {
	p.mu.Lock()
	for wait && p.err == nil && (len(p.inflight) > 0 || p.full) {
		p.mu.Unlock()
		var dl time.Time
		if deadline != nil {
			dl = deadline()
		}
		if !p.block(dl) {
			outPool.Put(buf)
			return errWriteTimeout
		}
		p.mu.Lock()
	}
	if err := p.err; err != nil {
		p.mu.Unlock()
		outPool.Put(buf)
		return err
	}
	p.inflight = append(p.inflight, buf)
	p.mu.Unlock()
	if err := p.c.AsyncWrite(buf.B, p.ack); err != nil {
		p.mu.Lock()
		p.inflight = p.inflight[:len(p.inflight)-1]
		p.setErr(err)
		p.mu.Unlock()
		outPool.Put(buf)
		return err
	}
	return nil
}

// await waits until what was sent has been taken and has drained.
func (p *poster) await() {
	p.mu.Lock()
	for p.err == nil && (len(p.inflight) > 0 || p.full) {
		p.mu.Unlock()
		p.block(time.Time{})
		p.mu.Lock()
	}
	p.mu.Unlock()
}

// block waits for a kick, or for deadline; it reports false when the
// deadline passed.
func (p *poster) block(deadline time.Time) bool { return wait(p.kick, nil, deadline) }

func (p *poster) signal() { signal(p.kick) }

// acked runs on the loop once a buffer is queued.
func (p *poster) acked(c sluice.Conn, err error) {
	p.mu.Lock()
	buf := p.inflight[0]
	p.inflight = p.inflight[1:]
	if err != nil && p.err == nil {
		p.setErr(err)
	}
	if err == nil && c.OutboundBuffered() > p.mark {
		// OnDrain comes once it has drained: it passed the engine's
		// high-water mark, which is this mark.
		p.full = true
		p.hc.drainWait = p
	}
	p.mu.Unlock()
	outPool.Put(buf)
	p.signal()
}

// drained runs on the loop when the output has drained (OnDrain).
func (p *poster) drained() {
	p.mu.Lock()
	p.full = false
	p.mu.Unlock()
	p.signal()
}

// fail fails the poster's sends from now on, and wakes the one waiting:
// on the loop when the connection closes, or an inline answer's write is
// refused; from the holder of a hijacked connection that closes it.
func (p *poster) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.setErr(err)
	}
	p.full = false
	p.mu.Unlock()
	p.signal()
}

// setErr notes why the connection takes no more output. p.mu is held.
func (p *poster) setErr(err error) {
	p.err = err
	p.failed.Store(true)
}

// failure returns why the connection takes no more output, or nil.
func (p *poster) failure() error {
	if !p.failed.Load() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// globalOptions answers "OPTIONS *" as net/http's server does, without
// the handler: 200, with a length of 0, reading (and dropping) at most
// 4 KiB of any body.
var globalOptions = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 4<<10))
	}
})
