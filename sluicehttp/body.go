package sluicehttp

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/pool"
)

// body is a request's body: the loop decodes what arrives of it into a
// window the handler reads from, and stops reading the connection while
// the window is full; a Read that empties it wakes the loop for more. An
// inline handler's body comes whole before the handler runs.
type body struct {
	c     sluice.Conn
	w     *response
	limit int64 // MaxBodyBytes, or none

	mu      sync.Mutex
	dec     decoder // the loop's, under mu for what commit asks of it
	taken   int64   // bytes of data decoded
	dropped int64   // bytes dropped after the handler was done with it
	buf     *pool.Buffer
	r       int           // buf.B[r:] is unread
	eof     bool          // all of it has come
	err     error         // what ends it after the data in buf
	closed  bool          // the handler closed it, or returned
	more    bool          // the loop waits for room in the window
	waiting bool          // a reader waits for data
	ready   chan struct{} // wakes the reader
	trailer http.Header
	sawEOF  bool // a Read returned io.EOF
	cont    bool // 100 Continue is owed before the first Read waits
}

// bodyWindow is how much of a body the loop decodes ahead of its reader.
const bodyWindow = 64 << 10

// maxPostHandlerReadBytes is how much of a body its handler left unread
// the server will still read, and drop, to keep the connection: more, and
// it closes the connection instead (net/http's bound).
const maxPostHandlerReadBytes = 256 << 10

// Errors of a body's Read, besides its framing's: the ReadTimeout passed.
var errBodyTimeout error = os.ErrDeadlineExceeded

// errBodyLeft ends a body its handler left with more unread than the
// server will read for it.
var errBodyLeft = errors.New("sluicehttp: request body left unread")

func newBody(hc *hconn, w *response) *body {
	b := &body{c: hc.c, w: w, limit: hc.s.bodyLimit(), ready: make(chan struct{}, 1)}
	b.dec.chunked = w.head.chunked
	b.dec.left = uint64(max(w.head.length, 0))
	b.cont = w.head.expect && !hc.s.Inline
	return b
}

// Body states, as the answer's head asks (state).
const (
	bodyKept       = iota // whole, or the loop drops the rest: the connection is kept
	bodyUnfinished        // broken, or promised and not waited for: close
	bodyTooLong           // more is left than is worth reading: close, saying so
)

// state tells the answer's head what the body leaves of the connection.
// expect says whether the client waits for 100 Continue.
func (b *body) state(expect bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.err != nil:
		return bodyUnfinished
	case expect && !b.sawEOF:
		return bodyUnfinished
	case b.eof:
		return bodyKept
	case !b.dec.chunked && b.dec.left >= maxPostHandlerReadBytes:
		return bodyTooLong
	}
	// The rest is dropped as it comes: a chunked body, whose length is
	// unknown, closes the connection after the answer once more than
	// maxPostHandlerReadBytes of it came (drop), as net/http's server,
	// which reads that much before it answers, closes it.
	return bodyKept
}

// feed decodes what p holds of the body, on the loop. It returns how much
// of p it took, and whether the body has ended (whole, broken, or over
// its bound) or the window is full.
func (b *body) feed(hc *hconn, p []byte) (n int, finished, full bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.drop(hc, p)
	}
	if b.buf == nil {
		b.buf = outPool.Get()
	}
	if b.r > 0 {
		// What was read goes, so that the buffer holds the window and no
		// more: a reader that never empties it would otherwise grow it
		// with the whole body.
		k := copy(b.buf.B, b.buf.B[b.r:])
		b.buf.B, b.r = b.buf.B[:k], 0
	}
	room := bodyWindow - (len(b.buf.B) - b.r)
	whole := hc.s.Inline // the handler runs once it has all come
	if whole {
		room = 1 << 30
		if left := b.limit - b.taken; left < int64(room) {
			room = int(left) + 1 // one past the bound tells it was passed
		}
	}
	was := len(b.buf.B)
	data, n, err := b.dec.decode(p, b.buf.B, max(room, 0))
	b.buf.B = data
	b.taken += int64(len(data) - was)
	switch {
	case b.limit > 0 && b.taken > b.limit:
		b.buf.B = b.buf.B[:len(b.buf.B)-int(b.taken-b.limit)]
		b.err = &http.MaxBytesError{Limit: b.limit}
		finished = true
	case err != nil:
		b.err = err
		finished = true
	case b.dec.done():
		b.eof, b.trailer = true, b.dec.trailer
		finished = true
	case !whole && len(b.buf.B)-b.r >= bodyWindow:
		b.more, full = true, true
	}
	b.wake()
	return n, finished, full
}

