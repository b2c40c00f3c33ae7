package sluice

import (
	"errors"
	"sync/atomic"
)

// Stats is a snapshot of an engine's connection counters, from
// Engine.Stats. Counts are since the engine started.
type Stats struct {
	// Conns is how many connections are admitted and not yet closed,
	// including any accepted by one loop and not yet opened by another,
	// any still sending their PROXY header, and dials still connecting.
	Conns int
	// LoopConns is how many connections each loop holds open, by
	// Loop.Index, as CountConnections counts them: a loop's share of
	// Conns, without those on their way to it.
	LoopConns []int
	// Accepted counts connections admitted: within every limit. With
	// WithProxyProtocol a connection counts once its header is read, since
	// the per-source limit counts the client the header names.
	Accepted uint64
	// RejectedMaxConns counts connections closed on accept because the
	// engine held as many as it may (WithMaxConnections).
	RejectedMaxConns uint64
	// RejectedPerSource counts connections closed on accept because their
	// source held its maximum (WithMaxConnectionsPerSource).
	RejectedPerSource uint64
	// RejectedOverBudget counts connections closed on accept because the
	// connections together held more inbound bytes than WithInboundBudget
	// allows, or more unsent output than WithOutboundBudget allows.
	RejectedOverBudget uint64
	// RejectedNoDescriptors counts accepts that failed for want of a
	// descriptor, the process's (EMFILE) or the system's (ENFILE), or of
	// kernel memory (ENOBUFS, ENOMEM). Each stops the loop's accepts for
	// 100 ms: clients wait in the kernel's queue meanwhile, which refuses
	// them once it is full.
	RejectedNoDescriptors uint64
	// ClosedByPeer, ClosedByHandler and ClosedByStop count the
	// connections that closed cleanly (OnClose received nil), by what
	// began the close: the peer's end of stream, the handler (the Close
	// action, Conn.Close; in half-close mode, where a connection closes
	// once both sides have ended, its CloseWrite), or a stop of the
	// engine, which
	// also counts the connections a stop whose time ran out reset
	// (ErrEngineStopped). ClosedByError counts those a failed read or
	// write closed, a reset by the peer among them, or a TLS record that
	// did not authenticate. HandlerPanics counts those closed because a
	// callback for them panicked (ErrHandlerPanic). With Killed, the
	// deadlines' counts, InboundTooLarge, OutboundOverLimit,
	// InboundOverBudget and OutboundOverBudget they count every
	// connection the handler saw close, once: connected UDP sockets and datagram sessions
	// (WithDatagramSessions) among them, which no peer closes.
	ClosedByPeer, ClosedByHandler, ClosedByStop, ClosedByError, HandlerPanics uint64
	// Killed counts connections reset by Engine.Kill.
	Killed uint64
	// IdleTimeouts, ReadTimeouts and WriteTimeouts count connections closed
	// by each deadline.
	IdleTimeouts, ReadTimeouts, WriteTimeouts uint64
	// InboundTooLarge counts connections closed for leaving more unread
	// inbound bytes than WithMaxInboundBuffered allows.
	InboundTooLarge uint64
	// OutboundRefused counts writes refused because they would have taken
	// a connection's queued output past WithMaxOutbound (ErrOutboundFull),
	// and OutboundOverLimit the connections reset for staying over
	// WithOutboundSoftLimit (ErrOutboundOverLimit).
	OutboundRefused, OutboundOverLimit uint64
	// InboundOverBudget counts connections reset because the connections
	// together held more inbound bytes than WithInboundBudget allows and
	// they held among the most, and OutboundOverBudget those reset because
	// they held among the most unsent output when the connections together
	// held more than WithOutboundBudget allows.
	InboundOverBudget, OutboundOverBudget uint64
	// InboundHeld is how many bytes the connections' inbound buffers hold
	// now, all together: what WithInboundBudget bounds. The bytes of a TLS
	// handshake still in progress are not among them; WithTLSMaxHandshakes
	// bounds those.
	InboundHeld int64
	// OutboundHeld is how many bytes of unsent output the connections
	// hold now, all together, as OutboundQueued counts them less what
	// AsyncWrite has posted and the loop has yet to take: what
	// WithOutboundBudget bounds.
	OutboundHeld int64
	// BytesIn and BytesOut count the bytes the loops read from
	// connections' sockets and wrote to them: TLS records as they travel,
	// PROXY headers and what a lingering close discards included; and
	// the bytes of the datagrams UDP sockets received and sent, those
	// dropped unseen included.
	BytesIn, BytesOut uint64
	// BackpressurePauses counts the times a connection stopped being read
	// because its unsent output passed WithBackpressureMark.
	BackpressurePauses uint64
	// ProxyTimeouts, ProxyInvalid and ProxyMissing count connections closed
	// before opening (WithProxyProtocol) because their PROXY header did not
	// complete in time, was malformed, or was missing where it is required;
	// ProxyInvalid and ProxyMissing also count the datagrams a UDP
	// listener dropped for the same reasons.
	ProxyTimeouts, ProxyInvalid, ProxyMissing uint64
	// RingBuffersExhausted counts receives on io_uring that found every
	// buffer of their loop's buffer ring taken. No bytes are lost: the
	// receive is armed again in a later turn. A count that climbs with the
	// load says the ring is too small for it: a loop has about 4 MiB of
	// buffers of WithReadBufferCap bytes each, and at least 16.
	RingBuffersExhausted uint64
	// Dialed counts connections Dial connected, DialFailed the dials and
	// enrollments that failed (OnDialFailed), and Enrolled the
	// connections Enroll opened. With DialTLS a connection is Dialed or
	// Enrolled once its handshake is over; one whose handshake fails is
	// counted in DialFailed and as a TLS handshake failure or timeout.
	Dialed, DialFailed, Enrolled uint64
	// TLSHandshakeFailures counts TLS connections, accepted, dialed or
	// enrolled, closed unseen because their handshake failed, or because
	// the engine ran as many handshakes as WithTLSMaxHandshakes allows;
	// TLSHandshakeTimeouts those whose handshake did not end within
	// WithTLSHandshakeTimeout.
	TLSHandshakeFailures, TLSHandshakeTimeouts uint64
	// DatagramsTruncated counts datagrams larger than the read buffer
	// (WithReadBufferCap), which OnTraffic does not get
	// (ErrDatagramTruncated, DatagramErrorHandler).
	DatagramsTruncated uint64
	// DatagramsRateLimited counts datagrams dropped unseen because their
	// source was over WithDatagramRateLimit's rate.
	DatagramsRateLimited uint64
	// SessionsRefused counts datagrams dropped because their peer had no
	// session and their loop held as many as WithDatagramSessions allows
	// (ErrTooManySessions).
	SessionsRefused uint64
	// DatagramsSendFailed counts datagrams a UDP socket failed to send,
	// each once: those the kernel refused at once, an error Write, Writev
	// or AsyncWriteTo's callback is told; those it refused in a batch sent
	// after Write returned (PacketConn), a failure otherwise dropped, even
	// when the socket closed meanwhile; and those refused before reaching
	// it since no network carries them (EMSGSIZE, or EAFNOSUPPORT for an
	// IPv6 address on an IPv4 socket). A Write on a closed socket, or
	// without an address (ErrConnClosed, ErrNeedAddress), tried nothing
	// and is not counted. None of them counts in BytesOut.
	DatagramsSendFailed uint64
}

