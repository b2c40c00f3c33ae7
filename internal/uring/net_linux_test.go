package uring

import (
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// socketPair returns a connected pair of Unix stream sockets, closed when
// the test ends.
func socketPair(tb testing.TB) (a, b int) {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(tb, err)
	closeAtEnd(tb, fds[0], fds[1])
	return fds[0], fds[1]
}

func closeAtEnd(tb testing.TB, fds ...int) {
	tb.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
}

// listenTCP returns a non-blocking TCP socket listening on a loopback port.
func listenTCP(tb testing.TB) (fd int, addr *unix.SockaddrInet4) {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(tb, err)
	require.NoError(tb, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(tb, unix.Listen(fd, 1024))
	sa, err := unix.Getsockname(fd)
	require.NoError(tb, err)
	return fd, sa.(*unix.SockaddrInet4)
}

// tcpPair returns the two ends of a loopback TCP connection, blocking. The
// caller closes them.
func tcpPair(tb testing.TB) (client, server int) {
	tb.Helper()
	lfd, addr := listenTCP(tb)
	defer unix.Close(lfd)
	client, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(tb, err)
	require.NoError(tb, unix.Connect(client, addr))
	require.NoError(tb, unix.SetNonblock(lfd, false))
	server, _, err = unix.Accept4(lfd, unix.SOCK_CLOEXEC)
	require.NoError(tb, err)
	return client, server
}

// readFull reads n bytes from the blocking socket fd, giving up after five
// seconds without data.
func readFull(tb testing.TB, fd, n int) []byte {
	tb.Helper()
	require.NoError(tb, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5}))
	b := make([]byte, n)
	for got := 0; got < n; {
		m, err := unix.Read(fd, b[got:])
		require.NoError(tb, err)
		require.NotZero(tb, m, "end of stream after %d of %d bytes", got, n)
		got += m
	}
	return b
}

// A send that the socket cannot take whole: with MSG_WAITALL it reports
// what it sent as a failure, so SkipSuccess still tells the loop; without,
// the short count is a success and SkipSuccess hides it. A send that takes
// nothing fails with EAGAIN either way. The kernel frees room in the
// socket as the peer acknowledges what it sent, which on a loaded machine
// may come after the first send has returned, so a send right after it may
// still take a little: sends go on until one takes nothing.
func TestSendShort(t *testing.T) {
	tests := []struct {
		name     string
		msgFlags int
		reported bool
	}{
		{"waitall", unix.MSG_DONTWAIT | unix.MSG_WAITALL, true},
		{"dontwait", unix.MSG_DONTWAIT, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRing(t, 8, 0)
			client, server := tcpPair(t)
			closeAtEnd(t, client, server)
			p := make([]byte, 8<<20)
			var short []CQE
			r.PrepSend(server, p, tt.msgFlags, 1).SetFlags(SkipSuccess)
			require.NoError(t, r.Submit())
			r.ForEachCQE(func(c CQE) { short = append(short, c) })
			full := false
			for i := 0; i < 1000 && !full; i++ {
				r.PrepSend(server, p[:1<<10], tt.msgFlags, 2).SetFlags(SkipSuccess)
				require.NoError(t, r.Submit())
				r.ForEachCQE(func(c CQE) { full = full || c.Err() == unix.EAGAIN })
			}
			require.True(t, full, "no send found the socket full")

			require.NoError(t, unix.Shutdown(server, unix.SHUT_WR))
			sent := drain(t, client)
			require.Less(t, sent, len(p), "the send was not short")
			if tt.reported {
				require.Len(t, short, 1)
				assert.Equal(t, uint64(1), short[0].UserData)
				assert.Positive(t, short[0].Res, "what the short send took")
				assert.LessOrEqual(t, int(short[0].Res), sent)
			} else {
				assert.Empty(t, short)
			}
		})
	}
}

// drain reads the blocking socket fd to the end of the stream and returns
// how many bytes it read.
func drain(tb testing.TB, fd int) int {
	tb.Helper()
	require.NoError(tb, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5}))
	b := make([]byte, 64<<10)
	total := 0
	for {
		n, err := unix.Read(fd, b)
		require.NoError(tb, err)
		if n == 0 {
			return total
		}
		total += n
	}
}

func TestSendmsgGathersSlices(t *testing.T) {
	r := newTestRing(t, 8, 0)
	a, b := socketPair(t)
	parts := [][]byte{[]byte("one "), []byte("two "), []byte("three")}
	iov := make([]unix.Iovec, len(parts))
	for i, p := range parts {
		iov[i].Base = &p[0]
		iov[i].SetLen(len(p))
	}
	msg := &unix.Msghdr{Iov: &iov[0]}
	msg.SetIovlen(len(iov))
	r.PrepSendmsg(a, msg, unix.MSG_DONTWAIT, 7)
	got := collect(t, r, 1)
	assert.Equal(t, CQE{UserData: 7, Res: 13}, got[0])
	assert.Equal(t, "one two three", string(readFull(t, b, 13)))
}

