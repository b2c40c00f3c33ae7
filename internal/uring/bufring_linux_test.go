package uring

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestNewBufRingRejectsBadSizes(t *testing.T) {
	r := newTestRing(t, 8, 0)
	for _, tt := range []struct{ count, size int }{{0, 64}, {3, 64}, {1 << 16, 64}, {16, 0}, {1 << 15, 1 << 20}} {
		_, err := NewBufRing(r, 1, tt.count, tt.size)
		assert.ErrorIs(t, err, os.ErrInvalid, "NewBufRing(%d, %d)", tt.count, tt.size)
	}
}

// The ring's 16-bit tail wraps around, and buffers keep flowing.
func TestBufRingTailWraps(t *testing.T) {
	r := newTestRing(t, 8, 0)
	bufs, err := NewBufRing(r, 1, 2, 8)
	require.NoError(t, err)
	a, b := socketPair(t)
	r.PrepRecvMultishot(b, bufs, 1)
	for i := range 1<<16 + 3 {
		msg := []byte{byte(i)}
		_, err := unix.Write(a, msg)
		require.NoError(t, err)
		c := collect(t, r, 1)[0]
		id, ok := c.Buffer()
		require.True(t, ok, "message %d: %+v", i, c)
		require.Equal(t, msg, bufs.Buf(id)[:c.Res])
		require.True(t, c.More())
		bufs.Recycle(id)
	}
	assert.Less(t, bufs.tail, uint16(8), "the tail did not wrap")
}

// resident counts the pages of bufs in memory.
func resident(t *testing.T, bufs *BufRing) int {
	t.Helper()
	n, err := bufs.Resident()
	require.NoError(t, err)
	return n
}

// Release drops the pages receives touched, and receives go on into
// fresh ones.
func TestBufRingRelease(t *testing.T) {
	r := newTestRing(t, 8, 0)
	bufs, err := NewBufRing(r, 1, 4, 2*os.Getpagesize())
	require.NoError(t, err)
	a, b := socketPair(t)
	r.PrepRecvMultishot(b, bufs, 1)
	echo := func(msg string) {
		_, err := unix.Write(a, []byte(msg))
		require.NoError(t, err)
		c := collect(t, r, 1)[0]
		id, ok := c.Buffer()
		require.True(t, ok, "%+v", c)
		require.Equal(t, msg, string(bufs.Buf(id)[:c.Res]))
		bufs.Recycle(id)
	}
	for _, msg := range []string{"a", "b", "c", "d"} {
		echo(msg)
	}
	require.Equal(t, 4, resident(t, bufs), "each receive touches its buffer's first page")
	require.NoError(t, bufs.Release())
	assert.Zero(t, resident(t, bufs))
	echo("after")
	assert.Equal(t, 1, resident(t, bufs))
}

// A multishot receive capped with SetRecvLimit ends once it has taken that
// many bytes, with the socket's backlog left for the next one.
func TestRecvLimit(t *testing.T) {
	r := newTestRing(t, 8, 256)
	bufs, err := NewBufRing(r, 1, 64, 4096)
	require.NoError(t, err)
	if !RecvLimitWorks(r, bufs) {
		t.Skip("this kernel does not cap multishot receives")
	}
	a, b := socketPair(t)
	require.NoError(t, unix.SetsockoptInt(a, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20))
	for range 4 {
		_, err := unix.Write(a, make([]byte, 64<<10))
		require.NoError(t, err)
	}
	r.PrepRecvMultishot(b, bufs, 1).SetRecvLimit(16 << 10)
	total := 0
	for more := true; more; {
		for _, c := range collect(t, r, 1) {
			if id, ok := c.Buffer(); ok {
				bufs.Recycle(id)
			}
			total += int(c.Res)
			more = c.More()
		}
	}
	assert.Equal(t, 16<<10, total)
}
