package sluicehttp

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice"
)

// hijackConn is a connection a handler took over (Hijack): a net.Conn
// over the Sluice connection. Its loop hands it what the client sends,
// up to a window, and stops reading the connection while the window is
// full; a Read that makes room wakes the loop. Writes are queued with
// AsyncWrite, and wait while the connection holds more unsent output
// than Server.WriteBufferSize.
type hijackConn struct {
	c             sluice.Conn
	local, remote net.Addr
	p             poster
	inline        atomic.Bool // hijacked by an inline handler, still running on the loop

	wmu sync.Mutex // one Write at a time

	mu      sync.Mutex
	in      []byte // received, not yet read
	eof     bool   // the client finished sending
	err     error  // why the connection closed, once it did
	closed  bool   // Close was called
	more    bool   // the loop waits for room
	ready   chan struct{}
	rdl     time.Time // read deadline
	wdl     time.Time // write deadline
	changed chan struct{}
}

// hijackWindow is how much a hijacked connection holds unread before its
// loop stops reading the client.
const hijackWindow = 64 << 10

func newHijackConn(x *exchange) *hijackConn {
	hc := x.hc
	hj := &hijackConn{c: x.c, ready: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
	hj.inline.Store(x.inline)
	hj.remote = x.c.RemoteAddr()
	hj.local = hc.local
	hj.p.init(hc)
	return hj
}

// take takes what the connection has buffered, on the loop, up to the
// window.
func (hj *hijackConn) take(hc *hconn) {
	p, _ := hc.c.Peek(-1)
	hj.mu.Lock()
	k := min(len(p), max(hijackWindow-len(hj.in), 0))
	hj.in = append(hj.in, p[:k]...)
	full := k < len(p)
	hj.more = full
	hj.mu.Unlock()
	signal(hj.ready)
	discard(hc.c, k)
	if full {
		hc.pause(pauseHijack)
	} else {
		hc.unpause(pauseHijack)
	}
}

// finished records, on the loop, that the client finished sending: what
// it sent is read, then io.EOF.
func (hj *hijackConn) finished() {
	hj.mu.Lock()
	hj.eof = true
	hj.mu.Unlock()
	signal(hj.ready)
}

// gone records, on the loop, that the connection closed, with what
// OnClose received: unless the client had finished sending, a Read fails
// once what came is read, with the reset, or with an error that matches
// net.ErrClosed for a close of the server's own (the engine's stop), as
// a net.Conn closed under its reader. Writes fail from then on.
func (hj *hijackConn) gone(err error) {
	if err == nil || errors.Is(err, sluice.ErrEngineStopped) {
		// The server's own close, a Stop's reset included: as a net.Conn
		// closed under its reader.
		err = sluice.ErrConnClosed
	}
	hj.mu.Lock()
	if hj.err == nil {
		hj.err = err
	}
	hj.mu.Unlock()
	hj.p.fail(sluice.ErrConnClosed)
	signal(hj.ready)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Read reads what the client sent, waiting for it until the read
// deadline.
func (hj *hijackConn) Read(b []byte) (int, error) {
	hj.mu.Lock()
	for {
		switch {
		case hj.closed:
			hj.mu.Unlock()
			return 0, net.ErrClosed
		case !hj.rdl.IsZero() && !time.Now().Before(hj.rdl):
			// As a net.Conn's: past its deadline, a Read fails even
			// with bytes waiting.
			hj.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		case len(hj.in) > 0:
			n := copy(b, hj.in)
			hj.in = hj.in[n:]
			if len(hj.in) == 0 {
				hj.in = nil // an idle connection keeps no buffer
			}
			wake := hj.more && len(hj.in) <= hijackWindow/2
			if wake {
				hj.more = false
			}
			hj.mu.Unlock()
			if wake {
				_ = hj.c.Wake(nil)
			}
			return n, nil
		case hj.eof:
			hj.mu.Unlock()
			return 0, io.EOF
		case hj.err != nil:
			err := hj.err
			hj.mu.Unlock()
			return 0, err
		}
		dl := hj.rdl
		hj.mu.Unlock()
		if !wait(hj.ready, hj.changed, dl) {
			return 0, os.ErrDeadlineExceeded
		}
		hj.mu.Lock()
	}
}

// wait waits for ready, or for changed (a deadline moved; nil for none),
// until deadline if it is not zero; it reports false when the deadline
// has passed.
func wait(ready, changed chan struct{}, deadline time.Time) bool {
	if deadline.IsZero() {
		select {
		case <-ready:
		case <-changed:
		}
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ready:
		return true
	case <-changed:
		return true
	case <-t.C:
		return false
	}
}

// Write queues b on the connection, waiting while it holds more unsent
// output than its mark, until the write deadline, which a deadline set
// while it waits moves.
func (hj *hijackConn) Write(b []byte) (int, error) {
	hj.wmu.Lock()
	defer hj.wmu.Unlock()
	n := 0
	for n == 0 || n < len(b) {
		hj.mu.Lock()
		closed, dl := hj.closed, hj.wdl
		hj.mu.Unlock()
		if closed {
			return n, net.ErrClosed
		}
		if !dl.IsZero() && !time.Now().Before(dl) {
			return n, os.ErrDeadlineExceeded
		}
		if len(b) == 0 {
			return 0, nil
		}
		buf := outPool.Get()
		k := min(len(b)-n, postSize)
		buf.B = append(buf.B, b[n:n+k]...)
		// An inline handler runs on the loop, which must not wait on
		// itself.
		if err := hj.p.send(buf, !hj.inline.Load(), hj.writeDeadline); err != nil {
			if errors.Is(err, sluice.ErrEngineStopped) {
				err = sluice.ErrConnClosed // gone with the engine, before its close was heard
			}
			return n, err
		}
		n += k
	}
	return n, nil
}

func (hj *hijackConn) writeDeadline() time.Time {
	hj.mu.Lock()
	defer hj.mu.Unlock()
	return hj.wdl
}

// Close closes the connection once what was written is sent; Reads and
// Writes waiting fail.
func (hj *hijackConn) Close() error {
	hj.mu.Lock()
	if hj.closed {
		hj.mu.Unlock()
		return net.ErrClosed
	}
	hj.closed = true
	hj.in = nil
	hj.mu.Unlock()
	signal(hj.ready)
	hj.p.fail(net.ErrClosed) // a Write waiting fails, as on a net.Conn
	return hj.c.Close()
}

func (hj *hijackConn) LocalAddr() net.Addr  { return hj.local }
func (hj *hijackConn) RemoteAddr() net.Addr { return hj.remote }

// SetDeadline, SetReadDeadline and SetWriteDeadline set the deadlines as
// a net.Conn's: for the Reads and Writes to come, and for those waiting.
func (hj *hijackConn) SetDeadline(t time.Time) error {
	hj.mu.Lock()
	hj.rdl, hj.wdl = t, t
	hj.mu.Unlock()
	signal(hj.changed)
	hj.p.signal()
	return nil
}

func (hj *hijackConn) SetReadDeadline(t time.Time) error {
	hj.mu.Lock()
	hj.rdl = t
	hj.mu.Unlock()
	signal(hj.changed)
	return nil
}

func (hj *hijackConn) SetWriteDeadline(t time.Time) error {
	hj.mu.Lock()
	hj.wdl = t
	hj.mu.Unlock()
	hj.p.signal() // a Write waiting looks at it again
	return nil
}
