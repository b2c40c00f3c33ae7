package sluicehttp

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice"
)

// response is a request and the http.ResponseWriter that answers it,
// made together: one allocation for both. It also implements
// http.Flusher, http.Hijacker and what http.ResponseController asks of
// a writer (FlushError, SetReadDeadline, SetWriteDeadline,
// EnableFullDuplex).
//
// Its answer follows net/http's: a head written once the handler first
// writes more than a few KiB, flushes, or returns; Content-Length when it
// returned having written all of its body by then, chunked otherwise (or,
// to an HTTP/1.0 client, the body ends with the connection); the body's
// first bytes sniffed for a Content-Type the handler did not set; a Date.
type response struct {
	x    *exchange
	req  http.Request
	head head
	body *body
	ctx  reqContext // the request's

	restAt int // on the pool: where what followed the request begins in x.rest

	header        http.Header
	status        int
	contentLength int64 // the declared length of the answer's body, or -1
	written       int64

	wroteHeader, committed, handlerDone bool
	chunking, closeAfter, hijacked      bool
	wants10KeepAlive, wantsClose        bool
	fullDuplex                          bool

	hdrStart int      // where the answer's head begins in the output
	trailers []string // the trailer's fields, as Trailer declared them
}

// decided is what the handler's header said, when WriteHeader ran, of the
// fields the server writes itself once it knows the body (commit); the
// rest of the header is written to the output then. An exchange holds it
// for the one answer being written between the two, rather than each
// response, which keeps a response within a smaller size class.
type decided struct {
	ct, cl, te, conn      []string
	haveCT, haveCL, haveC bool
	hasCE, hasDate        bool
	upgrade               bool // Upgrade is set, for a protocol switch
	trailerSet            bool // Trailer is set, or a key has http.TrailerPrefix
}

// errHandlerDone fails what a handler asks of its http.ResponseWriter
// after it returned, which net/http forbids: its exchange may serve
// another connection by then (recycle), and is not touched.
var errHandlerDone = errors.New("sluicehttp: http.ResponseWriter used after its handler returned")

// Header returns the header the answer will have. Changes after
// WriteHeader, or after the first Write, are not sent (trailers aside);
// after the handler returned, it is a new map that goes nowhere.
func (w *response) Header() http.Header {
	// The lock orders this against the handler's return (finish), for a
	// handler that kept w and calls this from another goroutine after it.
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.handlerDone {
		return make(http.Header) // the answer is gone: what is set here goes nowhere
	}
	if w.header == nil {
		w.header = make(http.Header)
	}
	return w.header
}

// WriteHeader sends the answer's status with its header.
func (w *response) WriteHeader(code int) {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.handlerDone {
		x.s.logf("http: response.WriteHeader after its handler returned")
		return
	}
	w.writeHeaderLocked(code)
}

