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
	ended  bool          // Err is context.Canceled: the only way it ends
	afters []*afterFunc
}

// afterFunc is a function to call once the context ends, unless stopped
// first; its pointer tells it from the others.
type afterFunc struct{ f func() }

func (c *reqContext) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *reqContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.ended {
			close(c.done)
		}
	}
	return c.done
}

func (c *reqContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return context.Canceled
	}
	return nil
}

func (c *reqContext) Value(key any) any {
	if key == http.LocalAddrContextKey {
		return c.local
	}
	return nil
}

func (c *reqContext) String() string { return "sluicehttp.requestContext" }

// AfterFunc arranges for f to run once the context ends, and returns a
// stop function that reports whether it kept f from running, and forgets
// f: a handler that derives many contexts over its life (one per call to
// a backend, each cancelled) leaves none of them held. The context
// package calls it to propagate the end to the contexts derived from this
// one, with an f that cancels them, which never blocks: f runs where the
// context ends (on the loop, for a client gone), as the context package
// runs it for its own contexts, so that a derived context is done once
// this one is. On a context that has ended already, f runs on a
// goroutine of its own, never before AfterFunc returns: the context
// package calls AfterFunc holding the lock of the context it derives,
// which f takes. (context.AfterFunc's own function always runs on a
// goroutine of its own, which the context package starts.)
func (c *reqContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.forget(a)
	}
}

// forget removes a from the functions to run, and reports whether it was
// there. Derived contexts are mostly cancelled last first (defer cancel),
// so the search starts at the end. c.mu is held.
func (c *reqContext) forget(a *afterFunc) bool {
	for i := len(c.afters) - 1; i >= 0; i-- {
		if c.afters[i] == a {
			last := len(c.afters) - 1
			c.afters[i] = c.afters[last]
			c.afters[last] = nil
			c.afters = c.afters[:last]
			return true
		}
	}
	return false
}

// cancel ends the context; later calls do nothing.
func (c *reqContext) cancel() {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	// Once it has ended, stop changes nothing.
	for _, a := range afters {
		a.f()
	}
}
