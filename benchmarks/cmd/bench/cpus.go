package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

var errCPUList = errors.New("bad CPU list")

// A cpuList is a set of CPUs in taskset's list form ("0", "0-3,8").
type cpuList struct {
	spec string
	cpus []int
}

func parseCPUs(spec string) (cpuList, error) {
	l := cpuList{spec: spec}
	for part := range strings.SplitSeq(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(hi)
		}
		if err != nil || first < 0 || last < first {
			return cpuList{}, fmt.Errorf("%w: %q", errCPUList, spec)
		}
		for c := first; c <= last; c++ {
			l.cpus = append(l.cpus, c)
		}
	}
	return l, nil
}

// n returns how many CPUs the list holds: the loops or workers to run on them.
func (l cpuList) n() string { return strconv.Itoa(len(l.cpus)) }

func (l cpuList) overlaps(o cpuList) bool {
	return slices.ContainsFunc(l.cpus, func(c int) bool { return slices.Contains(o.cpus, c) })
}

// pinSelf moves every thread of this process onto the CPUs in l. Threads the
// runtime starts later inherit it from the thread that starts them; it goes
// over the threads until a pass finds none it had not pinned, in case one was
// started unpinned meanwhile.
func pinSelf(l cpuList) error {
	var set unix.CPUSet
	for _, c := range l.cpus {
		set.Set(c)
	}
	pinned := make(map[string]bool)
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || pinned[t.Name()] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH { // ESRCH: it exited
				return fmt.Errorf("pin to CPUs %s: %w", l.spec, err)
			}
			pinned[t.Name()], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
}