func (w *response) writeHeaderLocked(code int) {
	x := w.x
	switch {
	case w.hijacked:
		x.s.logf("http: response.WriteHeader on hijacked connection")
		return
	case w.wroteHeader:
		x.s.logf("http: superfluous response.WriteHeader call")
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if (code < 101 || code > 199) && w.body != nil {
		w.body.noContinue()
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		// Informational: sent at once, before the final answer.
		x.appendRaw(nil)
		x.out.B = appendStatusLine(x.out.B, w.req.ProtoAtLeast(1, 1), code)
		x.out.B = appendHeader(x.out.B, w.header, skipNoBody)
		x.out.B = append(x.out.B, "\r\n"...)
		_ = x.post()
		return
	}
	w.wroteHeader, w.status = true, code
	// One pass over the handler's header learns the fields the server
	// decides on and gathers those it writes as they are.
	d := &x.ans
	*d = decided{}
	h := w.header
	var room [32]field
	fields, trailer := room[:0], []string(nil)
	for key, vv := range h {
		switch key {
		case "Content-Type":
			d.ct, d.haveCT = vv, true
		case "Content-Length":
			d.cl, d.haveCL = vv, true
		case "Transfer-Encoding":
			d.te = vv
		case "Connection":
			d.conn, d.haveC = vv, true
		case "Content-Encoding":
			d.hasCE = len(vv) > 0 && vv[0] != ""
		case "Date":
			d.hasDate = true
		case "Upgrade":
			d.upgrade = len(vv) > 0 && vv[0] != ""
		case "Trailer":
			trailer = vv
		}
		if strings.HasPrefix(key, http.TrailerPrefix) {
			d.trailerSet = true
		}
		if !skipDecided.skips(key) {
			fields = append(fields, field{key, vv})
		}
	}
	if len(d.cl) > 0 && d.cl[0] != "" {
		if v, err := strconv.ParseInt(d.cl[0], 10, 64); err == nil && v >= 0 {
			w.contentLength = v
		} else {
			x.s.logf("http: invalid Content-Length of %q", d.cl[0])
			h.Del("Content-Length")
			// Not written, but, as with net/http, still set: the server
			// puts no length of its own in its place.
			d.cl = nil
		}
	}
	x.appendRaw(nil)
	w.hdrStart = len(x.out.B)
	x.out.B = appendStatusLine(x.out.B, w.req.ProtoAtLeast(1, 1), code)
	x.out.B = appendFields(x.out.B, fields)
	for _, v := range trailer {
		d.trailerSet = true
		forEachElement(v, w.declareTrailer)
	}
}

func (w *response) declareTrailer(k string) {
	k = http.CanonicalHeaderKey(k)
	if strings.HasPrefix(k, "If-") || badTrailer[k] {
		return // forbidden in a trailer (RFC 7230, section 4.1.2)
	}
	w.trailers = append(w.trailers, k)
}

// Write writes to the answer's body.
func (w *response) Write(p []byte) (int, error) { return w.write(len(p), p, "") }

// WriteString writes s to the answer's body.
func (w *response) WriteString(s string) (int, error) { return w.write(len(s), nil, s) }

func (w *response) write(n int, b []byte, s string) (int, error) {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.handlerDone {
		return 0, errHandlerDone
	}
	if w.hijacked {
		if n > 0 {
			x.s.logf("http: response.Write on hijacked connection")
		}
		return 0, http.ErrHijacked
	}
	if w.body != nil {
		w.body.noContinue()
	}
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if n == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(n)
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if err := x.p.failure(); err != nil {
		return 0, err
	}
	if !w.committed {
		if x.stage == nil {
			x.stage = x.getBuf()
		}
		x.stage.B = append(x.stage.B, b...)
		x.stage.B = append(x.stage.B, s...)
		if len(x.stage.B) <= stageSize {
			return n, nil
		}
		if err := w.commitStaged(); err != nil {
			return 0, err
		}
		return n, nil
	}
	var err error
	if b != nil {
		err = w.emit(b)
	} else {
		err = w.emit([]byte(s))
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// commitStaged writes the answer's head and what the handler has written
// so far. x.mu is held.
func (w *response) commitStaged() error {
	var p []byte
	if w.x.stage != nil {
		p = w.x.stage.B
	}
	w.commit(p)
	err := w.emit(p)
	w.x.held = 0 // what the stage held has passed the server's buffer
	if w.x.stage != nil {
		w.x.stage.B = w.x.stage.B[:0]
	}
	return err
}

// emit appends body bytes to the output, in chunks when chunked, and
// queues the output as it passes postSize. x.mu is held.
func (w *response) emit(p []byte) error {
	x := w.x
	if w.req.Method == http.MethodHead {
		return nil
	}
	for len(p) > 0 {
		k := min(len(p), postSize)
		x.appendRaw(nil)
		start := len(x.out.B)
		if w.chunking {
			x.out.B = strconv.AppendUint(x.out.B, uint64(k), 16)
			x.out.B = append(x.out.B, "\r\n"...)
		}
		x.out.B = append(x.out.B, p[:k]...)
		if w.chunking {
			x.out.B = append(x.out.B, "\r\n"...)
		}
		p = p[k:]
		x.held += len(x.out.B) - start
		if len(x.out.B) >= postSize {
			if err := x.post(); err != nil {
				return err
			}
		}
	}
	return nil
}

// commit writes the rest of the answer's head, now that the server knows
// as much of its body as it will before sending it: p, all of it if the
// handler has returned. It decides, as net/http does, how the body is
// framed and whether the connection is kept. x.mu is held.
func (w *response) commit(p []byte) {
	x := w.x
	d := &x.ans
	w.committed = true
	x.held = 0
	keepAlives := !x.s.shutting.Load()
	isHEAD := w.req.Method == http.MethodHead
	code := w.status
	hasTE := len(d.te) > 0 && d.te[0] != ""
	te := ""
	if hasTE {
		te = d.te[0]
	}
	connection := ""
	if len(d.conn) > 0 {
		connection = d.conn[0]
	}
	// What the server writes beside the handler's fields, and which of
	// those it drops.
	var setConn, setCT string
	setCL, setTE := false, false
	dropCL, dropTE, dropConn, dropCT := false, false, false, false

	if w.handlerDone && !d.trailerSet && !hasTE && bodyAllowed(code) && !d.haveCL && (!isHEAD || len(p) > 0) {
		w.contentLength = int64(len(p))
		setCL = true
	}
	if w.wants10KeepAlive && keepAlives {
		if len(d.cl) > 0 && d.cl[0] != "" && connection == "keep-alive" {
			w.closeAfter = false
		}
	}
	hasCL := w.contentLength != -1
	if w.wants10KeepAlive && (isHEAD || hasCL || !bodyAllowed(code)) {
		if !d.haveC {
			setConn = "keep-alive"
		}
	} else if !w.req.ProtoAtLeast(1, 1) || w.wantsClose {
		w.closeAfter = true
	}
	if connection == "close" || !keepAlives {
		w.closeAfter = true
	}
	if b := w.body; b != nil {
		switch b.state(w.head.expect) {
		case bodyUnfinished:
			// The client promised a body the handler did not wait for
			// (Expect: 100-continue), or its body broke: the connection
			// cannot be trusted to be at a request's start.
			w.closeAfter = true
		case bodyTooLong:
			if !w.closeAfter && !w.fullDuplex {
				// More of the body is unread than is worth reading.
				w.closeAfter = true
				dropConn, setConn = true, "close"
			}
		}
	}
	if bodyAllowed(code) {
		if !d.hasCE && !d.haveCT && !hasTE && len(p) > 0 {
			setCT = http.DetectContentType(p)
		}
	} else {
		dropCL, dropTE = true, true
		if code == http.StatusNotModified {
			dropCT = true
		}
	}
	if hasCL && hasTE && te != "identity" {
		x.s.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d",
			te, w.contentLength)
		dropCL, hasCL = true, false
	}
	switch {
	case isHEAD || !bodyAllowed(code) || code == http.StatusNoContent:
		dropTE = true
	case hasCL:
		dropTE = true
	case w.req.ProtoAtLeast(1, 1):
		if hasTE && te == "identity" {
			w.closeAfter, dropTE = true, true
		} else {
			w.chunking, setTE = true, true
			if hasTE && te == "chunked" {
				dropTE = true
			}
		}
	default:
		w.closeAfter, dropTE = true, true
	}
	if w.chunking {
		dropCL = true
	}
	if w.closeAfter && (!keepAlives || !hasToken(connection, "close")) &&
		!(code == http.StatusSwitchingProtocols && d.upgrade && valuesHaveToken(d.conn, "Upgrade")) {
		dropConn = true
		setConn = ""
		if w.req.ProtoAtLeast(1, 1) {
			setConn = "close"
		}
	}

	out := x.out.B
	if !dropCT {
		out = appendValues(out, "Content-Type", d.ct)
	}
	if !dropCL {
		out = appendValues(out, "Content-Length", d.cl)
	}
	if !dropTE {
		out = appendValues(out, "Transfer-Encoding", d.te)
	}
	if !dropConn {
		out = appendValues(out, "Connection", d.conn)
	}
	if !d.hasDate {
		out = append(out, *x.s.date.Load()...)
	}
	if setCL {
		// Appended, not formatted to a string: one of more than two
		// digits would be an allocation.
		out = strconv.AppendInt(append(out, "Content-Length: "...), w.contentLength, 10)
		out = append(out, "\r\n"...)
	}
	if setCT != "" {
		out = append(append(append(out, "Content-Type: "...), setCT...), "\r\n"...)
	}
	if setConn != "" {
		out = append(append(append(out, "Connection: "...), setConn...), "\r\n"...)
	}
	if setTE {
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	}
	x.out.B = append(out, "\r\n"...)
}

// finish ends the answer once its handler has returned.
func (w *response) finish() {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	defer w.ctx.cancel()
	w.handlerDone = true
	if b := w.body; b != nil {
		b.handlerDone()
	}
	if w.hijacked {
		return
	}
	if !w.wroteHeader {
		code := http.StatusOK
		if w.body != nil && w.body.overLimit() {
			code = http.StatusRequestEntityTooLarge
		}
		w.writeHeaderLocked(code)
	}
	if !w.committed {
		_ = w.commitStaged()
	}
	if w.chunking {
		x.appendRaw([]byte("0\r\n"))
		x.out.B = appendTrailers(x.out.B, w)
		x.out.B = append(x.out.B, "\r\n"...)
	}
	if w.req.Method != http.MethodHead && w.contentLength != -1 && bodyAllowed(w.status) &&
		w.contentLength != w.written {
		w.closeAfter = true // it did not write what it declared: the framing is lost
	}
	if w.closeAfter || x.p.failure() != nil {
		x.stop, x.closeAfter = true, true
	}
	if x.out != nil && len(x.out.B) >= postSize {
		_ = x.post()
	}
}

// abort ends the answer of a handler that panicked: 500, unless part of
// the answer has gone, and the connection closes, unless the handler
// hijacked it.
func (w *response) abort() {
	x := w.x
	x.mu.Lock()
	w.handlerDone = true
	if b := w.body; b != nil {
		b.handlerDone()
	}
	if !w.committed && !w.hijacked {
		if w.wroteHeader {
			x.out.B = x.out.B[:w.hdrStart]
		}
		if x.stage != nil {
			x.stage.B = x.stage.B[:0]
		}
		x.appendRaw(errorResponse(errHandlerPanicked))
	}
	x.stop = true
	if !w.hijacked {
		x.closeAfter = true // a hijacked connection is its holder's to close
	}
	x.mu.Unlock()
	w.ctx.cancel()
}

// hijackedConn returns the connection w's handler hijacked, if it did,
// and whether the handler has returned, for a method that does not
// otherwise take x.mu: the lock orders the reads against Hijack and
// finish. An exchange whose handler hijacked is never reused, so x.hj
// stays the connection's.
func (w *response) hijackedConn() (*hijackConn, bool) {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.hijacked {
		return x.hj, w.handlerDone
	}
	return nil, w.handlerDone
}

// Flush sends what the handler has written so far.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError sends what the handler has written so far, and reports why
// it could not.
func (w *response) FlushError() error {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.handlerDone {
		return errHandlerDone
	}
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if !w.committed {
		if err := w.commitStaged(); err != nil {
			return err
		}
	}
	return x.post()
}

// EnableFullDuplex lets the handler read the request's body while it
// writes the answer, which this server always allows. After the handler
// returned it fails, as SetReadDeadline does.
func (w *response) EnableFullDuplex() error {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.handlerDone {
		return errHandlerDone
	}
	w.fullDuplex = true
	return nil
}

// SetReadDeadline sets when reading the rest of the request's body times
// out; the zero time means never. Once the handler hijacked the
// connection, it sets the connection's, as net/http's does, even after
// the handler returned.
func (w *response) SetReadDeadline(t time.Time) error {
	hj, done := w.hijackedConn()
	switch {
	case hj != nil:
		return hj.SetReadDeadline(t)
	case done:
		return errHandlerDone
	}
	return w.x.onLoop(func(hc *hconn) {
		if hc.body == nil || hc.body != w.body {
			return
		}
		if t.IsZero() {
			hc.stopReadTimer()
			hc.wait = readBody
			return
		}
		hc.ls.arm(hc, timerRead, max(time.Until(t), time.Millisecond), readBody)
	})
}

// SetWriteDeadline sets when the answer must be queued by, or the
// connection is reset; the zero time means never. Once the handler
// hijacked the connection, it sets the connection's, as
// SetReadDeadline does.
func (w *response) SetWriteDeadline(t time.Time) error {
	hj, done := w.hijackedConn()
	switch {
	case hj != nil:
		return hj.SetWriteDeadline(t)
	case done:
		return errHandlerDone
	}
	return w.x.onLoop(func(hc *hconn) {
		if hc.x == nil {
			return
		}
		if t.IsZero() {
			hc.ls.disarm(&hc.wtimer)
			return
		}
		hc.ls.arm(hc, timerWrite, max(time.Until(t), time.Millisecond), 0)
	})
}

// Hijack hands the connection to the handler: the answers before this
// one have been queued, and so has this one's head if the handler wrote
// one, with what of its body it flushed, but not what it wrote since it
// last flushed, as net/http drops what its writer buffers
// (dropUnflushed). Every byte the client sends after this
// request is the returned connection's to read, requests pipelined
// behind this one included, even those the server had read already: it
// neither answers them nor reads the connection any more, and closes it
// only with the engine. Of this request's own body, what is still to
// arrive, and what of it the handler has not read, comes on the
// connection; a body that had arrived whole before the handler ran
// stays readable through the request's Body instead.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.handlerDone {
		panic("net/http: Hijack called after ServeHTTP finished")
	}
	if x.hj != nil {
		return nil, nil, http.ErrHijacked
	}
	if err := x.p.failure(); err != nil {
		return nil, nil, err
	}
	if w.body != nil {
		w.body.noContinue()
	}
	w.dropUnflushed()
	w.hijacked, x.stop = true, true
	hj := newHijackConn(x)
	x.hj = hj
	// What is owed before goes first; then the loop hands the connection
	// over, behind it.
	if x.inline {
		_ = x.post()
		x.hc.hijack(hj, nil) // the requests that follow are unread
	} else {
		buf := x.out
		x.out = nil
		x.mu.Unlock()
		x.p.await()
		var b []byte
		if buf != nil {
			b = buf.B
		}
		err := x.c.AsyncWrite(b, func(c sluice.Conn, err error) {
			if buf != nil {
				outPool.Put(buf)
			}
			x.hc.hijack(hj, x.after(w))
		})
		x.mu.Lock()
		if err != nil {
			if buf != nil {
				outPool.Put(buf)
			}
			return nil, nil, err
		}
	}
	return hj, bufio.NewReadWriter(bufio.NewReader(hj), bufio.NewWriter(hj)), nil
}

