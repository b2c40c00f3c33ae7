//go:build linux

package sluice

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
)

// udpSessionMob hands each session out to be closed by a mob of
// goroutines, and tries, from OnClose, everything a closed session may be
// asked: Write, AsyncWrite, SetIdleTimeout, Close.
type udpSessionMob struct {
	BuiltinEventEngine
	opened   chan Conn
	opens    atomic.Int64
	closes   atomic.Int64
	mu       sync.Mutex
	closed   map[Conn]int // OnClose's runs per session
	lateErrs chan error   // what OnClose's Write and AsyncWrite returned
	lateCB   atomic.Int64
}

func (h *udpSessionMob) OnOpen(c Conn) ([]byte, Action) {
	h.opens.Add(1)
	h.opened <- c
	return nil, None
}

func (h *udpSessionMob) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	c.Write(b)
	if string(b) == "bye" {
		return Close
	}
	return None
}

func (h *udpSessionMob) OnClose(c Conn, err error) Action {
	h.closes.Add(1)
	h.mu.Lock()
	h.closed[c]++
	h.mu.Unlock()
	_, werr := c.Write([]byte("from OnClose"))
	h.lateErrs <- werr
	aerr := c.AsyncWrite([]byte("posted from OnClose"), func(_ Conn, err error) {
		h.lateCB.Add(1)
		h.lateErrs <- err
	})
	if aerr != nil {
		h.lateErrs <- aerr
	}
	c.SetIdleTimeout(time.Millisecond) // must arm nothing for a closed session
	c.Close()
	return None
}

// TestUDPSessionClosedByAMob closes one session from many goroutines at
// once, each also posting a datagram with a callback, while its peer says
// "bye" (the Close action; or, arriving after the mob closed it, it opens
// a session that this closes): OnClose runs once for each session; every
// callback runs once, with nil or ErrConnClosed, or its AsyncWrite fails and it never runs;
// what OnClose asks of the closed session fails with ErrConnClosed and
// closes nothing twice; and the peer's next datagram opens a new session,
// which answers.
func TestUDPSessionClosedByAMob(t *testing.T) {
	h := &udpSessionMob{opened: make(chan Conn, 16), lateErrs: make(chan error, 64), closed: map[Conn]int{}}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithDatagramSessions(time.Minute, 16))
	peer := udpDial(t, addr)
	assert.Equal(t, "hi", string(udptest.RoundTrip(t, peer, []byte("hi"))))
	s := <-h.opened

	const mob = 16
	var posted, called atomic.Int64
	var wg sync.WaitGroup
	for range mob {
		wg.Go(func() {
			err := s.AsyncWrite([]byte("mob"), func(_ Conn, err error) {
				if err != nil && !errors.Is(err, ErrConnClosed) {
					t.Errorf("a posted datagram's callback: %v", err)
				}
				called.Add(1)
			})
			if err == nil {
				posted.Add(1)
			}
			s.Close()
		})
	}
	_, err := peer.Write([]byte("bye"))
	require.NoError(t, err)
	wg.Wait()
	once := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, n := range h.closed {
			if n != 1 {
				return false
			}
		}
		return h.closed[s] == 1 && int64(len(h.closed)) == h.opens.Load()
	}
	waitFor(t, 10*time.Second, func() bool { return once() && called.Load() == posted.Load() }, func() string {
		return fmt.Sprintf("%d OnClose for %d sessions, %d of %d callbacks", h.closes.Load(), h.opens.Load(), called.Load(), posted.Load())
	})
	waitFor(t, 10*time.Second, func() bool { return h.lateCB.Load() > 0 || len(h.lateErrs) >= 2 }, func() string {
		return "OnClose's AsyncWrite neither failed nor called back"
	})
	assert.True(t, holdsFor(100*time.Millisecond, func() bool {
		return once() && called.Load() == posted.Load() && h.lateCB.Load() <= h.closes.Load()
	}), "OnClose ran %d times for %d sessions; %d callbacks of %d posted", h.closes.Load(), h.opens.Load(), called.Load(), posted.Load())
	for range 2 {
		assert.ErrorIs(t, <-h.lateErrs, ErrConnClosed, "a closed session written to from its OnClose")
	}

	// The peer has the answer to "bye", and the mob's datagrams, to read
	// before the new session's answer.
	_, err = peer.Write([]byte("again"))
	require.NoError(t, err)
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	for {
		n, err := peer.Read(buf)
		require.NoError(t, err, "no answer from a new session for the peer")
		if string(buf[:n]) == "again" {
			break
		}
	}
	assert.Equal(t, h.closes.Load()+1, h.opens.Load(), "the new session stays open")
}
