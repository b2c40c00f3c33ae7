package sluicehttp

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"

	"github.com/sluicenet/sluice/pool"
)

// LoopHandler is an optional interface a Server's Handler may implement
// to answer requests on the connection's event loop below the
// http.Handler API, without an *http.Request, an http.ResponseWriter or
// a heap allocation: for the few routes that must cost the least, beside
// a Handler whose ServeHTTP answers everything else. A request whose
// target needs no unescaping, with up to 32 header fields, none
// repeated, costs the heap nothing.
//
// ServeLoop is offered each request without a body (no Content-Length
// above zero, no Transfer-Encoding), once the server has read, parsed
// and checked its head as for ServeHTTP: a request the server refuses
// (400, 431, 501, 505, 417, ...) is refused before any handler sees it,
// and the read timeouts apply alike. Requests with a body, and "OPTIONS
// *", go to ServeHTTP. ServeLoop runs on the loop, whether or not
// Server.Inline is set, so it must never block.
//
// ServeLoop answers r through w and returns true, or returns false for
// ServeHTTP to answer r instead: whatever it wrote to w is then dropped.
// r and w, and every string and slice they return, are the loop's, and
// valid only until ServeLoop returns.
//
// The server frames the answer as it frames ServeHTTP's: it writes the
// status line, the handler's header fields, Date, Content-Length (of the
// body written; none for a HEAD request whose handler wrote none, nor
// for a status that has no body), Connection as the request asks
// (close, or keep-alive for an HTTP/1.0 client that asked to be kept),
// and the body, dropped for HEAD. A pipelined
// request's answer follows the answers of the requests before it, and
// the answers to the requests that came together go out in one write. A
// ServeLoop that panics gets 500 Internal Server Error, and its
// connection closes, as a Handler's.
type LoopHandler interface {
	ServeLoop(w *LoopResponse, r *LoopRequest) bool
}

// LoopRequest is a request as a LoopHandler sees it: views of its head,
// already parsed and checked, valid until ServeLoop returns.
type LoopRequest struct {
	req  http.Request // what parseHead fills; its Header map is kept for the next
	head head
	buf  []byte             // the copy of a head longer than head.small
	vals [loopFields]string // the header's first values (parseHead's room)
}

// reset readies r for parseHead, with hdr, empty, for its header. Only
// what parseHead may read before writing it, or leave unwritten, is
// reset: it writes the rest of the request, and of the head's room
// (small, url, vals), before anything reads them, and a request it
// refuses is not read at all. Zeroing the whole of r, a head's room and
// an http.Request, for each request cost pipelined requests more than
// their handler.
func (r *LoopRequest) reset(hdr http.Header) {
	r.req.Header = hdr
	r.req.ContentLength, r.req.TransferEncoding, r.req.Trailer = 0, nil, nil
	r.head.facts = facts{}
}

// loopFields is how many header fields a LoopRequest holds the values of
// without an allocation: a browser's request, not only a load test's.
const loopFields = 32

// Method returns the request's method ("GET").
func (r *LoopRequest) Method() string { return r.req.Method }

// Target returns the request's target as it came: the path and query of
// http.Request.RequestURI ("/search?q=x").
func (r *LoopRequest) Target() string { return r.req.RequestURI }

// Path returns the target's path, unescaped, as http.Request.URL.Path.
func (r *LoopRequest) Path() string { return r.req.URL.Path }

// RawQuery returns the target's query, without its '?', as
// http.Request.URL.RawQuery.
func (r *LoopRequest) RawQuery() string { return r.req.URL.RawQuery }

// Host returns the host the request is for, as http.Request.Host.
func (r *LoopRequest) Host() string { return r.req.Host }

// Proto returns the request's protocol version ("HTTP/1.1").
func (r *LoopRequest) Proto() string { return r.req.Proto }

// Header returns the first value of the request's header field key, in
// any case, or "": http.Header.Get. As in an *http.Request, Host is not
// among the fields (Host has it). A key longer than 64 bytes not in
// canonical form costs an allocation.
func (r *LoopRequest) Header(key string) string {
	var room [64]byte
	if len(key) > len(room) {
		return r.req.Header.Get(key)
	}
	k := room[:len(key)]
	copy(k, key)
	canon, _ := canonicalKey(k)
	return first(r.req.Header, canon)
}

// LoopResponse is a LoopHandler's answer, which the server frames and
// queues once ServeLoop returns. Nothing goes out before then, so, unlike
// an http.ResponseWriter's, its calls may come in any order: the answer
// has the status WriteHeader set last, every header field AddHeader
// added, and the body Write appended, whichever came first.
type LoopResponse struct {
	code   int
	fields []byte // the handler's header lines
	body   []byte
}