// dropUnflushed drops, as the handler hijacks, what it wrote to its
// answer's body and did not flush, as net/http drops what its
// response's writer buffers: a head the handler wrote is sent as it
// stands without a body (no length but the handler's, no sniffed type),
// and of the body, what it flushed, and what passed the server's
// buffers (the first 4 KiB once more came, and every 32 KiB after). x.mu
// is held.
func (w *response) dropUnflushed() {
	x := w.x
	switch {
	case !w.wroteHeader:
	case !w.committed:
		if x.stage != nil {
			x.stage.B = x.stage.B[:0]
		}
		w.commit(nil)
	case x.held > 0:
		x.out.B = x.out.B[:len(x.out.B)-x.held]
		x.held = 0
	}
}

// onLoop runs fn on the connection's loop, with its state: at once inline,
// through the loop's queue otherwise.
func (x *exchange) onLoop(fn func(*hconn)) error {
	if x.inline {
		fn(x.hc)
		return nil
	}
	return x.c.AsyncWrite(nil, func(c sluice.Conn, err error) {
		if err == nil {
			fn(x.hc)
		}
	})
}

// bodyAllowed reports whether an answer with the status may have a body.
func bodyAllowed(code int) bool {
	return (code < 100 || code > 199) && code != http.StatusNoContent && code != http.StatusNotModified
}

