//go:build unix

package main

import "syscall"

// descriptorBound is the most clients the process's descriptor limit
// lets it relay: each costs two descriptors, its own and its backend's,
// and a few are kept for the listeners, the pollers and the runtime.
func descriptorBound() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<21 {
		return 1 << 20
	}
	return max(int(rl.Cur)-64, 2) / 2
}
