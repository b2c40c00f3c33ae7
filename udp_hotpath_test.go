//go:build linux && !sluice_std

package sluice

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syscount"
	"github.com/sluicenet/sluice/poller"
)

// udpPing is a client that sends 64 bytes and reads them back.
type udpPing struct {
	c        *net.UDPConn
	msg, got []byte
}

func (p *udpPing) roundTrip(t testing.TB) {
	if _, err := p.c.Write(p.msg); err != nil {
		t.Fatal(err)
	}
	n, err := p.c.Read(p.got)
	if err != nil || !bytes.Equal(p.got[:n], p.msg) {
		t.Fatalf("echo: %q, %v", p.got[:n], err)
	}
}

// A datagram's echo costs, on epoll, its wait, its recvmmsg, which tells
// by taking fewer than it asked for that the socket is empty, and the
// sendmmsg that sends the answer gathered meanwhile; on io_uring, the
// turn's io_uring_enter, which brought it and sends the answer (the ring's
// idle-release timer aside: ringTimerWakeups). Neither allocates.
func TestUDPEchoSystemCallsAndAllocations(t *testing.T) {
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", echoHandler{}, WithNumEventLoop(1))
	p := &udpPing{c: udpDial(t, addr), msg: bytes.Repeat([]byte("u"), 64), got: make([]byte, 128)}
	udpEchoCosts(t, eng, func() { p.roundTrip(t) })
}

// udpEchoCosts holds a loop of eng's, the only one, to the UDP echo's hot
// path, with roundTrip one datagram echoed: at most three system calls a
// datagram on epoll and one on io_uring, and no heap allocation.
func udpEchoCosts(t *testing.T, eng Engine, roundTrip func()) {
	t.Helper()
	for range 100 {
		roundTrip()
	}
	const trips = 1000
	perTrip := float64(fewestSystemCallsBesides(eng.e.loops[0], func() {
		for range trips {
			roundTrip()
		}
	}, ringTimerWakeups)) / trips
	t.Logf("%.3f system calls per 64-byte datagram echoed", perTrip)
	budget := 3.0
	if testPoller == poller.IOUring {
		budget = 1.0
	}
	require.LessOrEqual(t, perTrip, budget)

	skipUnderRace(t)
	allocs := testing.AllocsPerRun(1000, roundTrip)
	require.Zero(t, allocs, "heap allocations per datagram echoed")
}

// ringTimerWakeups is how many times, at most, the ring's idle-release
// timer wakes a loop on io_uring that receives for d: once each
// ringIdleRelease, and once more for the timer armed before d began
// (ringDriver.received). A wait it ends with no datagram costs an
// io_uring_enter more, which a user sees too, about ten a second on a busy
// loop; on a slow machine, where a thousand datagrams take longer than
// ringIdleRelease, every run has one. It is none on epoll.
func ringTimerWakeups(d time.Duration) uint64 {
	if testPoller != poller.IOUring {
		return 0
	}
	return uint64(d/ringIdleRelease) + 1
}

// A burst of datagrams waiting when the loop turns to its socket is
// answered with one receive and one send for the lot: on epoll a
// recvmmsg and a sendmmsg (and the wait), on io_uring the turn's
// io_uring_enter; what holding the loop costs (its wake-up) comes on top.
// The burst is packetBatch datagrams, what one readiness hands the
// handler, sent while a task holds the loop.
func TestUDPBurstSystemCalls(t *testing.T) { udpBurstSystemCalls(t) }

// A datagram session's answers go out with its listener socket's batch,
// as the socket's own do.
func TestUDPSessionBurstSystemCalls(t *testing.T) {
	udpBurstSystemCalls(t, WithDatagramSessions(0, 0))
}

func udpBurstSystemCalls(t *testing.T, opts ...Option) {
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", echoHandler{}, append(opts, WithNumEventLoop(1))...)
	l := eng.e.loops[0]
	c := udpDial(t, addr)
	msg, got := make([]byte, 64), make([]byte, 128)
	burst := func() {
		release, held := make(chan struct{}), make(chan struct{})
		require.NoError(t, Loop{l}.Execute(func() { close(held); <-release }))
		<-held
		for i := range packetBatch {
			msg[0] = byte(i)
			_, err := c.Write(msg)
			require.NoError(t, err)
		}
		close(release)
		seen := make([]bool, packetBatch)
		for range packetBatch {
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			n, err := c.Read(got)
			require.NoError(t, err)
			require.Equal(t, 64, n)
			require.False(t, seen[got[0]], "datagram %d echoed twice", got[0])
			seen[got[0]] = true
		}
	}
	burst()
	perDatagram := float64(fewestSystemCalls(l, burst)) / packetBatch
	t.Logf("%.3f system calls per datagram in bursts of %d", perDatagram, packetBatch)
	require.LessOrEqual(t, perDatagram, 0.2)
}
