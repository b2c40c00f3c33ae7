//go:build linux && !sluice_std

package sluice

import (
	"bytes"
	"net"
	"testing"

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
// by taking fewer than it asked for that the socket is empty, and its
// sendto; on io_uring, the turn's io_uring_enter, which brought it and
// sends the answer. Neither allocates.
func TestUDPEchoSystemCallsAndAllocations(t *testing.T) {
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", echoHandler{}, WithNumEventLoop(1))
	p := &udpPing{c: udpDial(t, addr), msg: bytes.Repeat([]byte("u"), 64), got: make([]byte, 128)}
	for range 100 {
		p.roundTrip(t)
	}
	const trips = 1000
	perTrip := float64(fewestSystemCalls(eng.e.loops[0], func() {
		for range trips {
			p.roundTrip(t)
		}
	})) / trips
	t.Logf("%.2f system calls per 64-byte datagram echoed", perTrip)
	budget := 3.0
	if testPoller == poller.IOUring {
		budget = 1.0
	}
	require.LessOrEqual(t, perTrip, budget)

	skipUnderRace(t)
	allocs := testing.AllocsPerRun(1000, func() { p.roundTrip(t) })
	require.Zero(t, allocs, "heap allocations per datagram echoed")
}
