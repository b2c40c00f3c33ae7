package serve

import "context"

// A Handoff carries a server's handle (its engine, listener or event loop)
// from the goroutine that creates it, inside Serve or a boot callback, to Stop,
// which runs on another goroutine and may come first.
type Handoff[E any] struct {
	ch chan E
}

// NewHandoff returns an empty Handoff.
func NewHandoff[E any]() *Handoff[E] {
	return &Handoff[E]{ch: make(chan E, 1)}
}

// Put hands e over; call it once.
func (h *Handoff[E]) Put(e E) {
	h.ch <- e
}

// Take waits for the handle until ctx is done.
func (h *Handoff[E]) Take(ctx context.Context) (E, error) {
	select {
	case e := <-h.ch:
		h.ch <- e // leave it for the next Take
		return e, nil
	case <-ctx.Done():
		var zero E
		return zero, ctx.Err()
	}
}
