package sluice

import "golang.org/x/sys/unix"

// threadID returns the calling thread's ID, which names the loop locked
// to it (callerLoop).
func threadID() int { return unix.Gettid() }
