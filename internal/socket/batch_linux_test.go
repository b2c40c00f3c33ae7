//go:build !sluice_std

package socket

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/udptest"
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
			n, _, err := b.Recv(r.fd, b.Len())
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

// A Batch of GROBuffer-sized buffers on a socket that coalesces receives
// hands each datagram of a coalesced burst on its own, in order, with
// its sender, beside datagrams that came alone; a buffer too short for a
// coalesced receive cuts its last datagrams short and reports them
// truncated.
func TestBatchSplitsCoalesced(t *testing.T) {
	r, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	f, err := r.File() // a blocking copy, read with MSG_DONTWAIT
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	fd := int(f.Fd())
	require.NoError(t, ReceiveCoalesced(fd, true))
	dial := func() *net.UDPConn {
		c, err := net.DialUDP("udp4", nil, r.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, c := dial(), dial()

	// burst is n datagrams of size bytes, the last last bytes, each of
	// its own byte.
	burst := func(first byte, n, size, last int) (all []byte, each [][]byte) {
		for i := range n {
			l := size
			if i == n-1 {
				l = last
			}
			d := bytes.Repeat([]byte{first + byte(i)}, l)
			all, each = append(all, d...), append(each, d)
		}
		return all, each
	}
	type dgram struct {
		from *net.UDPConn
		p    []byte
	}
	var want []dgram
	all, each := burst('A', 20, 100, 37)
	require.NoError(t, udptest.WriteSegmented(a, nil, all, 100))
	for _, d := range each {
		want = append(want, dgram{a, d})
	}
	_, err = c.Write([]byte("alone"))
	require.NoError(t, err)
	want = append(want, dgram{c, []byte("alone")})
	all, each = burst('a', 10, 50, 50)
	require.NoError(t, udptest.WriteSegmented(a, nil, all, 50))
	for _, d := range each {
		want = append(want, dgram{a, d})
	}

	b := NewBatch(4, GROBuffer)
	got, buffers := 0, 0
	deadline := time.Now().Add(5 * time.Second)
	for got < len(want) {
		n, _, err := b.Recv(fd, b.Len())
		if err == unix.EAGAIN {
			require.True(t, time.Now().Before(deadline), "%d of %d datagrams", got, len(want))
			time.Sleep(time.Millisecond)
			continue
		}
		require.NoError(t, err)
		buffers += b.used
		for i := range n {
			p, from, truncated := b.At(i)
			require.Equal(t, want[got].p, p, "datagram %d", got)
			require.False(t, truncated, "datagram %d", got)
			require.Equal(t, want[got].from.LocalAddr().(*net.UDPAddr).AddrPort(), from, "datagram %d", got)
			got++
		}
	}
	require.Less(t, buffers, len(want), "the kernel coalesced nothing: the test tried no split")

	// A buffer shorter than what the kernel coalesced into it.
	all, _ = burst('0', 5, 10, 10)
	require.NoError(t, udptest.WriteSegmented(a, nil, all, 10))
	b = NewBatch(1, GROBuffer)
	b.bufs[0], b.iovs[0].Len = b.bufs[0][:25], 25
	var n int
	for {
		n, _, err = b.Recv(fd, 1)
		if err != unix.EAGAIN || time.Now().After(deadline.Add(5*time.Second)) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, err)
	require.Equal(t, 5, n, "every datagram sent, kept or not")
	for i, w := range []struct {
		p         string
		truncated bool
	}{{"0000000000", false}, {"1111111111", false}, {"22222", true}, {"", true}, {"", true}} {
		p, _, truncated := b.At(i)
		require.Equal(t, w.p, string(p), "datagram %d", i)
		require.Equal(t, w.truncated, truncated, "datagram %d", i)
	}
}

// A Batch splits a coalesced receive on a socket whose own options have
// the kernel write control messages ahead of UDP_GRO's (timestamps, a
// count of drops, a mark), as one enrolled may have: the segment size
// must not be crowded out of the room the Batch gives each buffer.
func TestBatchSplitsCoalescedBehindOtherControlMessages(t *testing.T) {
	for _, o := range []struct {
		name string
		opt  int
		val  int
	}{
		{"SO_TIMESTAMP", unix.SO_TIMESTAMP, 1},
		{"SO_TIMESTAMPNS", unix.SO_TIMESTAMPNS, 1},
		{"SO_TIMESTAMPING", unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE},
		{"SO_RCVMARK", unix.SO_RCVMARK, 1},
		{"all", -1, 0},
	} {
		t.Run(o.name, func(t *testing.T) {
			r, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			require.NoError(t, err)
			t.Cleanup(func() { r.Close() })
			f, err := r.File()
			require.NoError(t, err)
			t.Cleanup(func() { f.Close() })
			fd := int(f.Fd())
			set := func(opt, val int) { require.NoError(t, unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, val)) }
			if o.opt >= 0 {
				set(o.opt, o.val)
			} else {
				set(unix.SO_TIMESTAMPNS, 1)
				set(unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE)
				set(unix.SO_RCVMARK, 1)
				set(unix.SO_RXQ_OVFL, 1)
			}
			require.NoError(t, ReceiveCoalesced(fd, true))
			a, err := net.DialUDP("udp4", nil, r.LocalAddr().(*net.UDPAddr))
			require.NoError(t, err)
			t.Cleanup(func() { a.Close() })
			var all []byte
			for i := range 10 {
				all = append(all, bytes.Repeat([]byte{'A' + byte(i)}, 100)...)
			}
			require.NoError(t, udptest.WriteSegmented(a, nil, all, 100))

			b := NewBatch(4, GROBuffer)
			got, buffers := 0, 0
			deadline := time.Now().Add(5 * time.Second)
			for got < 10 {
				n, _, err := b.Recv(fd, b.Len())
				if err == unix.EAGAIN {
					require.True(t, time.Now().Before(deadline), "%d of 10 datagrams", got)
					time.Sleep(time.Millisecond)
					continue
				}
				require.NoError(t, err)
				buffers += b.used
				for i := range n {
					p, _, truncated := b.At(i)
					require.Equal(t, string(bytes.Repeat([]byte{'A' + byte(got)}, 100)), string(p), "datagram %d", got)
					require.False(t, truncated, "datagram %d", got)
					got++
				}
			}
			require.Less(t, buffers, 10, "the kernel coalesced nothing: the test tried no split")
		})
	}
}

// The control messages of a receive are the kernel's, but a Batch reads
// them as a parser reads input: whatever they say (a segment size of
// zero, negative or past the datagram, a message cut short, of another
// kind, or behind others), the datagrams At returns are the buffer's
// bytes in order, each but the last of one size, and one datagram the
// whole buffer where no UDP_GRO message gives a size under its length.
func FuzzBatchSplit(f *testing.F) {
	msg := func(level, typ int32, data ...byte) []byte {
		m := make([]byte, unix.CmsgSpace(len(data)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&m[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(len(data)))
		copy(m[unix.CmsgLen(0):], data)
		return m
	}
	gro := func(seg int32) []byte {
		return msg(unix.SOL_UDP, unix.UDP_GRO, byte(seg), byte(seg>>8), byte(seg>>16), byte(seg>>24))
	}
	stamp := msg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, make([]byte, 16)...)
	for _, s := range []struct {
		ctrl []byte
		n    uint32
	}{
		{gro(100), 1000}, {gro(100), 950}, {gro(1), 200}, {gro(0), 1000}, {gro(-1), 1000}, {gro(1000), 1000},
		{gro(2000), 1000}, {gro(1), 0}, {gro(100)[:20], 1000}, {append(stamp, gro(10)...), 95}, {append(append(stamp, stamp...), gro(7)...), 50},
		{msg(unix.SOL_UDP, unix.UDP_SEGMENT, 100, 0), 1000}, {gro(1400), GROBuffer}, {nil, 1000},
	} {
		f.Add(s.ctrl, s.n)
	}
	b := NewBatch(1, GROBuffer)
	f.Fuzz(func(t *testing.T, ctrl []byte, n uint32) {
		n %= GROBuffer + 1 // what a GROBuffer holds: never cut short
		ctrl = ctrl[:min(len(ctrl), ctrlRoom)]
		copy(b.ctrl, ctrl)
		b.hdrs[0].hdr.SetControllen(len(ctrl))
		b.hdrs[0].n = n
		b.used = 1
		b.segs = b.segs[:0]
		got := b.split()
		p, _, truncated := b.At(0)
		require.False(t, truncated)
		if got == 1 {
			require.Len(t, p, int(n))
			return
		}
		seg := len(p)
		require.Positive(t, seg)
		require.Less(t, seg, int(n))
		require.Equal(t, (int(n)+seg-1)/seg, got, "datagrams of %d bytes in %d", seg, n)
		require.Equal(t, got, b.PerBuffer())
		for i := range got {
			p, _, truncated := b.At(i)
			require.False(t, truncated, "datagram %d", i)
			start := int(uintptr(unsafe.Pointer(unsafe.SliceData(p))) - uintptr(unsafe.Pointer(&b.bufs[0][0])))
			require.Equal(t, i*seg, start, "datagram %d starts where the one before ended", i)
			require.Len(t, p, min(seg, int(n)-i*seg), "datagram %d", i)
			require.Equal(t, len(p), cap(p), "datagram %d ends with its capacity", i)
		}
	})
}
