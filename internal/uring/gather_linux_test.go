package uring

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// requireMinWait skips the test where the kernel cannot gather (before
// Linux 6.12).
func requireMinWait(t *testing.T, r *Ring) {
	t.Helper()
	if !r.MinWait() {
		t.Skip("the kernel lacks IORING_FEAT_MIN_TIMEOUT")
	}
}

// armedEventfds opens n blocking eventfds, each with a read in flight
// whose user data is its index.
func armedEventfds(t *testing.T, r *Ring, n int) []int {
	t.Helper()
	fds := make([]int, n)
	for i := range fds {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		fds[i] = fd
		buf := make([]byte, 8)
		r.PrepRead(fd, buf, uint64(i))
	}
	require.NoError(t, r.SubmitAndWait(0, 0))
	require.Zero(t, r.ForEachCQE(func(CQE) {}), "a read completed before any write")
	return fds
}

func signal(t *testing.T, fd int) {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, err := unix.Write(fd, one[:])
	assert.NoError(t, err)
}

// A completion that comes within the gathering time of one already in is
// handed over with it, where SubmitAndWait would have returned with the
// first alone.
func TestSubmitAndGatherGathers(t *testing.T) {
	r := newTestRing(t, 8, 0)
	requireMinWait(t, r)
	fds := armedEventfds(t, r, 2)
	signal(t, fds[0])
	go func() {
		time.Sleep(10 * time.Millisecond)
		signal(t, fds[1])
	}()
	start := time.Now()
	require.NoError(t, r.SubmitAndGather(8, -1, 500*time.Millisecond))
	took := time.Since(start)
	assert.Equal(t, 2, r.ForEachCQE(func(CQE) {}), "completions handed over after %v", took)
}

// Once the gathering time has passed with nothing in, the first
// completion ends the wait: it neither times out empty nor waits on.
func TestSubmitAndGatherAfterGathering(t *testing.T) {
	r := newTestRing(t, 8, 0)
	requireMinWait(t, r)
	fds := armedEventfds(t, r, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		signal(t, fds[0])
	}()
	require.NoError(t, r.SubmitAndGather(8, -1, 5*time.Millisecond))
	assert.Equal(t, 1, r.ForEachCQE(func(CQE) {}))
}

// The timeout bounds the whole wait; n completions end it early.
func TestSubmitAndGatherBounds(t *testing.T) {
	r := newTestRing(t, 8, 0)
	requireMinWait(t, r)
	start := time.Now()
	require.NoError(t, r.SubmitAndGather(8, 30*time.Millisecond, 10*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	assert.Zero(t, r.ForEachCQE(func(CQE) {}))

	fds := armedEventfds(t, r, 2)
	signal(t, fds[0])
	signal(t, fds[1])
	start = time.Now()
	require.NoError(t, r.SubmitAndGather(2, -1, time.Hour))
	assert.Less(t, time.Since(start), time.Minute, "two of two completions ended the wait")
	assert.Equal(t, 2, r.ForEachCQE(func(CQE) {}))
}

// A timeout shorter than the gathering time ends the wait when it is due:
// the kernel looks at it only once gathering is over, so SubmitAndGather
// gathers for no longer than the timeout.
func TestSubmitAndGatherTimeoutWithinGathering(t *testing.T) {
	r := newTestRing(t, 8, 0)
	requireMinWait(t, r)
	start := time.Now()
	require.NoError(t, r.SubmitAndGather(8, 20*time.Millisecond, 5*time.Second))
	assert.Less(t, time.Since(start), 2500*time.Millisecond, "the wait outlasted its timeout")
	assert.Zero(t, r.ForEachCQE(func(CQE) {}))
}

// A held wait ends when a completion comes, as an ordinary one does (or
// early, at a signal: the runtime's preemption), and the runtime can
// still stop the goroutine waiting in it: a collection run meanwhile ends
// long before the wait would have.
func TestHeldWait(t *testing.T) {
	r := newTestRing(t, 8, 0)
	r.SetHeld(true)
	fds := armedEventfds(t, r, 1)
	go func() {
		time.Sleep(10 * time.Millisecond)
		signal(t, fds[0])
	}()
	got := 0
	for start := time.Now(); got == 0 && time.Since(start) < 10*time.Second; {
		require.NoError(t, r.SubmitAndWait(1, 10*time.Second))
		got = r.ForEachCQE(func(CQE) {})
	}
	assert.Equal(t, 1, got)

	collected := make(chan time.Duration, 1)
	go func() {
		time.Sleep(10 * time.Millisecond)
		start := time.Now()
		runtime.GC()
		collected <- time.Since(start)
	}()
	start := time.Now()
	for len(collected) == 0 && time.Since(start) < 10*time.Second {
		require.NoError(t, r.SubmitAndWait(1, 10*time.Second))
	}
	select {
	case took := <-collected:
		assert.Less(t, took, 5*time.Second, "the collection waited for the held wait")
	default:
		t.Fatal("no collection ended within the held waits' 10 s")
	}
}
