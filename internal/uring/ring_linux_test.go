package uring

import (
	"encoding/binary"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// requireUring skips the test where io_uring is unavailable, except in CI,
// where the test must run.
func requireUring(tb testing.TB) {
	tb.Helper()
	if err := Probe(); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("io_uring unavailable in CI: %v", err)
		}
		tb.Skip(err)
	}
}

// newTestRing creates a ring on the test's goroutine, locked to its thread
// until the test ends, as an event loop would.
func newTestRing(tb testing.TB, entries, cqEntries uint32) *Ring {
	tb.Helper()
	requireUring(tb)
	runtime.LockOSThread()
	tb.Cleanup(runtime.UnlockOSThread)
	r, err := New(entries, cqEntries)
	require.NoError(tb, err)
	tb.Cleanup(func() { assert.NoError(tb, r.Close()) })
	return r
}

// collect waits until want completions have arrived, or fails the test
// after five seconds.
func collect(tb testing.TB, r *Ring, want int) []CQE {
	tb.Helper()
	var got []CQE
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want {
		require.True(tb, time.Now().Before(deadline), "got %d of %d completions: %v", len(got), want, got)
		require.NoError(tb, r.SubmitAndWait(1, 100*time.Millisecond))
		r.ForEachCQE(func(c CQE) { got = append(got, c) })
	}
	return got
}

func openFDs(tb testing.TB) int {
	tb.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(tb, err)
	return len(entries)
}

func TestNewCloseLeaksNothing(t *testing.T) {
	requireUring(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := openFDs(t)
	for range 3 {
		r, err := New(64, 256)
		require.NoError(t, err)
		_, err = NewBufRing(r, 1, 16, 4096)
		require.NoError(t, err)
		require.NoError(t, r.Close())
	}
	assert.Equal(t, before, openFDs(t))
}

// New takes the first tier of setup flags the kernel accepts.
func TestNewTakesTheBestTier(t *testing.T) {
	r := newTestRing(t, 8, 0)
	var uts unix.Utsname
	require.NoError(t, unix.Uname(&uts))
	t.Logf("kernel %s: %v", unix.ByteSliceToString(uts.Release[:]), r.Setup())
	for _, tier := range setupTiers {
		want := SetupSubmitAll | SetupClamp | tier
		p := params{flags: uint32(want)}
		if fd, err := setup(8, &p); err == nil {
			unix.Close(fd)
			assert.Equal(t, want, r.Setup())
			return
		}
	}
	t.Fatal("the kernel accepts no tier")
}

func TestSetupFlagsString(t *testing.T) {
	tests := []struct {
		flags SetupFlags
		want  string
	}{
		{0, "0"},
		{SetupCoopTaskrun, "COOP_TASKRUN"},
		{SetupSingleIssuer | SetupDeferTaskrun | SetupSubmitAll, "SUBMIT_ALL|SINGLE_ISSUER|DEFER_TASKRUN"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.flags.String())
	}
}

// A full submission queue is submitted to make room, in order, and no
// operation is lost.
func TestFullQueueSubmitsInOrder(t *testing.T) {
	r := newTestRing(t, 4, 0)
	a, b := socketPair(t)
	const n = 100
	msgs := make([]byte, 4*n)
	for i := range n {
		msg := msgs[4*i : 4*i+4]
		binary.BigEndian.PutUint32(msg, uint32(i))
		r.PrepSend(a, msg, unix.MSG_DONTWAIT, uint64(i)).SetFlags(SkipSuccess)
	}
	assert.GreaterOrEqual(t, *r.sqHead, uint32(n-len(r.sqes)), "the full queue was not submitted")
	require.NoError(t, r.Submit())
	assert.Equal(t, msgs, readFull(t, b, len(msgs)))
	assert.Zero(t, r.ForEachCQE(func(c CQE) { t.Errorf("send failed: %+v", c) }))
}

// Completions that overflow a full completion queue are kept by the
// kernel and handed over once the queue drains.
func TestCompletionOverflow(t *testing.T) {
	r := newTestRing(t, 8, 16)
	const n = 200
	for i := range n {
		r.PrepCancel(1<<40+uint64(i), uint64(i)) // matches nothing: each completes at once
	}
	require.NoError(t, r.Submit())
	assert.True(t, r.Overflowed(), "the completion queue did not overflow")
	assert.True(t, r.Pending())
	seen := make(map[uint64]bool)
	for _, c := range collect(t, r, n) {
		assert.Zero(t, c.Res, "cancelled count")
		assert.False(t, seen[c.UserData], "completion %d twice", c.UserData)
		seen[c.UserData] = true
	}
	assert.Len(t, seen, n)
	assert.False(t, r.Overflowed())
	assert.False(t, r.Pending())
}

// PeekCQEs shows the ready completions without consuming them, and
// ForEachCQE then meets the same ones first, in the same order.
func TestPeekCQEsConsumesNothing(t *testing.T) {
	r := newTestRing(t, 8, 16)
	for i := range 5 {
		r.PrepCancel(1<<40+uint64(i), uint64(i))
	}
	require.NoError(t, r.SubmitAndWait(5, time.Second))
	var peeked, again, consumed []uint64
	assert.Equal(t, 5, r.PeekCQEs(func(c CQE) { peeked = append(peeked, c.UserData) }))
	r.PeekCQEs(func(c CQE) { again = append(again, c.UserData) })
	r.PrepCancel(1<<40, 9) // completes after the peek, so ForEachCQE meets it last
	require.NoError(t, r.Submit())
	r.ForEachCQE(func(c CQE) { consumed = append(consumed, c.UserData) })
	assert.Equal(t, []uint64{0, 1, 2, 3, 4}, peeked)
	assert.Equal(t, peeked, again)
	assert.Equal(t, []uint64{0, 1, 2, 3, 4, 9}, consumed)
	assert.Zero(t, r.PeekCQEs(func(CQE) { t.Error("a consumed completion was peeked") }))
}

// Timers complete with ETIME in the order they fall due, each with its
// own duration, even when prepared together.
func TestPrepTimeout(t *testing.T) {
	r := newTestRing(t, 8, 16)
	start := time.Now()
	r.PrepTimeout(40*time.Millisecond, 2)
	r.PrepTimeout(10*time.Millisecond, 1)
	got := collect(t, r, 2)
	assert.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)
	require.Len(t, got, 2)
	for i, c := range got {
		assert.EqualValues(t, i+1, c.UserData)
		assert.ErrorIs(t, c.Err(), unix.ETIME)
	}
}

