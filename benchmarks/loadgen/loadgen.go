// Package loadgen drives echo servers for the side-by-side benchmarks, and
// costs as little CPU per round trip as it can so that saturation reflects
// the server: each worker is one goroutine locked to its thread, running its
// own epoll loop over raw nonblocking sockets (one read per readable event,
// one write per message), with no goroutine per connection and no allocation
// per round trip.
//
// A [Session] holds connections open and runs loads over them:
//
//   - closed loop ([Session.Run], [Session.Exchange]): every connection keeps
//     one message in flight and sends the next as soon as the echo is back;
//   - open loop ([Session.Pace]): messages go out at a fixed total rate, and a
//     round trip's latency counts from its intended send time, so a server
//     that falls behind shows it in the latency instead of slowing the load
//     (coordinated omission).
//
// [Accepts] measures connection setup instead: connect, one round trip, close.
// Every echo is checked byte for byte against what was sent.
//
// A [DatagramSession] drives a UDP echo server the same three ways from
// peers that are UDP sockets of their own, every echo matched to its
// datagram by a sequence number, and counts the datagrams not echoed in
// time as lost ([Result].Lost): loss is a figure, not an error. With
// [Config].InFlight above 1 its closed loop keeps that many datagrams in
// flight per peer and moves them with sendmmsg and recvmmsg, so that one
// generator core saturates a server that answers in batches.
//
// With [Config].TLS set, sessions speak TLS (the handshake on a goroutine,
// then the record layer in the worker's loop, every echo checked as
// plaintext), and [Handshakes] measures TLS connection setup: connect,
// handshake, one round trip, close.
package loadgen

import (
	"errors"
	"time"
)

// Result is what one load run measured.
type Result struct {
	RoundTrips int64         // round trips completed
	Elapsed    time.Duration // from the first send until the last echo or the drain deadline
	Latency    Histogram     // one entry per completed round trip
	Errors     Errors
	// TLS: what the handshakes negotiated (Negotiated), and how many of
	// Handshakes' resumed a session.
	TLS     string
	Resumed int64
	// Datagrams (DatagramSession): how many were not echoed within
	// LossTimeout, and how many echoes came after that.
	Lost, Late int64
}

// Rate returns round trips per second.
func (r *Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.RoundTrips) / r.Elapsed.Seconds()
}

// merge adds o, run at the same time as r, to r.
func (r *Result) merge(o *Result) {
	r.RoundTrips += o.RoundTrips
	r.Resumed += o.Resumed
	r.Lost += o.Lost
	r.Late += o.Late
	r.Latency.Merge(&o.Latency)
	r.Errors.Add(o.Errors)
}

// Errors counts what went wrong in a run, by kind. A correct server on a
// healthy machine produces none.
type Errors struct {
	Mismatch int64 // echoes whose bytes differ from those sent, or run past them
	Closed   int64 // connections the server closed or reset mid-run
	Timeout  int64 // round trips still unanswered at the drain deadline
	Dial     int64 // connections that could not be opened
}

// Total returns the number of errors of every kind.
func (e Errors) Total() int64 {
	return e.Mismatch + e.Closed + e.Timeout + e.Dial
}

// Add adds o's counts to e.
func (e *Errors) Add(o Errors) {
	e.Mismatch += o.Mismatch
	e.Closed += o.Closed
	e.Timeout += o.Timeout
	e.Dial += o.Dial
}

// ErrDial reports connections that could not be opened.
var ErrDial = errors.New("loadgen: dial")

// ErrConfig reports a Config that cannot be run.
var ErrConfig = errors.New("loadgen: bad config")

// drainTimeout bounds how long a run waits, after it stops sending, for the
// echoes still in flight. Past it the server has stalled.
var drainTimeout = 5 * time.Second

// epoch anchors the monotonic clock every worker reads.
var epoch = time.Now()

// now returns nanoseconds since epoch on the monotonic clock.
func now() int64 {
	return int64(time.Since(epoch))
}