// badTrailer holds the fields a trailer may not set.
var badTrailer = map[string]bool{
	"Authorization": true, "Cache-Control": true, "Connection": true, "Content-Encoding": true,
	"Content-Length": true, "Content-Range": true, "Content-Type": true, "Expect": true,
	"Host": true, "Keep-Alive": true, "Max-Forwards": true, "Pragma": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Range": true, "Realm": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Www-Authenticate": true,
}

// forEachElement calls fn for each comma-separated element of v.
func forEachElement(v string, fn func(string)) {
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.Trim(f, " \t\r\n"); f != "" {
			fn(f)
		}
	}
}

// Which of a header's fields appendHeader leaves out.
type skip uint8

const (
	skipNone    skip = iota
	skipNoBody       // an informational answer's: Content-Length, Transfer-Encoding
	skipDecided      // those the server writes once it knows the body (commit), and trailers
)

func (k skip) skips(key string) bool {
	if k == skipNone {
		return false
	}
	switch key {
	case "Content-Length", "Transfer-Encoding":
		return true
	case "Content-Type", "Connection":
		return k == skipDecided
	}
	return k == skipDecided && strings.HasPrefix(key, http.TrailerPrefix)
}

// appendHeader appends h's fields, sorted by key, as net/http writes
// them: a key that is not a token is dropped, and CR and LF in a value
// become spaces.
func appendHeader(b []byte, h http.Header, k skip) []byte {
	var room [32]field
	fields := room[:0]
	for key, vv := range h {
		if !k.skips(key) {
			fields = append(fields, field{key, vv})
		}
	}
	return appendFields(b, fields)
}