func TestSubmitAndWaitTimesOut(t *testing.T) {
	r := newTestRing(t, 8, 0)
	start := time.Now()
	require.NoError(t, r.SubmitAndWait(1, 20*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	assert.Zero(t, r.ForEachCQE(func(CQE) {}))
}

// A read of an eventfd wakes a loop blocked in SubmitAndWait when another
// goroutine writes to it.
func TestEventfdReadWakes(t *testing.T) {
	r := newTestRing(t, 8, 0)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(efd)
	var wakeBuf [8]byte
	r.PrepRead(efd, wakeBuf[:], 42)
	require.NoError(t, r.SubmitAndWait(0, 0))
	require.Zero(t, r.ForEachCQE(func(CQE) {}), "the read completed before any write")

	go func() {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 3)
		_, err := unix.Write(efd, one[:])
		assert.NoError(t, err)
	}()
	got := collect(t, r, 1)
	assert.Equal(t, CQE{UserData: 42, Res: 8}, got[0])
	assert.Equal(t, uint64(3), binary.NativeEndian.Uint64(wakeBuf[:]))
}

func TestNewRejectsBadSizes(t *testing.T) {
	for _, tt := range []struct{ entries, cqEntries uint32 }{{0, 0}, {0, 8}, {16, 8}} {
		_, err := New(tt.entries, tt.cqEntries)
		assert.ErrorIs(t, err, os.ErrInvalid, "New(%d, %d)", tt.entries, tt.cqEntries)
	}
}

func TestOtherThreadIsRefused(t *testing.T) {
	r := newTestRing(t, 8, 0)
	if r.Setup()&SetupSingleIssuer == 0 {
		t.Skip("the ring is not bound to a thread")
	}
	done := make(chan error)
	go func() { // not on the test's thread, which is locked to the test
		r.PrepCancel(1, 1)
		done <- r.Submit()
	}()
	assert.ErrorIs(t, <-done, ErrNotOwner)
}
