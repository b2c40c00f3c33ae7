package proc

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestCPUTimeGrowsWithWork(t *testing.T) {
	runtime.LockOSThread() // the spin below reads this thread's clock
	defer runtime.UnlockOSThread()
	pid := os.Getpid()
	before, err := CPUTime(pid)
	require.NoError(t, err)
	// Spin until this thread's own clock has moved 40 ms. The scheduler
	// updates a running thread's sum at each tick (10 ms at most), so the
	// schedstat sum must show at least 30.
	start := threadCPU(t)
	for threadCPU(t)-start < 40*time.Millisecond {
	}
	after, err := CPUTime(pid)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after-before, 30*time.Millisecond)
}

// threadCPU reads the calling thread's CPU clock.
func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts))
	return time.Duration(ts.Nano())
}

func TestRSSCountsTouchedMemory(t *testing.T) {
	pid := os.Getpid()
	before, err := RSS(pid)
	require.NoError(t, err)
	// Fresh pages from the kernel, not the Go heap, which may already hold
	// resident memory to reuse.
	b, err := unix.Mmap(-1, 0, 64<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	defer unix.Munmap(b)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, err := RSS(pid)
	require.NoError(t, err)
	assert.Greater(t, after-before, int64(60<<20))
}

func TestNoSuchProcess(t *testing.T) {
	const pid = 1 << 30 // above pid_max
	_, err := CPUTime(pid)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = RSS(pid)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestFirstField(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  error
	}{
		{in: "123456 789 10\n", want: 123456},
		{in: "", err: ErrFormat},
		{in: "x 1 2\n", err: ErrFormat},
	} {
		got, err := firstField([]byte(tc.in))
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