// counter names one of a loop's counters.
type counter int

const (
	countAccepted counter = iota
	countRejectedMaxConns
	countRejectedPerSource
	countRejectedOverBudget
	countRejectedNoDescriptors
	countClosedByPeer
	countClosedByHandler
	countClosedByStop
	countClosedByError
	countHandlerPanics
	countKilled
	countIdleTimeouts
	countReadTimeouts
	countWriteTimeouts
	countInboundTooLarge
	countOutboundRefused
	countOutboundOverLimit
	countInboundOverBudget
	countOutboundOverBudget
	countProxyTimeouts
	countProxyInvalid
	countProxyMissing
	countRingBuffersExhausted
	countDialed
	countDialFailed
	countEnrolled
	countTLSHandshakeFailures
	countTLSHandshakeTimeouts
	countDatagramsTruncated
	countDatagramsRateLimited
	countSessionsRefused
	countDatagramsSendFailed
	countBytesIn
	countBytesOut
	countBackpressurePauses
	numCounters
)

// counters are one loop's counts. The loop adds to them, and so do
// goroutines whose AsyncWrite is refused (countOutboundRefused), a path
// that is not hot; Engine.Stats sums every loop's.
type counters [numCounters]atomic.Uint64

func (cs *counters) add(c counter) { cs[c].Add(1) }