// Cancelling a multishot receive ends it with ECANCELED, and a close
// queued behind the cancellation then closes the socket for the peer.
func TestCancelRecvBeforeClose(t *testing.T) {
	const recvData, cancelData, closeData = 1, 2, 3
	tests := []struct {
		name   string
		cancel func(r *Ring, fd int)
	}{
		{"by fd", func(r *Ring, fd int) { r.PrepCancelFd(fd, cancelData) }},
		{"by user data", func(r *Ring, _ int) { r.PrepCancel(recvData, cancelData) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRing(t, 8, 0)
			bufs, err := NewBufRing(r, 3, 4, 64)
			require.NoError(t, err)
			client, server := tcpPair(t)
			closeAtEnd(t, client)

			r.PrepRecvMultishot(server, bufs, recvData)
			_, err = unix.Write(client, []byte("ping"))
			require.NoError(t, err)
			got := collect(t, r, 1)[0]
			require.True(t, got.More())
			id, ok := got.Buffer()
			require.True(t, ok)
			assert.Equal(t, "ping", string(bufs.Buf(id)[:got.Res]))
			bufs.Recycle(id)

			tt.cancel(r, server)
			r.PrepClose(server, closeData)
			byData := map[uint64]CQE{}
			for _, c := range collect(t, r, 3) {
				byData[c.UserData] = c
			}
			assert.ErrorIs(t, byData[recvData].Err(), unix.ECANCELED)
			assert.False(t, byData[recvData].More())
			assert.Equal(t, int32(1), byData[cancelData].Res, "cancelled count")
			assert.NoError(t, byData[closeData].Err())
			require.NoError(t, unix.SetsockoptTimeval(client, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5}))
			n, err := unix.Read(client, make([]byte, 1))
			assert.NoError(t, err)
			assert.Zero(t, n, "the peer did not see the end of the stream")
		})
	}
}

// When every buffer is held, a multishot receive ends with ENOBUFS; armed
// again after a recycle, it picks up the data waiting in the socket.
func TestRecvRunsOutOfBuffers(t *testing.T) {
	r := newTestRing(t, 8, 0)
	bufs, err := NewBufRing(r, 1, 2, 16)
	require.NoError(t, err)
	a, b := socketPair(t)
	r.PrepRecvMultishot(b, bufs, 1)
	var held []uint16
	for _, msg := range []string{"a", "b"} {
		_, err := unix.Write(a, []byte(msg))
		require.NoError(t, err)
		c := collect(t, r, 1)[0]
		id, ok := c.Buffer()
		require.True(t, ok)
		assert.Equal(t, msg, string(bufs.Buf(id)[:c.Res]))
		held = append(held, id)
	}
	_, err = unix.Write(a, []byte("c"))
	require.NoError(t, err)
	c := collect(t, r, 1)[0]
	assert.ErrorIs(t, c.Err(), unix.ENOBUFS)
	assert.False(t, c.More())

	for _, id := range held {
		bufs.Recycle(id)
	}
	r.PrepRecvMultishot(b, bufs, 1)
	c = collect(t, r, 1)[0]
	id, ok := c.Buffer()
	require.True(t, ok)
	assert.Equal(t, "c", string(bufs.Buf(id)[:c.Res]))
	assert.True(t, c.More())
}

// PrepSendTo sends a datagram to the address it names, from a socket
// that is not connected, where the kernel takes one; where it does not,
// SendsTo says so and the send fails with EINVAL.
func TestPrepSendTo(t *testing.T) {
	r := newTestRing(t, 8, 0)
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	to := pc.LocalAddr().(*net.UDPAddr)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	name := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
	port := (*[2]byte)(unsafe.Pointer(&name.Port))
	port[0], port[1] = byte(to.Port>>8), byte(to.Port)

	p := []byte("datagram")
	r.PrepSendTo(fd, p, unsafe.Pointer(name), unix.SizeofSockaddrInet4, unix.MSG_DONTWAIT, 5)
	got := collect(t, r, 1)
	if !SendsTo() {
		assert.Equal(t, CQE{UserData: 5, Res: -int32(unix.EINVAL)}, got[0])
		return
	}
	assert.Equal(t, CQE{UserData: 5, Res: int32(len(p))}, got[0])
	buf := make([]byte, 16)
	require.NoError(t, pc.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, _, err := pc.ReadFromUDP(buf)
	require.NoError(t, err)
	assert.Equal(t, "datagram", string(buf[:n]))
}
