// Package proc reads what a benchmark needs to know about another process on
// Linux: the CPU time the scheduler gave it and its resident memory.
//
// CPU time comes from the first field of /proc/PID/task/*/schedstat, the
// nanoseconds the scheduler ran each thread, not from utime and stime in
// /proc/PID/stat: those are sampled once per clock tick, and a server that
// runs in microsecond bursts is charged whole ticks at random.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ErrFormat reports a /proc file that does not read as this package expects.
var ErrFormat = errors.New("proc: unexpected format")

// CPUTime returns how long the scheduler has run the live threads of process
// pid. Threads that already exited are not counted, so take both readings of
// a window while the process's threads stay up (a Go program keeps its
// threads).
func CPUTime(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("proc: cpu time: %w", err)
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited after ReadDir
		}
		if err != nil {
			return 0, fmt.Errorf("proc: cpu time: %w", err)
		}
		ns, err := firstField(b)
		if err != nil {
			return 0, fmt.Errorf("proc: cpu time of task %s: %w", t.Name(), err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}

func firstField(b []byte) (int64, error) {
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, ErrFormat
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return n, nil
}

// RSS returns the resident memory of process pid in bytes (VmRSS in
// /proc/PID/status). Kernel socket buffers are not part of it.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("proc: rss: %w", err)
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "1234", "kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("%w: VmRSS line %q", ErrFormat, line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: VmRSS line %q", ErrFormat, line)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%w: no VmRSS in status of %d", ErrFormat, pid)
}
