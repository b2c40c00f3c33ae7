//go:build !sluice_std

package poller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/poller"
)

// A held wait reports what a wait reports: a socket that turns readable,
// a Wake, and nothing once its timeout passes.
func TestWaitHeld(t *testing.T) {
	require.True(t, poller.HeldWaits)
	p, err := poller.Open()
	require.NoError(t, err)
	defer p.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	require.NoError(t, p.Add(fds[0], poller.Readable))

	start := time.Now()
	ready, err := p.WaitHeld(2 * time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, ready)
	require.GreaterOrEqual(t, time.Since(start), 2*time.Millisecond, "a held wait with nothing ready lasts its timeout")

	_, err = unix.Write(fds[1], []byte("x"))
	require.NoError(t, err)
	ready, err = p.WaitHeld(time.Second)
	require.NoError(t, err)
	require.Equal(t, []poller.Ready{{Fd: fds[0], Events: poller.Readable}}, ready)

	var buf [1]byte
	_, err = unix.Read(fds[0], buf[:])
	require.NoError(t, err)
	go p.Wake()
	ready, err = p.WaitHeld(time.Minute)
	require.NoError(t, err)
	require.Empty(t, ready, "a Wake ends a held wait with nothing ready")
}
