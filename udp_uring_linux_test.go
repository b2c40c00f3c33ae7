//go:build !sluice_std

package sluice

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
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
		assert.Equal(t, p, udptest.RoundTrip(t, c, p))
	}
	_, err := c.Write(make([]byte, 1025))
	assert.NoError(t, err)
	<-h.truncated
	assert.Equal(t, uint64(1), eng.Stats().DatagramsTruncated)
}

// A burst that finds the UDP buffer ring empty ends the multishot
// recvmsg (counted in RingBuffersExhausted), which is armed again: the
// datagrams wait in the socket's buffer, and every one of them reaches
// OnTraffic.
func TestRingUDPBuffersExhausted(t *testing.T) {
	skipWithoutRing(t)
	h := &udpGate{entered: make(chan struct{}), open: make(chan struct{})}
	// Buffers of 256 KiB: the ring has 16 of them.
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithPoller(poller.IOUring), WithNumEventLoop(1), WithReadBufferCap(256<<10))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("first"))
	require.NoError(t, err)
	<-h.entered // the loop waits in OnTraffic: nothing is received meanwhile
	const burst = 100
	for range burst {
		_, err := c.Write([]byte("burst"))
		require.NoError(t, err)
	}
	close(h.open)
	waitFor(t, 10*time.Second, func() bool { return h.n.Load() == burst+1 }, func() string {
		return fmt.Sprintf("%d of %d datagrams reached OnTraffic; %d receives found no buffer",
			h.n.Load(), burst+1, eng.Stats().RingBuffersExhausted)
	})
	require.NotZero(t, eng.Stats().RingBuffersExhausted, "the ring never ran out of UDP buffers: nothing was tested")
	assert.Equal(t, []byte("after"), udptest.RoundTrip(t, c, []byte("after")), "the socket still receives")
}

// udpGate counts datagrams, holding the loop in the first OnTraffic until
// open closes, and echoes those after the burst.
type udpGate struct {
	udpCounted
	once    sync.Once
	entered chan struct{}
	open    chan struct{}
}

func (h *udpGate) OnTraffic(c Conn) Action {
	h.once.Do(func() {
		close(h.entered)
		<-h.open
	})
	b, _ := c.Peek(-1)
	if string(b) == "burst" || string(b) == "first" {
		h.n.Add(1)
		c.Discard(-1)
		return None
	}
	return h.udpCounted.OnTraffic(c)
}

// Where the ring's send takes no address (before Linux 6.1), a datagram
// goes as a sendmsg: answers of every size, empty ones too, reach their
// senders over IPv4 and IPv6, as they do by the send that takes one.
func TestRingUDPSendmsg(t *testing.T) {
	skipWithoutRing(t)
	for _, sendsTo := range []bool{false, true} {
		t.Run(fmt.Sprint("sendsTo=", sendsTo), func(t *testing.T) {
			saved := ringSendsTo
			t.Cleanup(func() { ringSendsTo = saved }) // after the engine stops
			ringSendsTo = func() bool { return sendsTo && saved() }
			for _, network := range []string{"udp4://127.0.0.1:0", "udp6://[::1]:0"} {
				eng, addr := serveAddr(t, network, &udpEcho{}, WithPoller(poller.IOUring), WithNumEventLoop(1), WithReadBufferCap(2048))
				rg, ok := eng.e.loops[0].drv.(*ringDriver)
				require.True(t, ok, "the loop runs on %T", eng.e.loops[0].drv)
				c := udpDial(t, addr)
				for _, n := range []int{0, 1, 64, 2048} {
					p := make([]byte, n)
					if n > 0 {
						p[0] = byte(n)
					}
					assert.Equal(t, p, udptest.RoundTrip(t, c, p), "%s, %d bytes", network, n)
				}
				assert.Equal(t, sendsTo && saved(), rg.pk.sendsTo)
				assert.Zero(t, eng.Stats().DatagramsSendFailed)
			}
		})
	}
}
