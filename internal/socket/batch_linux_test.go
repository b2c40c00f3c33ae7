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

// receiverAndSender returns a UDP socket on loopback, its address, and a
// socket of this package's to send to it from.
func receiverAndSender(t *testing.T) (*net.UDPConn, netip.AddrPort, int) {
	t.Helper()
	r, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	fd, err := newSocket(unix.AF_INET, unix.SOCK_DGRAM)
	require.NoError(t, err)
	t.Cleanup(func() { Close(fd) })
	return r, r.LocalAddr().(*net.UDPAddr).AddrPort(), fd
}

// A SendBatch sends what it gathered with sendmmsg, reports a datagram
// the kernel refuses (a port of 0: EINVAL) once, on its own, and sends
// the ones after it; it refuses what it has no room for.
func TestSendBatch(t *testing.T) {
	r, to, fd := receiverAndSender(t)

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

// A lone datagram goes with sendto, and a failure of it is reported as
// the batch's are: its length lost, nothing left pending; an empty one
// goes too.
func TestSendBatchOne(t *testing.T) {
	r, to, fd := receiverAndSender(t)

	b := NewSendBatch(2, 16)
	require.True(t, b.Add([]byte("bad"), netip.AddrPortFrom(to.Addr(), 0), false))
	lost, err := b.Send(fd)
	require.ErrorIs(t, err, unix.EINVAL)
	require.Equal(t, 3, lost)
	require.Zero(t, b.Pending())
	b.Reset(false)

	got := make([]byte, 16)
	for _, want := range []string{"one", ""} {
		require.True(t, b.Add([]byte(want), to, false))
		lost, err := b.Send(fd)
		require.NoError(t, err)
		require.Zero(t, lost)
		require.Zero(t, b.Pending())
		b.Reset(false)
		require.NoError(t, r.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, from, err := r.ReadFromUDPAddrPort(got)
		require.NoError(t, err)
		require.Equal(t, want, string(got[:n]))
		require.NotZero(t, from.Port())
	}
}

// Each Recv reads its datagrams afresh, whichever socket it reads: a
// header that held a truncated datagram from an IPv4 socket's sender
// holds a whole one, and an IPv6 sender's whole address, next time.
func TestBatchReceivesAfresh(t *testing.T) {
	listen := func(network, ip string) (int, *net.UDPAddr) {
		pc, err := net.ListenPacket(network, net.JoinHostPort(ip, "0"))
		require.NoError(t, err)
		f, err := pc.(*net.UDPConn).File() // a blocking copy, read with MSG_DONTWAIT
		require.NoError(t, err)
		pc.Close()
		t.Cleanup(func() { f.Close() })
		sa, err := unix.Getsockname(int(f.Fd()))
		require.NoError(t, err)
		port := 0
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			port = sa.Port
		case *unix.SockaddrInet6:
			port = sa.Port
		}
		return int(f.Fd()), &net.UDPAddr{IP: net.ParseIP(ip), Port: port}
	}
	dial := func(to *net.UDPAddr) *net.UDPConn {
		c, err := net.DialUDP("udp", nil, to)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	fd4, to4 := listen("udp4", "127.0.0.1")
	fd6, to6 := listen("udp6", "::1")
	a, c := dial(to4), dial(to4)
	a6 := dial(to6)

	type dgram struct {
		from      *net.UDPConn
		p         string
		truncated bool
	}
	b := NewBatch(3, 4)
	for round, r := range []struct {
		fd   int
		sent []dgram
	}{
		{fd4, []dgram{{a, "ab", false}, {a, "long one", true}, {c, "cd", false}}},
		{fd6, []dgram{{a6, "ef", false}, {a6, "gh", false}}},
		{fd4, []dgram{{c, "ij", false}}},
		{fd6, []dgram{{a6, "kl", false}, {a6, "mn", false}, {a6, "op", false}}},
		{fd4, []dgram{{c, "qr", false}, {a, "st", false}}},
	} {
		for _, d := range r.sent {
			_, err := d.from.Write([]byte(d.p))
			require.NoError(t, err)
		}
		got := 0
		deadline := time.Now().Add(5 * time.Second)
		for got < len(r.sent) {
			n, err := b.Recv(r.fd, b.Len())
			if err == unix.EAGAIN {
				require.True(t, time.Now().Before(deadline), "round %d: %d of %d datagrams", round, got, len(r.sent))
				time.Sleep(time.Millisecond)
				continue
			}
			require.NoError(t, err)
			for i := range n {
				d := r.sent[got]
				p, from, truncated := b.At(i)
				want := d.p[:min(len(d.p), 4)]
				require.Equal(t, want, string(p), "round %d", round)
				require.Equal(t, d.truncated, truncated, "round %d, %q", round, d.p)
				require.Equal(t, d.from.LocalAddr().(*net.UDPAddr).AddrPort(), from, "round %d", round)
				got++
			}
		}
	}
}
