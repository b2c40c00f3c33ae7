//go:build !unix

package leakcheck

// socketOf says nothing more of a socket where the system has no
// descriptors to name it by.
func socketOf(_, _ string) string { return "" }