// WriteHeader sets the answer's status, 200 unless it is called, in
// place of any set before; one outside 200 to 999 panics, which answers
// 500 Internal Server Error as any panic of ServeLoop does.
func (w *LoopResponse) WriteHeader(code int) {
	if code < 200 || code > 999 {
		panic("sluicehttp: LoopResponse.WriteHeader: invalid code " + strconv.Itoa(code))
	}
	w.code = code
}

// AddHeader adds the header field key: value to the answer, as
// http.Header.Add would, with a key that is not a token dropped and CR
// and LF in the value made spaces. Date, Content-Length, Transfer-Encoding
// and Connection are the server's to write: AddHeader drops them, in any
// case, so that an answer never carries two framings.
func (w *LoopResponse) AddHeader(key, value string) {
	if !isToken(key) || serverField(key) {
		return
	}
	w.fields = append(w.fields, key...)
	w.fields = append(w.fields, ": "...)
	w.fields = appendValue(w.fields, value)
	w.fields = append(w.fields, "\r\n"...)
}

// serverField reports whether key names a field the server writes into
// every answer itself.
func serverField(key string) bool {
	switch len(key) {
	case len("Date"):
		return strings.EqualFold(key, "Date")
	case len("Connection"):
		return strings.EqualFold(key, "Connection")
	case len("Content-Length"):
		return strings.EqualFold(key, "Content-Length")
	case len("Transfer-Encoding"):
		return strings.EqualFold(key, "Transfer-Encoding")
	}
	return false
}

// Write appends p to the answer's body. It never fails.
func (w *LoopResponse) Write(p []byte) (int, error) {
	w.body = append(w.body, p...)
	return len(p), nil
}

// WriteString appends s to the answer's body. It never fails.
func (w *LoopResponse) WriteString(s string) (int, error) {
	w.body = append(w.body, s...)
	return len(s), nil
}

// AvailableBuffer returns an empty slice whose capacity is free room
// after the body, to append to and pass to Write at once, as
// bufio.Writer.AvailableBuffer: an encoder that appends (strconv,
// AppendFormat) then writes the body in place.
func (w *LoopResponse) AvailableBuffer() []byte { return w.body[len(w.body):] }

// loopState's scratch for the LoopHandler: one request and one answer at
// a time, on the loop.
type loopScratch struct {
	req  LoopRequest
	resp LoopResponse

	// out is the loop's output buffer between runs of answers (keepOut),
	// at the size the last run grew it to: a run of pipelined answers is
	// framed into it without growing a buffer from the pool each time.
	// One per loop, not per connection: an idle connection holds none.
	out *pool.Buffer
}

// maxKept bounds what a loop keeps of a LoopHandler's buffers, and of the
// header map of its requests (in fields), for the next request: an
// unusually big one is left to the collector rather than held for good.
const (
	maxKeptBytes  = 64 << 10
	maxKeptFields = 64
)

// serveLoop offers the request whose head is p to the Handler's
// ServeLoop, and reports whether it answered it, into x's output; x is
// made if nil. It is called with no request of a run out on the pool
// before this one: its answer goes straight after those in x.out. A
// request it is not offered, or that ServeLoop declines, is left to the
// ordinary path, which parses it again and refuses it if it must.
func (hc *hconn) serveLoop(lh LoopHandler, p []byte, xp **exchange) bool {
	ls := hc.ls
	sc := ls.lsc
	if sc == nil {
		sc = &loopScratch{}
		ls.lsc = sc
	}
	r := &sc.req
	hdr := r.req.Header
	if len(hdr) > maxKeptFields {
		hdr = nil
	}
	clear(hdr)
	r.reset(hdr)
	var b []byte
	if len(p) <= len(r.head.small) {
		b = r.head.small[:len(p)]
	} else {
		if cap(r.buf) < len(p) || cap(r.buf) > maxKeptBytes {
			r.buf = make([]byte, len(p))
		}
		b = r.buf[:len(p)]
	}
	copy(b, p)
	if e := parseHead(b, &r.req, &r.head, r.vals[:]); e != nil {
		return false // the ordinary path refuses it
	}
	if r.head.length != 0 || r.head.chunked ||
		r.req.Method == http.MethodOptions && r.req.RequestURI == "*" {
		return false
	}
	w := &sc.resp
	w.code, w.fields, w.body = http.StatusOK, w.fields[:0], w.body[:0]
	if !hc.callLoop(lh, w, r) {
		return false
	}
	x := *xp
	if x == nil {
		x = newExchange(hc)
		*xp = x
	}
	if x.out == nil && sc.out != nil {
		x.out, sc.out = sc.out, nil
	}
	hc.consume(x, len(p))
	if r.req.Method == http.MethodPost {
		hc.flags |= fLastPOST
	}
	if w.code == 0 {
		// It panicked.
		x.appendRaw(errorResponse(errHandlerPanicked))
		hc.flags |= fClosing
	} else if hc.frameLoop(x, w, r) {
		hc.flags |= fClosing
	}
	if cap(w.body) > maxKeptBytes {
		w.body = nil
	}
	if cap(w.fields) > maxKeptBytes {
		w.fields = nil
	}
	if len(x.out.B) >= postSize && x.writeOnLoop() != nil {
		// Refused (past sluice.WithMaxOutbound): no answer may follow
		// the one cut.
		hc.flags |= fClosing
	}
	return true
}

