//go:build !unix

package main

// descriptorBound is the most clients the proxy relays where no
// descriptor limit is read, as on Windows.
func descriptorBound() int { return 1 << 20 }
