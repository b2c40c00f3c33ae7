package sluice

import (
	"errors"
	"net"
	"os"

	"github.com/sluicenet/sluice/internal/socket"
)

var (
	// ErrEngineStopped is returned for work posted to an engine that has
	// stopped, or is stopping and no longer takes it. OnClose receives it
	// for the connections a Stop whose context ended had to reset.
	ErrEngineStopped = errors.New("sluice: engine stopped")

	// ErrConnClosed is returned for work posted to a connection that has
	// already closed, and by Engine.Kill for an ID that names no live
	// connection. errors.Is matches it with net.ErrClosed too, as it does
	// the errors of a closed net.Conn.
	ErrConnClosed error = closedError{}

	// ErrHandlerPanic is what OnClose receives for a connection whose
	// callback panicked, and what the error of a TLS handshake wraps when
	// a callback of its tls.Config panicked (TLSFailedHandler,
	// OnDialFailed). The panic value and stack are logged.
	ErrHandlerPanic = errors.New("sluice: handler panicked")

	// ErrInvalidAddr is returned by Run for an address it cannot listen on
	// (WithListener's included) and by Dial for one it cannot parse;
	// OnDialFailed receives it for a DialLocalAddr that does not fit.
	ErrInvalidAddr = errors.New("sluice: invalid address")

	// ErrNotListener is returned by Run and Start for a file or listener
	// handed to WithListenerFile or WithNetListener that is not a
	// listening TCP or unix stream socket.
	ErrNotListener = socket.ErrNotListener

	// ErrSocketActivation is returned by ListenFDs for a socket
	// activation environment it cannot read.
	ErrSocketActivation = errors.New("sluice: malformed socket activation environment")

	// ErrInvalidProxyMode is returned by ProxyMode.UnmarshalText for a name
	// that is not "off", "optional" or "required".
	ErrInvalidProxyMode = errors.New("sluice: invalid PROXY protocol mode")

	// ErrTLSHandshakeTimeout is what TLSFailedHandler.OnTLSFailed receives
	// for a connection whose TLS handshake did not end within
	// WithTLSHandshakeTimeout, and what OnDialFailed's error wraps for a
	// dial's (DialTLS).
	ErrTLSHandshakeTimeout = errors.New("sluice: TLS handshake timed out")

	// ErrTooManyHandshakes is what TLSFailedHandler.OnTLSFailed receives
	// for a connection refused because the engine ran as many TLS
	// handshakes as WithTLSMaxHandshakes allows, and what OnDialFailed's
	// error wraps for a dial refused so (DialTLS).
	ErrTooManyHandshakes = errors.New("sluice: too many TLS handshakes under way")

	// ErrKilled is what OnClose receives for a connection reset by
	// Engine.Kill.
	ErrKilled = errors.New("sluice: connection killed")

	// ErrIdleTimeout is what OnClose receives for a connection that moved
	// no bytes either way for its idle timeout (WithIdleTimeout,
	// Conn.SetIdleTimeout). Like ErrReadTimeout and ErrWriteTimeout, it
	// matches os.ErrDeadlineExceeded under errors.Is and is a net.Error
	// whose Timeout method reports true, as a net.Conn's deadline errors
	// are.
	ErrIdleTimeout error = timeoutError("sluice: idle timeout")

	// ErrReadTimeout is what OnClose receives for a connection whose
	// partial frame did not complete within the read timeout
	// (WithReadTimeout).
	ErrReadTimeout error = timeoutError("sluice: read timeout")

	// ErrWriteTimeout is what OnClose receives for a connection whose
	// queued output made no progress for the write timeout: the peer
	// took none of it and, on Linux, TCP found it not reading
	// (WithWriteTimeout).
	ErrWriteTimeout error = timeoutError("sluice: write timeout")

	// ErrDialTimeout is what OnDialFailed receives, inside a
	// *net.OpError, for a dial that did not connect within its
	// DialTimeout. It matches os.ErrDeadlineExceeded, as the deadline
	// errors do.
	ErrDialTimeout error = timeoutError("sluice: dial timeout")

	// ErrTooManyConns is what OnDialFailed receives for a dial or an
	// enrolled connection the engine could not take, holding as many
	// connections as WithMaxConnections allows, and what OnRefuse
	// receives for a connection refused on accept for the same reason.
	ErrTooManyConns = errors.New("sluice: too many connections")

	// ErrTooManyFromSource is what OnRefuse receives for a connection
	// refused because its source holds as many connections as
	// WithMaxConnectionsPerSource allows.
	ErrTooManyFromSource = errors.New("sluice: too many connections from one source")

	// ErrOutboundFull is returned by Write, Writev, AsyncWrite and
	// AsyncWritev for a write that would take a connection's queued output
	// past WithMaxOutbound's bound. Nothing of the write is queued.
	ErrOutboundFull = errors.New("sluice: outbound queue full")

	// ErrOutboundOverLimit is what OnClose receives for a connection reset
	// because its unsent output stayed over WithOutboundSoftLimit's bound
	// for its time, or was over it when the connection was closed.
	ErrOutboundOverLimit = errors.New("sluice: unsent output over its limit")

	// ErrInboundTooLarge is what OnClose receives for a connection whose
	// peer sent more than the handler consumed, past the bound set by
	// WithMaxInboundBuffered.
	ErrInboundTooLarge = errors.New("sluice: too much unread inbound data")

	// ErrInboundOverBudget is what OnClose receives for a connection reset
	// because the connections together held more inbound bytes than
	// WithInboundBudget allows, and it held among the most; and what
	// OnRefuse receives for a connection refused on accept meanwhile.
	ErrInboundOverBudget = errors.New("sluice: inbound budget exceeded")

	// ErrOutboundOverBudget is what OnClose receives for a connection
	// reset because the connections together held more unsent output
	// than WithOutboundBudget allows, and it held among the most; and
	// what OnRefuse receives for a connection refused on accept meanwhile.
	ErrOutboundOverBudget = errors.New("sluice: outbound budget exceeded")
)

// closedError is ErrConnClosed's type: it matches net.ErrClosed.
type closedError struct{}

func (closedError) Error() string        { return "sluice: connection closed" }
func (closedError) Is(target error) bool { return target == net.ErrClosed }

// timeoutError is the type of the deadline errors: they match
// os.ErrDeadlineExceeded, and are net.Errors that time out.
type timeoutError string

func (e timeoutError) Error() string      { return string(e) }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Temporary() bool      { return false }
func (timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }
