//go:build linux

package sluice

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// sockopt reads one socket option, as an integer, from a descriptor.
type sockopt struct {
	name string
	get  func(fd int) (int, error)
}

func intOpt(name string, level, opt int) sockopt {
	return sockopt{name, func(fd int) (int, error) { return unix.GetsockoptInt(fd, level, opt) }}
}

var (
	optNoDelay   = intOpt("TCP_NODELAY", unix.IPPROTO_TCP, unix.TCP_NODELAY)
	optKeepAlive = intOpt("SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE)
	optKeepIdle  = intOpt("TCP_KEEPIDLE", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
	optKeepIntvl = intOpt("TCP_KEEPINTVL", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
	optKeepCnt   = intOpt("TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
	optRcvBuf    = intOpt("SO_RCVBUF", unix.SOL_SOCKET, unix.SO_RCVBUF)
	optSndBuf    = intOpt("SO_SNDBUF", unix.SOL_SOCKET, unix.SO_SNDBUF)
	// optLinger is -1 when SO_LINGER is off, else its time in seconds.
	optLinger = sockopt{"SO_LINGER", func(fd int) (int, error) {
		l, err := unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER)
		if err != nil || l.Onoff == 0 {
			return -1, err
		}
		return int(l.Linger), nil
	}}
)

// optWant is the value an option must have: from lo to hi.
type optWant struct {
	opt    sockopt
	lo, hi int
}

func optIs(opt sockopt, v int) optWant           { return optWant{opt, v, v} }
func optBetween(opt sockopt, lo, hi int) optWant { return optWant{opt, lo, hi} }

// checkOpts reads each option of wants from c's socket, on c's loop, and
// checks it.
func checkOpts(t *testing.T, c Conn, wants []optWant, context string) {
	t.Helper()
	needsKernelSockets(t, "reads the options back with getsockopt")
	got := make([]int, len(wants))
	errs := make([]error, len(wants))
	onConnLoop(t, c, func() {
		for i, w := range wants {
			got[i], errs[i] = w.opt.get(c.Fd())
		}
	})
	for i, w := range wants {
		require.NoError(t, errs[i], "%s: getsockopt %s", context, w.opt.name)
		assert.True(t, w.lo <= got[i] && got[i] <= w.hi, "%s: %s is %d, want %d to %d",
			context, w.opt.name, got[i], w.lo, w.hi)
	}
}

// The Conn's socket options reach the socket, as getsockopt reads them
// back. Each step sets an option to a value other than the one before it,
// so that one that did nothing shows. The kernel doubles a buffer size it
// is given, for its own bookkeeping.
func TestConnSocketOptions(t *testing.T) {
	const small, large = 8 << 10, 48 << 10
	steps := []struct {
		name    string
		set     func(c Conn) error
		wantErr error // what errors.Is must find in the setter's error
		want    []optWant
	}{
		{"as accepted", nil, nil, []optWant{optIs(optNoDelay, 1), optIs(optKeepAlive, 0), optIs(optLinger, -1)}},
		{"SetNoDelay(false)", func(c Conn) error { return c.SetNoDelay(false) }, nil, []optWant{optIs(optNoDelay, 0)}},
		{"SetNoDelay(true)", func(c Conn) error { return c.SetNoDelay(true) }, nil, []optWant{optIs(optNoDelay, 1)}},
		{"SetKeepAlive(30s, 0, 0)", func(c Conn) error { return c.SetKeepAlive(30*time.Second, 0, 0) }, nil,
			[]optWant{optIs(optKeepAlive, 1), optIs(optKeepIdle, 30), optIs(optKeepIntvl, 6), optIs(optKeepCnt, 5)}},
		{"SetKeepAlive(10s, 2s, 3)", func(c Conn) error { return c.SetKeepAlive(10*time.Second, 2*time.Second, 3) }, nil,
			[]optWant{optIs(optKeepAlive, 1), optIs(optKeepIdle, 10), optIs(optKeepIntvl, 2), optIs(optKeepCnt, 3)}},
		{"SetKeepAlive(0, 1s, 1)", func(c Conn) error { return c.SetKeepAlive(0, time.Second, 1) }, nil,
			[]optWant{optIs(optKeepAlive, 0)}},
		// An interval of a fifth of the idle time is at least a second.
		{"SetKeepAlive(3s, 0, 0)", func(c Conn) error { return c.SetKeepAlive(3*time.Second, 0, 0) }, nil,
			[]optWant{optIs(optKeepAlive, 1), optIs(optKeepIdle, 3), optIs(optKeepIntvl, 1), optIs(optKeepCnt, 5)}},
		{"SetKeepAlive(-1s, 0, 0)", func(c Conn) error { return c.SetKeepAlive(-time.Second, 0, 0) }, nil,
			[]optWant{optIs(optKeepAlive, 0)}},
		{"SetReadBuffer(small)", func(c Conn) error { return c.SetReadBuffer(small) }, nil,
			[]optWant{optBetween(optRcvBuf, small, 2*small)}},
		{"SetReadBuffer(large)", func(c Conn) error { return c.SetReadBuffer(large) }, nil,
			[]optWant{optBetween(optRcvBuf, large, 2*large)}},
		{"SetWriteBuffer(small)", func(c Conn) error { return c.SetWriteBuffer(small) }, nil,
			[]optWant{optBetween(optSndBuf, small, 2*small)}},
		{"SetWriteBuffer(large)", func(c Conn) error { return c.SetWriteBuffer(large) }, nil,
			[]optWant{optBetween(optSndBuf, large, 2*large)}},
		{"SetLinger(0)", func(c Conn) error { return c.SetLinger(0) }, nil, []optWant{optIs(optLinger, 0)}},
		{"SetLinger(-1)", func(c Conn) error { return c.SetLinger(-1) }, nil, []optWant{optIs(optLinger, -1)}},
		// A positive time would make the loop's close block: refused, and
		// the option left as it was.
		{"SetLinger(5)", func(c Conn) error { return c.SetLinger(5) }, errors.ErrUnsupported, []optWant{optIs(optLinger, -1)}},
	}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		eng, addr := serve(t, h, p, WithNumEventLoop(1))
		c := dial(t, addr)
		id := h.next(t)
		sc := h.conn(id)
		for _, s := range steps {
			if s.set != nil {
				var err error
				onConnLoop(t, sc, func() { err = s.set(sc) })
				if s.wantErr != nil {
					assert.ErrorIs(t, err, s.wantErr, s.name)
				} else {
					assert.NoError(t, err, s.name)
				}
			}
			checkOpts(t, sc, s.want, s.name)
		}
		// The connection still works.
		require.NoError(t, echoOnce(c, []byte("still here")))
		c.Close()
		closed := h.closedErrs(t, id)

		// Once OnClose has returned the descriptor is gone, and may be
		// another socket's: the setters refuse rather than touch it.
		var errs []error
		waitFor(t, 5*time.Second, func() bool { return eng.Stats().Conns == 0 },
			func() string { return "the connection was not released" })
		onConnLoop(t, sc, func() {
			for _, s := range steps {
				if s.set != nil {
					errs = append(errs, s.set(sc))
				}
			}
		})
		for i, err := range errs {
			assert.ErrorIs(t, err, ErrConnClosed, "setter %d after OnClose", i)
		}
		return outcome{Closed: closed, Stats: closedStats(t, eng)}
	})
}

// WithTCPKeepAlive(d) turns keep-alive on for every accepted connection:
// the first probe after d, then one every d/5, at least a second, and the
// peer declared dead after 5 unanswered.
func TestWithTCPKeepAlive(t *testing.T) {
	tests := []struct {
		d                  time.Duration
		idle, intvl, count int
	}{
		{20 * time.Second, 20, 4, 5},
		{3 * time.Second, 3, 1, 5},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newLifetimes()
				eng, addr := serve(t, h, p, WithNumEventLoop(1), WithTCPKeepAlive(tt.d))
				c := dial(t, addr)
				id := h.next(t)
				checkOpts(t, h.conn(id), []optWant{optIs(optKeepAlive, 1), optIs(optKeepIdle, tt.idle),
					optIs(optKeepIntvl, tt.intvl), optIs(optKeepCnt, tt.count)}, "accepted")
				c.Close()
				return outcome{Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
			})
		})
	}
}

