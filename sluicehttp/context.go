package sluicehttp

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// reqContext is a request's context, made with its request in one
// allocation: cancelled when the client goes or the handler returns, as
// net/http's, with http.LocalAddrContextKey set and no deadline. Its Done
// channel is made only when asked for. Contexts derived from it
// (context.WithCancel, WithTimeout, AfterFunc) hear of its end through
// its AfterFunc method, as they would from a context of the context
// package, without a goroutine watching it.
type reqContext struct {
	local net.Addr

	mu     sync.Mutex
	done   chan struct{} // made by the first Done
	err    error
	afters []*afterFunc
}

// afterFunc is a function to call once the context ends, unless stopped
// first.
type afterFunc struct {
	f       func()
	stopped bool // guarded by the context's mu
}

func (c *reqContext) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *reqContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

func (c *reqContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *reqContext) Value(key any) any {
	if key == http.LocalAddrContextKey {
		return c.local
	}
	return nil
}

func (c *reqContext) String() string { return "sluicehttp.requestContext" }

// AfterFunc arranges for f to run once the context ends, and returns a
// stop function that reports whether it kept f from running. The context
// package calls it to propagate the end to the contexts derived from this
// one, with an f that cancels them, which never blocks: f runs where the
// context ends (on the loop, for a client gone), as the context package
// runs it for its own contexts, so that a derived context is done once
// this one is. (context.AfterFunc's own function runs on a goroutine of
// its own, which the context package starts.)
func (c *reqContext) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		f()
		return func() bool { return false }
	}
	c.afters = append(c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.stopped || c.err != nil {
			return false
		}
		a.stopped = true
		return true
	}
}

// cancel ends the context; later calls do nothing.
func (c *reqContext) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	// Once err is set, stop changes nothing: stopped is read safely
	// without the lock.
	for _, a := range afters {
		if !a.stopped {
			a.f()
		}
	}
}
