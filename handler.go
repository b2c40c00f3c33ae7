package sluice

import (
	"net"
	"time"
)

// Action tells the event loop what to do after a callback returns.
type Action int

const (
	// None continues as normal.
	None Action = iota
	// Close closes the connection gracefully: its queued output is sent,
	// its write side shut down, and input the peer still sends is read
	// and discarded until the peer's end of stream, within
	// WithLingeringClose's bounds, so that the peer receives every byte
	// written; then OnClose runs.
	Close
	// Shutdown stops the whole engine gracefully, as Engine.Stop does,
	// for at most WithShutdownTimeout (30 seconds by default), after which
	// connections still sending what they have queued are reset.
	Shutdown
)

// EventHandler is what a server, or a client, implements. Every callback for a connection
// runs on the event loop that owns it, one at a time, so handler code needs
// no locks for per-connection state. A callback that blocks stalls every
// connection of its loop: hand blocking work to a goroutine pool and answer
// with Conn.AsyncWrite.
type EventHandler interface {
	// OnBoot runs once the listeners are open, before the first accept.
	// Returning Shutdown stops the engine before it serves anything.
	OnBoot(eng Engine) Action

	// OnShutdown runs once, after every connection has closed and every
	// loop has stopped.
	OnShutdown(eng Engine)

	// OnOpen runs when a connection opens: accepted (with a PROXY protocol
	// mode set, once its PROXY header is read), dialed once its connect
	// succeeds, or enrolled. Bytes in out are sent after
	// anything OnOpen itself wrote with c.Write, and before anything else.
	// They count against WithMaxOutbound as any write does; out that
	// would pass it closes the connection, and OnClose receives an error
	// that errors.Is tells as ErrOutboundFull, since nothing else would
	// tell the handler that its first bytes were never sent.
	OnOpen(c Conn) (out []byte, action Action)

	// OnTraffic runs when inbound bytes are buffered for c. Bytes the
	// handler leaves unread are kept and offered again with the next event.
	OnTraffic(c Conn) Action

	// OnClose runs once c has closed, if OnOpen ran for it: a connection
	// refused by a limit or for its PROXY header closes unseen, and a dial
	// or enrollment that fails goes to OnDialFailed instead. err says
	// why: nil for a clean close by either side, otherwise an error that
	// errors.Is can test, such as syscall.ECONNRESET, ErrIdleTimeout,
	// ErrReadTimeout, ErrWriteTimeout, ErrInboundTooLarge, ErrKilled,
	// ErrEngineStopped or ErrHandlerPanic. A failed read or write comes
	// as the standard library gives it, an *os.SyscallError naming
	// "read" or "write", and the deadlines' errors match
	// os.ErrDeadlineExceeded too.
	//
	// c is still whole inside OnClose: its descriptor is closed, and its
	// place under WithMaxConnections and WithMaxConnectionsPerSource given
	// back, only after OnClose returns, so LocalAddr, Fd and the rest tell
	// the truth and the handler never holds more connections than the
	// limits allow. Writes to c fail with ErrConnClosed, and so does
	// Engine.Kill of its ID.
	OnClose(c Conn, err error) Action

	// OnTick runs on the first event loop when the engine was started
	// WithTicker(true): first right after OnBoot, then after each delay it
	// returns, until the engine starts to stop. After a panic it runs
	// again a second later.
	OnTick() (delay time.Duration, action Action)
}

// BuiltinEventEngine implements every EventHandler callback as a no-op.
// Embed it and override only the callbacks a server needs.
type BuiltinEventEngine struct{}

// OnBoot does nothing.
func (BuiltinEventEngine) OnBoot(Engine) Action { return None }

// OnShutdown does nothing.
func (BuiltinEventEngine) OnShutdown(Engine) {}

// OnOpen does nothing.
func (BuiltinEventEngine) OnOpen(Conn) ([]byte, Action) { return nil, None }

// OnTraffic does nothing; unread bytes stay buffered.
func (BuiltinEventEngine) OnTraffic(Conn) Action { return None }

