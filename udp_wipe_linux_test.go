//go:build linux && !sluice_std

package sluice

import (
	"bytes"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
	"github.com/sluicenet/sluice/internal/uring"
)

// WithWipeBuffers: the datagrams that arrived with the one whose callback
// closed their connected socket, which the handler never sees, are wiped
// from where the loop received them: epoll's receive batch (one recvmmsg
// brought them), or the ring's UDP buffers (their completions came in the
// same turn, for a socket closed by then).
func TestUDPWipeBuffersUnhandedDatagrams(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		return leftAfterClose(t, p, func(peer *net.UDPConn, local *net.UDPAddr) {
			for _, s := range []string{"secret-1", "secret-2", "secret-3"} {
				_, err := peer.WriteToUDP([]byte(s), local)
				require.NoError(t, err)
			}
		})
	})
}

// WithWipeBuffers: a coalesced burst, of which the handler sees the
// first datagram and closes the socket, leaves none of its datagrams'
// bytes where the loop received it: the one handed over, and those the
// loop dropped unseen, cut from one buffer.
func TestUDPWipeBuffersUnhandedCoalescedDatagrams(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		return leftAfterClose(t, p, func(peer *net.UDPConn, local *net.UDPAddr) {
			var all []byte
			for i := range 5 {
				all = append(all, fmt.Sprintf("secret-%d", i)...)
			}
			require.NoError(t, udptest.WriteSegmented(peer, local, all, len("secret-0")))
		})
	})
}

// leftAfterClose dials a peer from a loop that wipes its buffers and
// closes a connected socket at its first datagram, has send send it
// secrets while the loop is held, so that they arrive together, and
// requires that none is left where the loop received them.
func leftAfterClose(t *testing.T, p Option, send func(peer *net.UDPConn, local *net.UDPAddr)) outcome {
	h := &udpCloseAtOnce{opened: make(chan net.Addr, 1), closed: make(chan error, 1)}
	eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, p, WithNumEventLoop(1), WithWipeBuffers(true))
	peer := udpPeer(t)
	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	local := (<-h.opened).(*net.UDPAddr)

	l := eng.e.loops[0]
	release, held := make(chan struct{}), make(chan struct{})
	require.NoError(t, Loop{l}.Execute(func() { close(held); <-release }))
	<-held
	send(peer, local)
	close(release)
	<-h.closed
	left := make(chan []byte, 1)
	require.NoError(t, Loop{l}.Execute(func() { left <- receivedInto(l) }))
	assert.False(t, bytes.Contains(<-left, []byte("secret")), "a datagram's bytes left where the loop received it")
	return outcome{Stats: Stats{BytesIn: eng.Stats().BytesIn}}
}

// receivedInto returns a copy of the memory l receives datagrams into: its
// receive batch, and on io_uring the ring's UDP buffers. A receive that
// fails (on no socket) first has the batch index its buffers again, not
// the datagrams its last receive cut from them.
func receivedInto(l *eventloop) []byte {
	var all []byte
	if b := l.packets.batch; b != nil {
		b.Recv(-1, 1)
		for i := range b.Len() {
			p, _, _ := b.At(i)
			all = append(all, p[:cap(p)]...)
		}
	}
	if rg, ok := l.drv.(*ringDriver); ok && rg.pk.bufs != nil {
		size := l.eng.opts.readBufferCap + uring.RecvmsgHeader + nameRoom
		for id := range ringBufCount(size) {
			all = append(all, rg.pk.bufs.Buf(uint16(id))...)
		}
	}
	return all
}

// udpCloseAtOnce closes a dialed UDP socket on its first datagram.
type udpCloseAtOnce struct {
	BuiltinEventEngine
	opened chan net.Addr
	closed chan error
}

func (h *udpCloseAtOnce) OnOpen(c Conn) ([]byte, Action) {
	h.opened <- c.LocalAddr()
	return nil, None
}

func (h *udpCloseAtOnce) OnTraffic(c Conn) Action { return Close }

func (h *udpCloseAtOnce) OnClose(c Conn, err error) Action {
	h.closed <- err
	return None
}

// WithWipeBuffers: the loop's buffer Writev gathers a datagram in is
// wiped once the datagram is sent.
func TestUDPWipeBuffersWritev(t *testing.T) {
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", udpWritevEcho{}, WithNumEventLoop(1), WithWipeBuffers(true))
	c := udpDial(t, addr)
	assert.Equal(t, "secret", string(udptest.RoundTrip(t, c, []byte("secret"))))
	l := eng.e.loops[0]
	left := make(chan []byte, 1)
	require.NoError(t, Loop{l}.Execute(func() { left <- bytes.Clone(l.packets.gather[:cap(l.packets.gather)]) }))
	assert.False(t, bytes.Contains(<-left, []byte("secret")), "a datagram's bytes left in the gather buffer")
}

// udpWritevEcho echoes each datagram with a Writev of its halves.
type udpWritevEcho struct{ BuiltinEventEngine }

func (udpWritevEcho) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	c.Writev([][]byte{b[:len(b)/2], b[len(b)/2:]})
	return None
}