// addN adds n to c; sub takes n off it.
func (cs *counters) addN(c counter, n int) { cs[c].Add(uint64(n)) }
func (cs *counters) sub(c counter, n int)  { cs[c].Add(-uint64(n)) }

// countClose counts c, which the handler saw, as closed, by why: err, as
// OnClose receives it, and, for a clean close, what began it. The closes
// other counters count where they happen (Killed, the deadlines, the
// bounds) are not counted again.
func (l *eventloop) countClose(c *conn, err error) {
	if why, ok := closeCounter(err, c.flags&flagByPeer != 0, c.flags&flagByStop != 0); ok {
		l.counts.add(why)
	}
}

// closeCounter returns the counter of a close with err, begun by the peer
// or by a stop of the engine when those say so, and false for one that
// another counter counts where it happens.
func closeCounter(err error, byPeer, byStop bool) (counter, bool) {
	switch {
	case err == nil && byPeer:
		return countClosedByPeer, true
	case err == nil && byStop, err == ErrEngineStopped:
		return countClosedByStop, true
	case err == nil:
		return countClosedByHandler, true
	case err == ErrKilled, err == ErrIdleTimeout, err == ErrReadTimeout, err == ErrWriteTimeout,
		err == ErrInboundTooLarge, err == ErrOutboundOverLimit, err == ErrInboundOverBudget,
		err == ErrOutboundOverBudget:
		return 0, false
	case errors.Is(err, ErrHandlerPanic):
		return countHandlerPanics, true
	}
	return countClosedByError, true
}

// stats sums the counters of every loop into a Stats.
func (e *engine) stats() Stats {
	var sum [numCounters]uint64
	perLoop := make([]int, len(e.loops))
	for i, l := range e.loops {
		for i := range sum {
			sum[i] += l.counts[i].Load()
		}
		perLoop[i] = int(l.count.Load())
	}
	return Stats{
		Conns:                 e.table.Len(),
		LoopConns:             perLoop,
		Accepted:              sum[countAccepted],
		RejectedMaxConns:      sum[countRejectedMaxConns],
		RejectedPerSource:     sum[countRejectedPerSource],
		RejectedOverBudget:    sum[countRejectedOverBudget],
		RejectedNoDescriptors: sum[countRejectedNoDescriptors],
		ClosedByPeer:          sum[countClosedByPeer],
		ClosedByHandler:       sum[countClosedByHandler],
		ClosedByStop:          sum[countClosedByStop],
		ClosedByError:         sum[countClosedByError],
		HandlerPanics:         sum[countHandlerPanics],
		Killed:                sum[countKilled],
		IdleTimeouts:          sum[countIdleTimeouts],
		ReadTimeouts:          sum[countReadTimeouts],
		WriteTimeouts:         sum[countWriteTimeouts],
		InboundTooLarge:       sum[countInboundTooLarge],
		OutboundRefused:       sum[countOutboundRefused],
		OutboundOverLimit:     sum[countOutboundOverLimit],
		InboundOverBudget:     sum[countInboundOverBudget],
		OutboundOverBudget:    sum[countOutboundOverBudget],
		InboundHeld:           e.mem.held.Load(),
		OutboundHeld:          e.mem.out.Load(),
		BytesIn:               sum[countBytesIn],
		BytesOut:              sum[countBytesOut],
		BackpressurePauses:    sum[countBackpressurePauses],
		ProxyTimeouts:         sum[countProxyTimeouts],
		ProxyInvalid:          sum[countProxyInvalid],
		ProxyMissing:          sum[countProxyMissing],
		RingBuffersExhausted:  sum[countRingBuffersExhausted],
		Dialed:                sum[countDialed],
		DialFailed:            sum[countDialFailed],
		Enrolled:              sum[countEnrolled],
		TLSHandshakeFailures:  sum[countTLSHandshakeFailures],
		TLSHandshakeTimeouts:  sum[countTLSHandshakeTimeouts],
		DatagramsTruncated:    sum[countDatagramsTruncated],
		DatagramsRateLimited:  sum[countDatagramsRateLimited],
		SessionsRefused:       sum[countSessionsRefused],
		DatagramsSendFailed:   sum[countDatagramsSendFailed],
	}
}
