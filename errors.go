package sluice

import "errors"

var (
	// ErrEngineStopped is returned for work posted to an engine that has
	// stopped, or is stopping and no longer takes it. OnClose receives it
	// for the connections a Stop whose context ended had to reset.
	ErrEngineStopped = errors.New("sluice: engine stopped")

	// ErrConnClosed is returned for work posted to a connection that has
	// already closed, and by Engine.Kill for an ID that names no live
	// connection.
	ErrConnClosed = errors.New("sluice: connection closed")

	// ErrHandlerPanic is what OnClose receives for a connection whose
	// callback panicked. The panic value and stack are logged.
	ErrHandlerPanic = errors.New("sluice: handler panicked")

	// ErrInvalidAddr is returned by Run for an address it cannot listen on.
	ErrInvalidAddr = errors.New("sluice: invalid address")

	// ErrInvalidProxyMode is returned by ProxyMode.UnmarshalText for a name
	// that is not "off", "optional" or "required".
	ErrInvalidProxyMode = errors.New("sluice: invalid PROXY protocol mode")

	// ErrKilled is what OnClose receives for a connection reset by
	// Engine.Kill.
	ErrKilled = errors.New("sluice: connection killed")

	// ErrIdleTimeout is what OnClose receives for a connection that moved
	// no bytes either way for its idle timeout (WithIdleTimeout,
	// Conn.SetIdleTimeout).
	ErrIdleTimeout = errors.New("sluice: idle timeout")

	// ErrReadTimeout is what OnClose receives for a connection whose
	// partial frame did not complete within the read timeout
	// (WithReadTimeout).
	ErrReadTimeout = errors.New("sluice: read timeout")

	// ErrWriteTimeout is what OnClose receives for a connection whose
	// queued output made no progress for the write timeout
	// (WithWriteTimeout).
	ErrWriteTimeout = errors.New("sluice: write timeout")

	// ErrInboundTooLarge is what OnClose receives for a connection whose
	// peer sent more than the handler consumed, past the bound set by
	// WithMaxInboundBuffered.
	ErrInboundTooLarge = errors.New("sluice: too much unread inbound data")
)
