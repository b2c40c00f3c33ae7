// Package leakcheck tells a test whether it left goroutines or
// descriptors behind: it counts them as the test starts and waits, as it
// ends, for the counts to fall back.
package leakcheck

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Start counts the goroutines and descriptors open now, and returns a
// function that waits up to within for the counts to fall back to these,
// failing the test if they do not: its message names the descriptors
// opened since, and holds every goroutine's stack where goroutines were
// left. Where the system does not list the process's descriptors (see
// Descriptors), it counts the goroutines alone.
func Start(t testing.TB, within time.Duration) func() {
	t.Helper()
	OpenRuntimePoller()
	goroutines, fds := runtime.NumGoroutine(), openFDs()
	return func() {
		t.Helper()
		deadline := time.Now().Add(within)
		for runtime.NumGoroutine() > goroutines || len(openFDs()) > len(fds) {
			if time.Now().After(deadline) {
				t.Fatal(leak(goroutines, fds))
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// leak says what was left: the counts then and now, the descriptors
// opened since, and the goroutines' stacks where there are more of them.
func leak(goroutines int, fds map[string]string) string {
	now, running := openFDs(), runtime.NumGoroutine()
	msg := fmt.Sprintf("leak: goroutines %d -> %d, descriptors %d -> %d, opened since: %s",
		goroutines, running, len(fds), len(now), newFDs(fds, now))
	if running > goroutines {
		buf := make([]byte, 1<<20)
		msg += "\n" + string(buf[:runtime.Stack(buf, true)])
	}
	return msg
}

// Descriptors reports whether the system lists the process's open
// descriptors (in /proc/self/fd), which Start then counts.
func Descriptors() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
}

// OpenRuntimePoller has the runtime open its own poller's descriptors (an
// epoll and an eventfd on Linux), which it does the first time a net.Conn
// or a timer needs them, which may be during a test: opened before the
// first count, they do not look like a leak. Start calls it; a test that
// counts descriptors itself calls it before it counts.
func OpenRuntimePoller() {
	runtimePoller.Do(func() {
		if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
			ln.Close()
		}
	})
}

var runtimePoller sync.Once

// openFDs returns the process's open descriptors, each with what it
// refers to (readlink of /proc/self/fd/N), or none where the system does
// not list them.
func openFDs() map[string]string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	fds := make(map[string]string, len(entries))
	for _, e := range entries {
		// The descriptor ReadDir itself had open is gone by now.
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			fds[e.Name()] = target
		}
	}
	return fds
}

// newFDs names the descriptors in now that were not in before, a socket
// with its addresses and state where the system tells them, so that a
// leak says which descriptor outlived its test.
func newFDs(before, now map[string]string) string {
	var named []string
	for fd, target := range now {
		if before[fd] == target {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			target += " " + socketOf(fd, strings.TrimSuffix(inode, "]"))
		}
		named = append(named, fd+" "+target)
	}
	slices.Sort(named)
	return strings.Join(named, "; ")
}
