// Package syscount counts the system calls of the hot path, so tests can
// hold the engine to its budget of system calls per round trip without
// tracing the process.
package syscount

import "sync/atomic"

var (
	// Enabled turns counting on. Set it only while no event loop runs:
	// starting and stopping the engine orders the write before and after
	// every loop's reads.
	Enabled bool
	n       atomic.Uint64
)

// Inc counts one system call when counting is on. When it is off it costs
// one load of a global.
func Inc() {
	if Enabled {
		n.Add(1)
	}
}

// Load returns the number of system calls counted so far.
func Load() uint64 { return n.Load() }
