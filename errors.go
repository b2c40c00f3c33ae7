package sluice

import "errors"

var (
	// ErrEngineStopped is returned for work posted to an engine that has
	// stopped, or is stopping and no longer takes it.
	ErrEngineStopped = errors.New("sluice: engine stopped")

	// ErrConnClosed is returned for work posted to a connection that has
	// already closed.
	ErrConnClosed = errors.New("sluice: connection closed")

	// ErrHandlerPanic is what OnClose receives for a connection whose
	// callback panicked. The panic value and stack are logged.
	ErrHandlerPanic = errors.New("sluice: handler panicked")

	// ErrInvalidAddr is returned by Run for an address it cannot listen on.
	ErrInvalidAddr = errors.New("sluice: invalid address")
)
