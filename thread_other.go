//go:build !linux

package sluice

// threadID returns zero, which names no loop: off Linux, Dial from a
// callback picks a loop as Dial from elsewhere does.
func threadID() int { return 0 }
