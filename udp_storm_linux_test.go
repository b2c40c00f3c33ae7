package sluice

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// udpCapture hands the test the Conn of each UDP socket: the listener's on
// its first datagram, a dialed one as it opens.
type udpCapture struct {
	BuiltinEventEngine
	socket, dialed chan Conn
	closed         chan error
	once           sync.Once
}

func (h *udpCapture) OnOpen(c Conn) ([]byte, Action) {
	if c.Origin() == Dialed {
		h.dialed <- c
	}
	return nil, None
}

func (h *udpCapture) OnTraffic(c Conn) Action {
	c.Discard(-1)
	if c.Origin() == Accepted {
		h.once.Do(func() { h.socket <- c })
	}
	return None
}

func (h *udpCapture) OnClose(c Conn, err error) Action {
	h.closed <- err
	return None
}

// Wake on a UDP socket counts its task against WithMaxOutbound as on a
// stream, and Close of a connected UDP socket asks the loop once: a
// goroutine doing either in a loop while the loop is busy leaves a
// bounded queue.
func TestUDPWakeAndCloseStormsAreBounded(t *testing.T) {
	const bound = 64 << 10
	h := &udpCapture{socket: make(chan Conn, 1), dialed: make(chan Conn, 1), closed: make(chan error, 4)}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithMaxOutbound(bound))
	peer := udpDial(t, addr)
	_, err := peer.Write([]byte("hi"))
	require.NoError(t, err)
	var sock Conn
	select {
	case sock = <-h.socket:
	case <-time.After(10 * time.Second):
		t.Fatal("no datagram reached the handler")
	}
	require.NoError(t, eng.Dial(addr, nil))
	var dialed Conn
	select {
	case dialed = <-h.dialed:
	case <-time.After(10 * time.Second):
		t.Fatal("the dialed UDP socket did not open")
	}

	release := holdLoop(t, sock)
	const calls = 100_000
	var wakes, woken atomic.Int64
	for range calls {
		if sock.Wake(func(Conn, error) { woken.Add(1) }) == nil {
			wakes.Add(1)
		}
		assert.NoError(t, dialed.Close())
	}
	queued := sock.(*udpConn).loop.tasks.n.Load()
	t.Logf("%d Wake and Close calls with the loop busy: %d Wakes taken, %d tasks queued", calls, wakes.Load(), queued)
	assert.LessOrEqual(t, int64(queued), bound/postedTask+1, "tasks queued")
	assert.Equal(t, int64(queued), wakes.Load()+1, "a task for each Wake taken and one for the Close")
	assert.Zero(t, sock.OutboundQueued()-int(wakes.Load()*postedTask), "OutboundQueued counts the Wakes")

	release()
	require.NoError(t, <-h.closed, "the dialed socket closes, with no error")
	waitFor(t, 10*time.Second, func() bool { return woken.Load() == wakes.Load() }, func() string {
		return fmt.Sprintf("%d of %d Wake callbacks ran", woken.Load(), wakes.Load())
	})
	assert.Zero(t, sock.OutboundQueued(), "every Wake run gives its count back")
	assert.True(t, holdsFor(50*time.Millisecond, func() bool { return len(h.closed) == 0 }), "OnClose ran again")
}