// field is a header's key with its values.
type field struct {
	key    string
	values []string
}

// appendFields appends fields, sorted by key, as appendHeader does.
func appendFields(b []byte, fields []field) []byte {
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	for _, f := range fields {
		b = appendValues(b, f.key, f.values)
	}
	return b
}

// appendValues appends one field line per value.
func appendValues(b []byte, key string, values []string) []byte {
	if !isToken(key) {
		return b
	}
	for _, v := range values {
		b = append(b, key...)
		b = append(b, ": "...)
		b = appendValue(b, v)
		b = append(b, "\r\n"...)
	}
	return b
}

// appendValue appends v with CR and LF made spaces, and the spaces at its
// ends dropped.
func appendValue(b []byte, v string) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	for len(v) > 0 && isSpace(v[0]) {
		v = v[1:]
	}
	for len(v) > 0 && isSpace(v[len(v)-1]) {
		v = v[:len(v)-1]
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// appendTrailers appends the answer's trailer fields: those it declared
// (Trailer), and those whose keys have http.TrailerPrefix, as the
// handler's header holds them now.
func appendTrailers(b []byte, w *response) []byte {
	var t http.Header
	for k, vv := range w.header {
		if kk, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[kk] = vv
		}
	}
	for _, k := range w.trailers {
		for _, v := range w.header[k] {
			if t == nil {
				t = make(http.Header)
			}
			t.Add(k, v)
		}
	}
	return appendHeader(b, t, skipNone)
}

// appendStatusLine appends "HTTP/1.1 200 OK\r\n".
func appendStatusLine(b []byte, is11 bool, code int) []byte {
	if is11 {
		b = append(b, "HTTP/1.1 "...)
	} else {
		b = append(b, "HTTP/1.0 "...)
	}
	if text := http.StatusText(code); text != "" {
		b = strconv.AppendInt(b, int64(code), 10)
		b = append(b, ' ')
		b = append(b, text...)
		return append(b, "\r\n"...)
	}
	return fmt.Appendf(b, "%03d status code %d\r\n", code, code)
}

// continueLine is the interim answer to Expect: 100-continue.
var continueLine = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// errorResponse is net/http's answer to a request it refuses, and the
// server's to a request it cannot serve.
func errorResponse(e *reqError) []byte {
	const headers = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	var public string
	switch e.code {
	case http.StatusNotImplemented:
		return []byte("HTTP/1.1 501 Not Implemented" + headers + "Unsupported transfer encoding")
	case http.StatusExpectationFailed:
		return []byte("HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
	}
	public = strconv.Itoa(e.code) + " " + http.StatusText(e.code)
	if e.text != "" {
		public += ": " + e.text
	}
	return []byte("HTTP/1.1 " + public + headers + public)
}
