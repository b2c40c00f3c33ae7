//go:build darwin || dragonfly || freebsd

package sysmem

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Total returns the bytes of physical memory, or 0 when the system does
// not tell.
func Total() uint64 {
	name := "hw.physmem"
	if runtime.GOOS == "darwin" {
		name = "hw.memsize"
	}
	n, err := unix.SysctlUint64(name)
	if err != nil {
		return 0
	}
	return n
}
