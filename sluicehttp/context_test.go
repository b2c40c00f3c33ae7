package sluicehttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequestContext checks a request's context as net/http gives it: the
// local address under http.LocalAddrContextKey, no deadline, not done
// while the handler runs, done (context.Canceled) once it returns; and
// that contexts derived from it, and functions context.AfterFunc
// registers, hear of its end (one whose stop came first does not run),
// without a goroutine left behind (serve's leak check).
func TestRequestContext(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		type seen struct {
			ctx, derived, timed context.Context
			cancels             []context.CancelFunc
			ran, stoppedRan     chan struct{}
			stopped             bool
			local               any
			hasDeadline         bool
			errDuring           error
		}
		got := make(chan *seen, 1)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s := &seen{ctx: r.Context(), ran: make(chan struct{}), stoppedRan: make(chan struct{})}
			s.local = s.ctx.Value(http.LocalAddrContextKey)
			_, s.hasDeadline = s.ctx.Deadline()
			s.errDuring = s.ctx.Err()
			var c1, c2 context.CancelFunc
			s.derived, c1 = context.WithCancel(s.ctx)
			s.timed, c2 = context.WithTimeout(s.ctx, time.Hour)
			s.cancels = []context.CancelFunc{c1, c2} // called only once the test has seen them end
			context.AfterFunc(s.ctx, func() { close(s.ran) })
			stop := context.AfterFunc(s.ctx, func() { close(s.stoppedRan) })
			s.stopped = stop()
			got <- s
			io.WriteString(w, "ok")
		})})
		resp, err := client(t).Get("http://" + addr + "/")
		require.NoError(t, err)
		resp.Body.Close()
		s := <-got
		defer func() {
			for _, cancel := range s.cancels {
				cancel()
			}
		}()
		assert.Equal(t, addr, s.local.(net.Addr).String())
		assert.False(t, s.hasDeadline)
		assert.NoError(t, s.errDuring)
		assert.True(t, s.stopped)
		for _, ctx := range []context.Context{s.ctx, s.derived, s.timed} {
			select {
			case <-ctx.Done():
			case <-time.After(deadline):
				t.Fatal("a context stayed open after its handler returned")
			}
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		}
		select {
		case <-s.ran:
		case <-time.After(deadline):
			t.Fatal("context.AfterFunc's function never ran")
		}
		assert.True(t, holdsFor(20*time.Millisecond, func() bool {
			select {
			case <-s.stoppedRan:
				return false
			default:
				return true
			}
		}), "a stopped AfterFunc ran")
		// Derived after the end, a context is done at once.
		late, cancel := context.WithCancel(s.ctx)
		defer cancel()
		assert.ErrorIs(t, late.Err(), context.Canceled)
	})
}

// TestDerivedContextEndsWithClient checks that a context derived from a
// request's hears that its client went while the handler still runs.
// (An inline handler runs on the loop, which hears of the client only
// once the handler returns.)
func TestDerivedContextEndsWithClient(t *testing.T) {
	ended, started := make(chan error, 1), make(chan struct{})
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		ctx, cancel := context.WithTimeout(r.Context(), deadline)
		defer cancel()
		<-ctx.Done()
		ended <- ctx.Err()
	})})
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	select {
	case <-started:
	case <-time.After(deadline):
		t.Fatal("the handler never ran")
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(deadline):
		t.Fatal("a derived context stayed open after the client went")
	}
}
