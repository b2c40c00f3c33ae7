//go:build !sluice_std

package socket

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A SendBatch sends what it gathered with sendmmsg, reports a datagram
// the kernel refuses (a port of 0: EINVAL) once, on its own, and sends
// the ones after it; it refuses what it has no room for.
func TestSendBatch(t *testing.T) {
	r, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	to := r.LocalAddr().(*net.UDPAddr).AddrPort()
	fd, err := newSocket(unix.AF_INET, unix.SOCK_DGRAM)
	require.NoError(t, err)
	t.Cleanup(func() { Close(fd) })

	b := NewSendBatch(3, 10)
	a, c := []byte("aaaa"), []byte("cccc")
	require.True(t, b.Add(a, to, false))
	require.True(t, b.Add([]byte("b"), netip.AddrPortFrom(to.Addr(), 0), false))
	require.True(t, b.Add(c, to, false))
	a[0], c[0] = 'x', 'x' // copied in: the caller's bytes are its own again
	require.False(t, b.Add(nil, to, false), "no slot left")
	require.Equal(t, 3, b.Pending())

	lost, err := b.Send(fd)
	require.ErrorIs(t, err, unix.EINVAL)
	require.Equal(t, 1, lost, "the length of the datagram to port 0")
	require.Equal(t, 1, b.Pending())
	lost, err = b.Send(fd)
	require.NoError(t, err)
	require.Zero(t, lost)
	require.Zero(t, b.Pending())
	got := make([]byte, 16)
	for _, want := range []string{"aaaa", "cccc"} {
		require.NoError(t, r.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, err := r.Read(got)
		require.NoError(t, err)
		require.Equal(t, want, string(got[:n]))
	}

	b.Reset(true)
	require.True(t, b.Add(make([]byte, 10), to, false))
	require.False(t, b.Add([]byte("y"), to, false), "no byte left")
	b.Reset(false)
	require.True(t, b.Add([]byte("y"), to, false), "empty again")
}
