//go:build linux

package sluice

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// udpDialed dials a UDP socket from the engine to a peer of the test's
// that reads nothing, and records its Conn and each OnDrain.
type udpDialed struct {
	BuiltinEventEngine
	conns  chan Conn
	drains atomic.Int64
}

func (h *udpDialed) OnOpen(c Conn) ([]byte, Action) {
	h.conns <- c
	return nil, None
}

func (h *udpDialed) OnDrain(Conn) Action {
	h.drains.Add(1)
	return None
}

// dialUDPPeer starts an engine with h and opts on one loop and returns it
// and the Conn of a UDP socket it dialed to a peer that reads nothing.
func dialUDPPeer(t *testing.T, h *udpDialed, opts ...Option) (Engine, Conn) {
	t.Helper()
	eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, append(opts, WithNumEventLoop(1))...)
	peer := udpPeer(t)
	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	select {
	case c := <-h.conns:
		return eng, c
	case <-time.After(10 * time.Second):
		t.Fatal("the UDP dial did not open")
		return eng, nil
	}
}

// Writable answers false for a UDP socket whose posted datagrams pass the
// high-water mark (WithWriteBufferCap), and, as Conn's doc promises, OnDrain
// follows once they are sent: a publisher that waits for OnDrain before it
// posts more is not left waiting for ever.
func TestUDPWritableFalseOwesDrain(t *testing.T) {
	const mark = 8 << 10
	h := &udpDialed{conns: make(chan Conn, 1)}
	_, c := dialUDPPeer(t, h, WithWriteBufferCap(mark))
	pc := c.(PacketConn)
	release := holdLoop(t, c)
	for c.Writable() {
		require.NoError(t, pc.AsyncWriteTo(make([]byte, 1000), nil, nil))
	}
	assert.Greater(t, c.OutboundQueued(), mark)
	release()
	waitFor(t, 10*time.Second, func() bool { return c.OutboundQueued() == 0 },
		func() string { return fmt.Sprintf("%d bytes posted still", c.OutboundQueued()) })
	waitFor(t, 10*time.Second, func() bool { return h.drains.Load() > 0 },
		func() string { return "Writable said false, and no OnDrain came once the datagrams were sent" })
	assert.True(t, c.Writable())
}

// Writable is false only past the mark, as for a stream: at exactly the
// mark no OnDrain is owed.
func TestUDPWritableAtTheMark(t *testing.T) {
	const mark = 8 << 10
	h := &udpDialed{conns: make(chan Conn, 1)}
	_, c := dialUDPPeer(t, h, WithWriteBufferCap(mark))
	release := holdLoop(t, c)
	require.NoError(t, c.AsyncWrite(make([]byte, mark-int(postedTask)), nil))
	assert.Equal(t, mark, c.OutboundQueued())
	assert.True(t, c.Writable(), "at the mark")
	release()
}

// A flood of AsyncWriteTo from many goroutines at a socket whose loop is
// busy holds no more than WithMaxOutbound: past it each poster hears
// ErrOutboundFull at once, and every datagram taken is sent, or its
// callback hears why not (a full send buffer: EAGAIN or ENOBUFS); none is
// kept to send later.
func TestUDPFloodOfPostsIsBounded(t *testing.T) {
	const (
		bound   = 256 << 10
		posters = 8
		each    = 2000
	)
	h := &udpDialed{conns: make(chan Conn, 1)}
	eng, c := dialUDPPeer(t, h, WithMaxOutbound(bound))
	pc := c.(PacketConn)
	require.NoError(t, c.SetWriteBuffer(4096))
	release := holdLoop(t, c)
	var taken, called, refused, sent atomic.Int64
	var other atomic.Value
	cb := func(_ Conn, err error) {
		switch {
		case err == nil:
			sent.Add(1)
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ENOBUFS):
		default:
			other.Store(err)
		}
		called.Add(1)
	}
	var most atomic.Int64
	var wg sync.WaitGroup
	for range posters {
		wg.Go(func() {
			p := make([]byte, 1000)
			for range each {
				switch err := pc.AsyncWriteTo(p, nil, cb); {
				case err == nil:
					taken.Add(1)
				case errors.Is(err, ErrOutboundFull):
					refused.Add(1)
				default:
					other.Store(err)
				}
				if q := int64(c.OutboundQueued()); q > most.Load() {
					most.Store(q) // a sample: posters race, the bound does not
				}
			}
		})
	}
	waitFor(t, 10*time.Second, func() bool { return refused.Load() > 0 },
		func() string { return "no posting refused while the loop was held" })
	release()
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int64(bound), "posted past the bound")
	waitFor(t, 10*time.Second, func() bool { return called.Load() == taken.Load() },
		func() string { return fmt.Sprintf("%d of %d callbacks ran", called.Load(), taken.Load()) })
	assert.Nil(t, other.Load(), "an error other than the bound's or a full buffer's")
	assert.Zero(t, c.OutboundQueued())
	assert.Zero(t, eng.Stats().OutboundHeld)
	assert.Equal(t, uint64(refused.Load()), eng.Stats().OutboundRefused)
	assert.Positive(t, sent.Load())
}
