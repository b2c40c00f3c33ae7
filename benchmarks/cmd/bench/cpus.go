package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

var errCPUList = errors.New("bad CPU list")

// errProcStat reports a /proc/stat this program cannot read.
var errProcStat = errors.New("unexpected /proc/stat")

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

// cpus returns every CPU a measurement uses: the server's and the client's.
func (c config) cpus() []int { return append(slices.Clone(c.server.cpus), c.client.cpus...) }

// idleWaitLimit bounds waitIdle.
const idleWaitLimit = time.Minute

// waitIdle waits until cpus were at least pct percent idle over a second,
// or idleWaitLimit passes; it returns the last second's idle percentage and
// how long it waited.
func waitIdle(cpus []int, pct int) (int, time.Duration, error) {
	start := time.Now()
	for {
		idle, err := idleOver(cpus, time.Second)
		if err != nil || idle >= pct || time.Since(start) >= idleWaitLimit {
			return idle, time.Since(start), err
		}
	}
}

// idleOver returns the percentage of time cpus were idle over d, from
// /proc/stat.
func idleOver(cpus []int, d time.Duration) (int, error) {
	idle0, total0, err := cpuTimes(cpus)
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	idle1, total1, err := cpuTimes(cpus)
	if err != nil || total1 == total0 {
		return 0, err
	}
	return int(100 * (idle1 - idle0) / (total1 - total0)), nil
}

// cpuTimes sums, over cpus, the idle and iowait ticks and all ticks in
// /proc/stat.
func cpuTimes(cpus []int) (idle, total uint64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 9 {
			continue
		}
		n, ok := strings.CutPrefix(f[0], "cpu")
		c, err := strconv.Atoi(n)
		if !ok || err != nil || !slices.Contains(cpus, c) {
			continue
		}
		// user nice system idle iowait irq softirq steal; guest time is
		// in user and nice already.
		for i, v := range f[1:9] {
			t, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%w: /proc/stat: %q", errProcStat, line)
			}
			total += t
			if i == 3 || i == 4 { // idle, iowait
				idle += t
			}
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("%w: no line for CPUs %v", errProcStat, cpus)
	}
	return idle, total, nil
}