// drop decodes what p holds of a body nobody will read, and drops it,
// within maxPostHandlerReadBytes. b.mu is held.
func (b *body) drop(hc *hconn, p []byte) (n int, finished, full bool) {
	if hc.ls.scratch == nil {
		hc.ls.scratch = make([]byte, 16<<10)
	}
	for n < len(p) && !b.dec.done() {
		// No further than one byte past the bound, however much came at
		// once, so that what is kept does not depend on how it arrived.
		end := min(len(p), n+int(maxPostHandlerReadBytes+1-b.dropped))
		_, k, err := b.dec.decode(p[n:end], hc.ls.scratch[:0], len(hc.ls.scratch))
		n += k
		b.dropped += int64(k)
		if err != nil {
			b.err = err
			return n, true, false
		}
		if k == 0 {
			break
		}
	}
	switch {
	case b.dec.done():
		b.eof = true
		return n, true, false
	case b.dropped > maxPostHandlerReadBytes:
		b.err = errBodyLeft
		return n, true, false
	}
	return n, false, false
}

// wake wakes a reader waiting for data. b.mu is held.
func (b *body) wake() {
	if b.waiting {
		b.waiting = false
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
}

// fail ends the body with err, after the data that came, on the loop.
func (b *body) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.eof && b.err == nil {
		b.err = err
	}
	b.wake()
}

// broken reports whether the body ended otherwise than whole.
func (b *body) broken() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err != nil
}

// overLimit reports whether the body grew past MaxBodyBytes.
func (b *body) overLimit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	var mb *http.MaxBytesError
	return errors.As(b.err, &mb)
}

// noContinue forgets the 100 Continue owed: the answer has begun.
func (b *body) noContinue() {
	b.mu.Lock()
	b.cont = false
	b.mu.Unlock()
}

// handlerDone runs once the handler has returned: what is left of the
// body is dropped as it comes.
func (b *body) handlerDone() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closeLocked()
}

func (b *body) closeLocked() {
	if b.closed {
		return
	}
	b.closed = true
	if b.buf != nil {
		outPool.Put(b.buf)
		b.buf, b.r = nil, 0
	}
	if b.more {
		b.more = false
		_ = b.c.Wake(nil) // the loop drops the rest
	}
}

// Read reads the body. It waits for data, and the first time it would,
// sends 100 Continue to a client that asked for it.
func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if !b.closed && b.cont && b.r == b.unreadEnd() && !b.eof && b.err == nil {
		b.cont = false
		b.mu.Unlock()
		b.sendContinue()
		b.mu.Lock()
	}
	for !b.closed && b.r == b.unreadEnd() && !b.eof && b.err == nil {
		b.waiting = true
		b.mu.Unlock()
		<-b.ready
		b.mu.Lock()
	}
	switch {
	case b.closed:
		b.mu.Unlock()
		return 0, http.ErrBodyReadAfterClose
	case b.r < b.unreadEnd():
		n := copy(p, b.buf.B[b.r:])
		b.r += n
		wake := b.more && b.unreadEnd()-b.r <= bodyWindow/2
		if wake {
			b.more = false
		}
		b.mu.Unlock()
		if wake {
			_ = b.c.Wake(nil) // room for more: the loop takes it
		}
		return n, nil
	case b.eof:
		if !b.sawEOF && b.trailer != nil {
			b.w.req.Trailer = mergeTrailer(b.w.req.Trailer, b.trailer)
		}
		b.sawEOF = true
		b.mu.Unlock()
		return 0, io.EOF
	}
	err := b.err
	b.mu.Unlock()
	return 0, err
}

func (b *body) unreadEnd() int {
	if b.buf == nil {
		return 0
	}
	return len(b.buf.B)
}

// Close closes the body: Reads fail from now on, and what is left of it
// is dropped as it comes.
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closeLocked()
	return nil
}

// sendContinue sends 100 Continue, unless the answer has begun.
func (b *body) sendContinue() {
	w := b.w
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if !w.wroteHeader && !w.hijacked {
		x.appendRaw(continueLine)
		_ = x.post()
	}
}
