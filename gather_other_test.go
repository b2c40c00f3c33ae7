//go:build !linux || sluice_std

package sluice

import "testing"

// gathering reports whether eng's first loop gathers events: only io_uring
// loops do, and they are Linux's.
func gathering(testing.TB, Engine) bool { return false }

// ringIdle reports whether eng's first loop has no timer of an io_uring
// ring armed: only Linux loops have one.
func ringIdle(Engine) bool { return true }

// loopThread and awaitGatheringWait are for gathering loops, and none
// gathers here.
func loopThread(t testing.TB, _ Engine) int  { t.Fatal("no loop gathers here"); return 0 }
func awaitGatheringWait(t testing.TB, _ int) { t.Fatal("no loop gathers here") }
