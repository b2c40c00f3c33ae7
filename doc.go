// Package sluice is an event-loop network framework: a server implements
// EventHandler, and Run starts N event loops, each locked to an OS thread
// and owning its connections outright, which call it.
//
// A loop reads every connection into one shared buffer and hands the
// handler a view of it, so an idle connection holds no buffer and a
// handler that consumes what it is given costs no copy. Writes made in a
// callback are gathered and sent in one write when it returns. On epoll an
// echo round trip costs one epoll_wait, one read and one write, and no
// heap allocation.
//
// Callbacks for a connection run on its loop, one at a time, so per
// connection state needs no lock; a callback that blocks stalls its whole
// loop. Other goroutines reach a connection through the methods of Conn
// that say they are safe from any goroutine: they post a task to the loop
// and wake it only if it sleeps.
package sluice
