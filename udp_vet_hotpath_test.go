//go:build linux && !sluice_std

package sluice

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/sluicenet/sluice/internal/syscount"
)

// Behind a proxy, with sessions and a rate limit, a datagram from a peer
// whose session is open costs what a plain one does: no allocation, and
// on epoll its wait, its recvmmsg and the sendmmsg of its answer,
// gathered as the socket's own are; on io_uring the turn's
// io_uring_enter (the ring's idle-release timer aside: ringTimerWakeups).
// Reading its PROXY header, finding its session and
// taking a token from its rate are all in memory.
func TestUDPVettedEchoSystemCallsAndAllocations(t *testing.T) {
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", echoHandler{}, WithNumEventLoop(1),
		WithProxyProtocol(ProxyRequired, 0), WithDatagramSessions(0, 0), WithDatagramRateLimit(1<<30, 1<<30))
	dst := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	hdr := dgramHeader(1, 0x12, netip.MustParseAddrPort("192.0.2.1:5353"), dst)
	payload := bytes.Repeat([]byte("u"), 64)
	c := udpDial(t, addr)
	got := make([]byte, 256)
	msg := append(hdr, payload...)
	roundTrip := func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(got)
		if err != nil || !bytes.Equal(got[:n], payload) {
			t.Fatalf("echo: %q, %v", got[:n], err)
		}
	}
	udpEchoCosts(t, eng, roundTrip)
}