// OnClose does nothing.
func (BuiltinEventEngine) OnClose(Conn, error) Action { return None }

// OnTick asks to be called again in a second.
func (BuiltinEventEngine) OnTick() (time.Duration, Action) { return time.Second, None }

// The handler may implement any of the interfaces below for events that
// only some servers need; the engine checks once for each.

// DialFailedHandler is an EventHandler that hears of dials and
// enrollments that fail (Engine.Dial, Engine.Enroll).
type DialFailedHandler interface {
	// OnDialFailed runs on the loop that tried, with the address and the
	// context given to Dial (for Enroll, the connection's remote address),
	// and why, a *net.OpError: errors.Is tells syscall.ECONNREFUSED,
	// ErrDialTimeout (which matches os.ErrDeadlineExceeded too),
	// ErrTooManyConns or ErrEngineStopped; with DialTLS, also
	// ErrTLSHandshakeTimeout, ErrTooManyHandshakes, or crypto/tls's own
	// error for a handshake that failed (errors.As finds a
	// *tls.CertificateVerificationError for a server that failed
	// verification). No OnOpen or OnClose runs for the connection.
	OnDialFailed(addr string, ctx any, err error)
}

// HalfCloseHandler is an EventHandler that hears when a connection in
// half-close mode (WithHalfClose, Conn.SetHalfClose) has read its peer's
// end of stream.
type HalfCloseHandler interface {
	// OnHalfClose runs once OnTraffic has been offered every byte the peer
	// sent; any it left unread are still buffered. c stays open for
	// writing until the handler closes it, with Close, CloseWrite or an
	// action, or a deadline does.
	//
	// It runs once for every connection in half-close mode whose peer
	// finishes while it is open, also when the handler has shut c's own
	// write side down already (CloseWrite), whether or not c was still
	// sending what it had queued then. A connection whose two sides are
	// both done closes: when OnHalfClose returns if its write side is
	// shut down already, else once its queued output is sent.
	OnHalfClose(c Conn) Action
}

// DrainHandler is an EventHandler that hears when a connection's unsent
// output has drained, to resume reading what feeds it: a proxy pauses one
// side (Conn.PauseRead) when the other's Conn.OutboundBuffered passes
// WithWriteBufferCap, and resumes it here.
type DrainHandler interface {
	// OnDrain runs when c's unsent output, having passed the high-water
	// mark (WithWriteBufferCap), has drained to half of it or less. A
	// goroutine that asks Conn.Writable just as the output falls may have
	// it run twice for one passing of the mark, both times with the
	// output at half the mark or less: resuming twice is harmless.
	OnDrain(c Conn) Action
}

// RefusalHandler is an EventHandler that answers the connections the
// engine refuses on accept, before it closes them, as Redis answers a
// client past maxclients with an error: a client that sends a request at
// once then reads why, not a bare end of stream.
type RefusalHandler interface {
	// OnRefuse runs on the loop that refused the connection, which for a
	// listener shared by several loops (the default) is the loop that
	// accepted it, so it may run on several loops at once. remote is the
	// client's address: after a PROXY header, the client the header
	// names; for a unix socket, the peer's path if it has one. reason
	// says why, and errors.Is tells which: ErrTooManyConns
	// (WithMaxConnections), ErrTooManyFromSource
	// (WithMaxConnectionsPerSource), ErrInboundOverBudget or
	// ErrOutboundOverBudget (the connections together hold more than
	// WithInboundBudget or WithOutboundBudget allows while the largest
	// holders are closed). A connection refused for the
	// connection limit is refused before its PROXY header is read, so
	// remote is then the balancer's address.
	//
	// The bytes it returns, if any, are written to the socket once,
	// without waiting, and the socket is closed: keep them small, a line
	// of text (a new socket takes a few kilobytes at once; the rest is
	// dropped). Nothing else of the connection is kept, and no OnOpen or
	// OnClose runs for it. The refusal is counted in Stats as it is
	// without the handler. Return nil to close the connection with no
	// answer.
	OnRefuse(remote net.Addr, reason error) []byte
}
