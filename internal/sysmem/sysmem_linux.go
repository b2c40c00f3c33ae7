package sysmem

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Total returns the bytes of memory the process may use: the machine's
// physical memory, or its cgroup's limit (v2 memory.max, v1
// memory.limit_in_bytes) where that is lower, as in a container. It
// returns 0 when it cannot tell.
func Total() uint64 {
	var si unix.Sysinfo_t
	total := uint64(0)
	if unix.Sysinfo(&si) == nil {
		total = uint64(si.Totalram) * uint64(si.Unit)
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if n := cgroupLimit(f); n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// cgroupLimit reads a cgroup memory limit file: a number of bytes, or
// "max" (or, on v1, a huge number) for none, which reads as 0.
func cgroupLimit(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n >= 1<<62 {
		return 0
	}
	return n
}
