//go:build !sluice_std

package sluice

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
	"github.com/sluicenet/sluice/poller"
)

// gathering reports whether eng's first loop gathers events: an io_uring
// loop WithGatherWait on a kernel that can.
func gathering(t testing.TB, eng Engine) bool {
	var on bool
	onLoopOf(t, eng, 0, func() {
		rg, ok := eng.e.loops[0].drv.(*ringDriver)
		on = ok && rg.gather > 0
	})
	return on
}

// loopThread returns the thread of eng's first loop, an io_uring one,
// which keeps it for good.
func loopThread(t testing.TB, eng Engine) int {
	var tid int
	onLoopOf(t, eng, 0, func() { tid = unix.Gettid() })
	return tid
}

// awaitGatheringWait waits until the loop on thread tid is in a gathering
// wait: blocked in an io_uring_enter that asks for gatherMost
// completions, as /proc/self/task/TID/syscall shows it.
func awaitGatheringWait(t testing.TB, tid int) {
	t.Helper()
	var seen string
	waitFor(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
		seen = string(b)
		f := strings.Fields(seen)
		return len(f) > 3 && f[0] == strconv.Itoa(unix.SYS_IO_URING_ENTER) && f[3] == fmt.Sprintf("%#x", gatherMost)
	}, func() string { return "the loop is not in a gathering wait: its thread is in " + seen })
}

// ringIdle reports whether eng's first loop, if an io_uring one, has given
// its idle buffers back, with no idle timer armed, whose firing would end
// a wait early; any other loop is idle so. It runs on the loop.
func ringIdle(eng Engine) bool {
	rg, ok := eng.e.loops[0].drv.(*ringDriver)
	return !ok || (rg.idleAt == 0 && !rg.idleTimer)
}

// spreadEnters counts the io_uring_enter calls (and any other system call
// of the hot path) per round trip of an io_uring loop WithGatherWait(d)
// serving clients whose requests arrive spread out: each of ten sends,
// a millisecond after the last, then all read their echoes. The caller
// turns counting on (syscount.Enabled) before, and off once the engine
// has stopped, at the end of t.
func spreadEnters(t *testing.T, d time.Duration) (perTrip float64, gathers bool) {
	const conns, rounds = 10, 5
	eng, addr := serve(t, echoHandler{}, WithNumEventLoop(1), WithPoller(poller.IOUring), WithGatherWait(d))
	cs := make([]*rawClient, conns)
	for i := range cs {
		cs[i] = dialRaw(t, addr)
		cs[i].readTimeout(t, 10*time.Second)
		cs[i].roundTrip(t)
	}
	gathers = gathering(t, eng)
	before := syscount.Load()
	for range rounds {
		for _, c := range cs {
			c.send(t)
			time.Sleep(time.Millisecond)
		}
		for _, c := range cs {
			c.receive(t)
		}
	}
	return float64(syscount.Load()-before) / (conns * rounds), gathers
}

// Gathering for longer than requests take to arrive serves them with
// fewer enters: spread a millisecond apart, each comes on a turn of its
// own without it (about one enter per round trip), where 20ms gather
// them by the roundful.
func TestGatherWaitFewerEnters(t *testing.T) {
	skipWithoutRing(t)
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	var on, off float64
	var gathers bool
	t.Run("on", func(t *testing.T) { on, gathers = spreadEnters(t, 20*time.Millisecond) })
	if !gathers {
		t.Skip("the kernel cannot gather (Linux 6.12 can)")
	}
	t.Run("off", func(t *testing.T) { off, _ = spreadEnters(t, 0) })
	t.Logf("system calls per round trip: %.2f gathering 20ms, %.2f not", on, off)
	require.Less(t, on, 0.5, "the loop did not gather the spread requests")
	require.Greater(t, off, on, "the count saw no difference gathering makes")
}

// serveGathering serves h on one io_uring loop gathering for 100µs, with
// a single P, where its waits are held; it skips where the kernel cannot
// gather (Linux 6.12 can).
func serveGathering(t *testing.T, h EventHandler) (Engine, string) {
	skipWithoutRing(t)
	prev := runtime.GOMAXPROCS(1) // no P spare: the waits are held
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	eng, addr := serve(t, h, WithNumEventLoop(1), WithPoller(poller.IOUring), WithGatherWait(100*time.Microsecond))
	if !gathering(t, eng) {
		t.Skip("the kernel cannot gather (Linux 6.12 can)")
	}
	return eng, addr
}

// A gathering loop with nothing to do sleeps: its held wait (heldMost)
// comes back empty once, and the waits after it are ordinary ones, which
// last until something comes, not a held wait a millisecond at a time.
func TestGatherWaitIdleLoopSleeps(t *testing.T) {
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	eng, addr := serveGathering(t, echoHandler{})
	c := dialRaw(t, addr)
	c.readTimeout(t, 10*time.Second)
	c.roundTrip(t)
	quietLoop(t, eng) // past the ring's idle timer, which wakes the loop
	before := syscount.Load()
	time.Sleep(200 * time.Millisecond)
	idle := syscount.Load() - before
	require.Less(t, idle, uint64(10), "system calls of a loop idle for 200ms")
	c.roundTrip(t)
}
