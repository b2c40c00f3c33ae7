package uring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestPollMultishotReportsEachWake writes an eventfd twice without ever
// reading it: a multishot poll reports each write, as an edge-triggered
// epoll would, and stays armed.
func TestPollMultishotReportsEachWake(t *testing.T) {
	r := newTestRing(t, 8, 0)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	require.NoError(t, err)
	closeAtEnd(t, efd)
	r.PrepPollMultishot(efd, unix.POLLIN, 7)
	require.NoError(t, r.Submit())
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	for range 2 {
		_, err := unix.Write(efd, one)
		require.NoError(t, err)
		got := collect(t, r, 1)
		require.Len(t, got, 1)
		assert.Equal(t, uint64(7), got[0].UserData)
		assert.NotZero(t, got[0].Res&unix.POLLIN)
		assert.True(t, got[0].More(), "the poll stays armed")
	}
}

// TestPollAddWritable waits once for a socket to take output.
func TestPollAddWritable(t *testing.T) {
	r := newTestRing(t, 8, 0)
	a, _ := socketPair(t)
	r.PrepPollAdd(a, unix.POLLOUT, 9)
	got := collect(t, r, 1)
	require.Len(t, got, 1)
	assert.NotZero(t, got[0].Res&unix.POLLOUT)
	assert.False(t, got[0].More(), "a one-shot poll ends with its completion")
}
