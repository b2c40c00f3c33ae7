//go:build !linux || sluice_std

package sluice

import "testing"

func skipWithoutRing(t testing.TB) {
	t.Helper()
	t.Skip("io_uring is Linux's")
}
