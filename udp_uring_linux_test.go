//go:build !sluice_std

package sluice

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicenet/sluice/poller"
)

// Where the kernel lacks a multishot recvmsg, a ring polls its UDP
// sockets and reads them as epoll does: datagrams of several sizes and a
// truncated one go as they do through the recvmsg, and no UDP buffer
// ring is made.
func TestRingPolledUDP(t *testing.T) {
	skipWithoutRing(t)
	saved := ringPacketsPolled
	t.Cleanup(func() { ringPacketsPolled = saved }) // after the engine stops
	ringPacketsPolled = true
	h := &udpEcho{truncated: make(chan []byte, 1)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithPoller(poller.IOUring), WithNumEventLoop(2), WithReusePort(true), WithReadBufferCap(1024))
	for _, l := range eng.e.loops {
		rg, ok := l.drv.(*ringDriver)
		if assert.True(t, ok, "the loop runs on %T", l.drv) {
			assert.Nil(t, rg.pk.bufs, "a polled ring made UDP buffers")
		}
	}
	c := udpDial(t, addr)
	for _, n := range []int{1, 100, 1024} {
		p := make([]byte, n)
		assert.Equal(t, p, udpRoundTrip(t, c, p))
	}
	_, err := c.Write(make([]byte, 1025))
	assert.NoError(t, err)
	<-h.truncated
	assert.Equal(t, uint64(1), eng.Stats().DatagramsTruncated)
}
