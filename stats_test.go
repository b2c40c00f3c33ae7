//go:build unix

package sluice

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byWhy closes a connection as its client asks: "quit" closes it from
// the handler, "panic" panics in OnTraffic; anything else is echoed.
type byWhy struct{ echoHandler }

func (byWhy) OnTraffic(c Conn) Action {
	b, _ := c.Peek(-1)
	switch string(b) {
	case "quit":
		c.Discard(-1)
		return Close
	case "panic":
		panic("asked to")
	}
	return echoHandler{}.OnTraffic(c)
}

// Every connection the handler saw close is counted once, by what closed
// it: its peer's end of stream, the handler, a failed read (a reset by the
// peer), a panic in a callback, or the engine's stop, gracefully or with
// its time run out. The bytes each way count every byte read and written.
func TestStatsCountClosesByWhy(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &booter{EventHandler: byWhy{}, booted: make(chan Engine, 1)}
		done := make(chan error, 1)
		go func() {
			done <- Run(h, "tcp://127.0.0.1:0", p, WithNumEventLoop(2), WithLogger(discardLogger()), WithBackpressureMark(64<<10),
				WithLingeringClose(10*time.Second, 64<<20)) // the stop waits on the non-reader until its time runs out
		}()
		eng := <-h.booted
		addr := addrName(eng.Addrs()[0])
		sent := 0
		closed := func(want Stats) {
			t.Helper()
			waitFor(t, 10*time.Second, func() bool {
				s := eng.Stats()
				return s.ClosedByPeer == want.ClosedByPeer && s.ClosedByHandler == want.ClosedByHandler &&
					s.ClosedByError == want.ClosedByError && s.HandlerPanics == want.HandlerPanics
			}, func() string { return fmt.Sprintf("%+v", eng.Stats()) })
		}

		c := dial(t, addr)
		require.NoError(t, echoOnce(c, []byte("hello")))
		sent += 5
		c.Close()
		closed(Stats{ClosedByPeer: 1})

		c = dial(t, addr)
		_, err := c.Write([]byte("quit"))
		require.NoError(t, err)
		sent += 4
		_, err = io.ReadAll(c)
		require.NoError(t, err)
		c.Close()
		closed(Stats{ClosedByPeer: 1, ClosedByHandler: 1})

		c = dial(t, addr)
		require.NoError(t, echoOnce(c, []byte("reset")))
		sent += 5
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		c.Close()
		closed(Stats{ClosedByPeer: 1, ClosedByHandler: 1, ClosedByError: 1})

		c = dial(t, addr)
		_, err = c.Write([]byte("panic"))
		require.NoError(t, err)
		sent += 5
		io.ReadAll(c)
		c.Close()
		closed(Stats{ClosedByPeer: 1, ClosedByHandler: 1, ClosedByError: 1, HandlerPanics: 1})

		// Open at the stop: one idle, closed gracefully; one whose
		// peer reads nothing of what it is sent, reset when the stop's
		// time runs out.
		idle := dial(t, addr)
		require.NoError(t, echoOnce(idle, []byte("idle")))
		sent += 4
		stuck := dialSmallWindow(t, addr)
		big := bytes.Repeat([]byte{'x'}, 8<<20)
		go stuck.Write(big) // echoed into a window that never opens
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().BackpressurePauses > 0 },
			func() string { return fmt.Sprintf("the non-reader was not paused: %+v", eng.Stats()) })
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, eng.Stop(ctx), context.DeadlineExceeded, "%+v", eng.Stats())
		require.NoError(t, <-done)
		s := eng.Stats()
		assert.EqualValues(t, 2, s.ClosedByStop, "the idle one and the reset one")
		assert.EqualValues(t, 6, s.Accepted)
		assert.EqualValues(t, s.Accepted, s.ClosedByPeer+s.ClosedByHandler+s.ClosedByStop+s.ClosedByError+s.HandlerPanics,
			"every connection is counted once")
		assert.GreaterOrEqual(t, s.BytesIn, uint64(sent), "what the clients sent")
		assert.LessOrEqual(t, s.BytesIn, uint64(sent+len(big)))
		assert.Positive(t, s.BytesOut)
		stuck.Close()
		idle.Close()
		return outcome{Stats: comparable(s)}
	})
}

// dialSmallWindow connects to addr with a small receive buffer that it
// never reads, so that what the server sends it piles up in the server.
func dialSmallWindow(t testing.TB, addr string) net.Conn {
	t.Helper()
	c := dial(t, addr)
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4<<10))
	return c
}

// The bytes each way are counted as they cross the sockets, PROXY header
// and all: an echo reads and writes as many bytes as it is sent, and over
// TLS its records, more than the plaintext.
func TestStatsCountBytes(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serve(t, echoHandler{}, p, WithNumEventLoop(1), WithProxyProtocol(ProxyOptional, 0))
		header := []byte("PROXY TCP4 192.0.2.7 198.51.100.1 40000 443\r\n")
		msg := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
		c := dial(t, addr)
		require.NoError(t, echoAfter(c, header, msg))
		c.Close()
		s := closedStats(t, eng)
		assert.EqualValues(t, len(header)+len(msg), eng.Stats().BytesIn)
		assert.EqualValues(t, len(msg), eng.Stats().BytesOut)
		return outcome{Stats: s}
	})
	t.Run("TLS", func(t *testing.T) {
		eng, addr := serve(t, echoHandler{}, WithNumEventLoop(1), WithTLS(serverTLS(t)))
		msg := bytes.Repeat([]byte("x"), 64<<10)
		c := dialTLS(t, addr, clientTLS(t, 0))
		require.NoError(t, echoOnce(c, msg))
		c.Close()
		closedStats(t, eng)
		s := eng.Stats()
		assert.Greater(t, s.BytesIn, uint64(len(msg)), "records and the handshake")
		assert.Greater(t, s.BytesOut, uint64(len(msg)))
	})
}

// loopOf records the loop each connection opened on.
type loopOf struct {
	echoHandler
	mu    sync.Mutex
	loops map[int]int // connections opened on each loop, by Loop.Index
}

func (h *loopOf) OnOpen(c Conn) ([]byte, Action) {
	h.mu.Lock()
	h.loops[c.Loop().Index()]++
	h.mu.Unlock()
	return nil, None
}

// LoopConns tells how many connections each loop holds, its share of
// Conns.
func TestStatsLoopConns(t *testing.T) {
	h := &loopOf{loops: map[int]int{}}
	eng, addr := serve(t, h, WithNumEventLoop(3))
	for range 7 {
		c := dial(t, addr)
		require.NoError(t, echoOnce(c, []byte("hello")))
	}
	s := eng.Stats()
	require.Len(t, s.LoopConns, 3)
	h.mu.Lock()
	for i, n := range s.LoopConns {
		assert.Equal(t, h.loops[i], n, "loop %d", i)
	}
	h.mu.Unlock()
	assert.Equal(t, 7, s.Conns)
	assert.Equal(t, 7, s.LoopConns[0]+s.LoopConns[1]+s.LoopConns[2])
}
