package sluicehttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
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

// TestDeriveAsTheContextEnds derives contexts from a request's context
// while it ends (a client that goes as its handler calls
// context.WithCancel): the context package checks that the parent is not
// done, then calls its AfterFunc holding the lock of the context it
// derives, which the function given takes. The function must not run
// before AfterFunc returns, or the handler hangs there.
func TestDeriveAsTheContextEnds(t *testing.T) {
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range 20000 {
			var c reqContext
			ended := make(chan struct{})
			go func() { c.cancel(); close(ended) }()
			ctx, cancel := context.WithCancel(&c)
			<-ctx.Done()
			cancel()
			<-ended
		}
	}()
	select {
	case <-finished:
	case <-time.After(deadline):
		t.Fatal("context.WithCancel hung on a request's context ending meanwhile")
	}
}

// TestAfterFuncOnEndedContext holds AfterFunc, on a context that has
// ended, to what the context package asks of it: the function runs, but
// not before AfterFunc returns, since the caller may hold a lock the
// function takes.
func TestAfterFuncOnEndedContext(t *testing.T) {
	var c reqContext
	c.cancel()
	var mu sync.Mutex
	ran, returned := make(chan struct{}), make(chan bool, 1)
	go func() {
		mu.Lock()
		stop := c.AfterFunc(func() {
			mu.Lock()
			mu.Unlock()
			close(ran)
		})
		mu.Unlock()
		returned <- stop()
	}()
	select {
	case stopped := <-returned:
		assert.False(t, stopped, "stop kept a function from running on an ended context")
	case <-time.After(deadline):
		t.Fatal("AfterFunc ran its function before returning, under its caller's lock")
	}
	select {
	case <-ran:
	case <-time.After(deadline):
		t.Fatal("AfterFunc's function never ran")
	}
}

// TestDerivedContextsAreForgotten checks that contexts derived from a
// request's and cancelled while its handler runs, and functions
// context.AfterFunc registered and stopped, are not held by the
// request's context: a long handler (a stream) that derives one per call
// to a backend would otherwise grow without bound.
func TestDerivedContextsAreForgotten(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		held := make(chan int, 1)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for range 1000 {
				_, cancel := context.WithTimeout(r.Context(), time.Hour)
				cancel()
				stop := context.AfterFunc(r.Context(), func() {})
				stop()
			}
			_, cancel := context.WithCancel(r.Context()) // one still live
			defer cancel()
			c := r.Context().(*reqContext)
			c.mu.Lock()
			held <- len(c.afters)
			c.mu.Unlock()
		})})
		resp, err := client(t).Get("http://" + addr + "/")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 1, <-held, "functions the request's context holds")
	})
}