// callLoop runs ServeLoop, and reports whether it answered: a ServeLoop
// that panicked answered, with w.code 0. The panic is logged as a
// Handler's is, unless it is http.ErrAbortHandler.
func (hc *hconn) callLoop(lh LoopHandler, w *LoopResponse, r *LoopRequest) (answered bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				hc.s.logf("http: panic serving %v: %v\n%s", hc.c.RemoteAddr(), v, buf)
			}
			w.code, answered = 0, true
		}
	}()
	return lh.ServeLoop(w, r)
}

// frameLoop appends w's answer to r to x's output, framed as commit
// frames a handler's, and reports whether the connection closes after
// it.
func (hc *hconn) frameLoop(x *exchange, w *LoopResponse, r *LoopRequest) (closeAfter bool) {
	req := &r.req
	isHEAD := req.Method == http.MethodHead
	hasBody := bodyAllowed(w.code)
	hasCL := hasBody && (!isHEAD || len(w.body) > 0)
	conn := r.head.first(req.Header, hasConnection, "Connection")
	wants10KeepAlive := req.ProtoMajor == 1 && req.ProtoMinor == 0 && hasToken(conn, "keep-alive")
	closeAfter = req.Close || hasToken(conn, "close") || hc.s.shutting.Load()
	setConn := ""
	switch {
	case closeAfter:
		if req.ProtoAtLeast(1, 1) {
			setConn = "close"
		}
	case wants10KeepAlive:
		setConn = "keep-alive"
	}

	x.appendRaw(nil)
	out := appendStatusLine(x.out.B, req.ProtoAtLeast(1, 1), w.code)
	out = append(out, w.fields...)
	out = append(out, *hc.s.date.Load()...)
	if hasCL {
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, int64(len(w.body)), 10)
		out = append(out, "\r\n"...)
	}
	if setConn != "" {
		out = append(append(append(out, "Connection: "...), setConn...), "\r\n"...)
	}
	out = append(out, "\r\n"...)
	if hasBody && !isHEAD {
		out = append(out, w.body...)
	}
	x.out.B = out
	return closeAfter
}

// flushLoop ends a run that handed nothing to the pool: it writes the
// LoopHandler's answers, then the refusal that ended the run, if any. A
// write refused (past sluice.WithMaxOutbound) closes the connection, as
// an inline answer's does: its client would otherwise wait for an answer
// that never comes.
func (hc *hconn) flushLoop(x *exchange) {
	if x.out != nil && len(x.out.B) > 0 {
		_ = x.writeOnLoop()
	}
	hc.keepOut(x)
	x.releaseLocked()
	if x.p.failure() != nil {
		hc.close()
		return
	}
	if x.tail != nil {
		hc.answer(x.tail)
		return
	}
	hc.recycle(x)
}

// keepOut keeps x's output buffer, written and empty, as the loop's for
// its next run of LoopHandler answers (loopScratch.out), unless it grew
// past maxKeptBytes. Only an exchange whose output only the loop touched
// gives it: one handed to the pool, or hijacked, does not come here, or
// is passed over.
func (hc *hconn) keepOut(x *exchange) {
	sc := hc.ls.lsc
	if sc == nil || sc.out != nil || x.out == nil || len(x.out.B) > 0 || x.hj != nil {
		return
	}
	if cap(x.out.B) > maxKeptBytes {
		// Grown past the bound, here or by another exchange that gave it
		// back to the shared pool, which may hand it out again and again:
		// the pool has it back, and the loop starts a small one of its
		// own rather than pass over every big one the pool hands it.
		sc.out = new(pool.Buffer)
		return
	}
	sc.out, x.out = x.out, nil
}
