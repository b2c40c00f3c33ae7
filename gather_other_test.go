//go:build !linux || sluice_std

package sluice

import (
	"testing"
	"time"
)

// gathering reports whether eng's first loop gathers events: only io_uring
// loops do, and they are Linux's.
func gathering(testing.TB, Engine) bool { return false }

// ringIdleWait is how long a test waits for an io_uring loop's idle timer.
const ringIdleWait = 150 * time.Millisecond
