package main

import (
	"sync"

	"github.com/sluicenet/sluice"
)

// loopState is what the server keeps for each event loop: work other
// loops hand it for its clients. A client belongs to one loop, whose
// goroutine alone touches the client's own state (its subscriptions, its
// blocked command, its transaction); another loop that has something for
// it posts it here, and the loop takes it up between callbacks
// (sluice.Loop.Execute), as it would a read.
type loopState struct {
	srv  *server
	loop sluice.Loop

	// Pub/sub messages for this loop's clients, posted by publishers on
	// other loops and written in one task, however many were posted
	// before it ran.
	mu      sync.Mutex
	inbox   []delivery
	spare   []delivery // the inbox's other array, the loop's own
	posted  bool       // a task to drain the inbox is on its way
	drainFn func()
}

func newLoopState(s *server, lp sluice.Loop) *loopState {
	ls := &loopState{srv: s, loop: lp}
	ls.drainFn = ls.drain
	return ls
}

// delivery is a message for a client: its bytes, ready to write, and the
// subscription it came through, checked again on the client's loop, since
// the client may have dropped it since it was published.
type delivery struct {
	cl   *client
	msg  []byte
	kind subKind
	name string // the channel or pattern
}

// post hands d to the loop, from another, without waiting for it.
func (ls *loopState) post(d delivery) {
	ls.mu.Lock()
	ls.inbox = append(ls.inbox, d)
	first := !ls.posted
	ls.posted = true
	ls.mu.Unlock()
	if first && ls.loop.Execute(ls.drainFn) != nil {
		// The engine is stopping, and the clients with it.
		ls.mu.Lock()
		ls.posted = false
		ls.mu.Unlock()
	}
}

// drain writes the messages posted for the loop's clients, on the loop.
func (ls *loopState) drain() {
	ls.mu.Lock()
	batch := ls.inbox
	ls.inbox, ls.spare, ls.posted = ls.spare, nil, false
	ls.mu.Unlock()
	for i := range batch {
		d := &batch[i]
		d.cl.pending.Add(-int64(len(d.msg)))
		if d.cl.subscribed(d.kind, d.name) {
			d.cl.push(d.msg)
		}
		*d = delivery{}
	}
	ls.spare = batch[:0]
}