// A connection that set SetLinger(0) ends in a reset, which the peer reads
// as ECONNRESET, however it is closed: what it had yet to deliver is
// dropped rather than sent, as SO_LINGER of zero asks.
func TestSetLingerZeroResets(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		// close ends the connection from OnTraffic.
		close func(c Conn) Action
	}{
		{"lingering close off, Close action", []Option{WithLingeringClose(0, 0)},
			func(c Conn) Action { return Close }},
		{"Close action", nil, func(c Conn) Action { return Close }},
		{"Conn.Close", nil, func(c Conn) Action { c.Close(); return None }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newLifetimes()
				var lingerErr error
				h.traffic = func(c Conn) Action {
					c.Discard(-1)
					lingerErr = c.SetLinger(0)
					return tt.close(c)
				}
				eng, addr := serve(t, h, append([]Option{p, WithNumEventLoop(1)}, tt.opts...)...)
				c := dial(t, addr)
				id := h.next(t)
				_, err := c.Write([]byte("x"))
				require.NoError(t, err)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := c.Read(make([]byte, 1))
				assert.Zero(t, n)
				assert.ErrorIs(t, err, syscall.ECONNRESET, "the peer reads %s", readEnd(err))
				c.Close()
				closed := h.closedErrs(t, id)
				require.NoError(t, lingerErr)
				return outcome{Closed: closed, Stats: closedStats(t, eng)}
			})
		})
	}
}

// readEnd names how a read ended, for a failure's message.
func readEnd(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "bytes"
	case errors.Is(err, io.EOF):
		return "the end of the stream"
	case errors.As(err, &ne) && ne.Timeout():
		return "nothing: the connection is still open"
	}
	return fmt.Sprint(err)
}
