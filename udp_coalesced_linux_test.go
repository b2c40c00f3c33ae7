//go:build linux && !sluice_std

package sluice

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/udptest"
	"github.com/sluicenet/sluice/poller"
)

// A flood of coalesced bursts passes a readiness's budget (packetBatch)
// by at most a buffer's worth of datagrams, as a flood of datagrams sent
// one by one keeps to it: once the socket's receives come coalesced, the
// loop asks for no more buffers than the budget's datagrams fill, so
// that the loop's other sockets still get their turn. Epoll's (and the
// ring's polled) receive; the ring's multishot one does not coalesce.
func TestUDPCoalescedFloodKeepsTheBudget(t *testing.T) {
	if testPoller != poller.Epoll {
		t.Skip("epoll's receive")
	}
	const bursts, each, size = 8, 64, 20
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", &udpEcho{}, WithNumEventLoop(1))
	c := udpDial(t, addr)
	require.NoError(t, c.SetReadBuffer(4<<20))
	l := eng.e.loops[0]
	var u *udpConn
	for _, s := range l.packets.socks {
		if s != nil {
			u = s
		}
	}
	burst := func(i int) {
		var all []byte
		for j := range each {
			all = append(all, fmt.Appendf(nil, "%03d-%02d-%s", i, j, bytes.Repeat([]byte("x"), size-len("000-00-")))...)
		}
		require.NoError(t, udptest.WriteSegmented(c, nil, all, size))
	}
	// A task holds the loop while the test sends, and then hands over
	// what waits on u, readiness by readiness (each with the budget),
	// until the datagrams the test sent came, and says how many each
	// readiness handed over.
	sent, handed := make(chan int), make(chan []int, 2)
	require.NoError(t, Loop{l}.Execute(func() {
		for want := range sent {
			var each []int
			deadline := time.Now().Add(10 * time.Second)
			for got := 0; got < want && time.Now().Before(deadline); {
				if n, _ := l.receivePackets(u, packetBatch); n > 0 {
					each, got = append(each, n), got+n
				}
			}
			handed <- each
		}
	}))
	defer close(sent)
	burst(0)
	sent <- each
	<-handed
	for i := 1; i <= bursts; i++ {
		burst(i)
	}
	sent <- bursts * each
	got := <-handed
	sum := 0
	for _, n := range got {
		sum += n
		require.LessOrEqual(t, n, packetBatch+each-1, "one readiness handed over %d datagrams, of %v", n, got)
	}
	require.Equal(t, bursts*each, sum)
}

// The kernel coalesces as datagrams arrive: a connected socket enrolled
// with UDP_GRO on brings the bursts it coalesced before the loop took it,
// which epoll's loop, its read buffers at the default 64 KiB, splits as
// it splits those that arrive later.
func TestUDPEnrolledWithCoalescedBurstsQueued(t *testing.T) {
	if testPoller != poller.Epoll {
		t.Skip("epoll's receive")
	}
	const each, size = 10, 100
	eng, _ := serve(t, &udpEcho{}, WithNumEventLoop(1))
	peer := udpPeer(t)
	nc := dialUDPWith(t, peer, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) })
	all := lettered(each, size)
	require.NoError(t, udptest.WriteSegmented(peer, nc.LocalAddr().(*net.UDPAddr), all, size))
	require.NoError(t, eng.Enroll(nc, nil))
	lettersBack(t, peer, each, size, "")
}
