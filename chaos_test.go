//go:build unix

package sluice

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chaosHandler echoes, except that a 0xFF byte asks it to answer with a
// farewell and close. It checks that every connection it opened closes
// exactly once.
type chaosHandler struct {
	BuiltinEventEngine
	farewell []byte
	live     sync.Map // ID -> struct{}
	opened   atomic.Int64
	closed   atomic.Int64
	twice    atomic.Int64 // OnClose for a connection not open
	why      sync.Map     // errName -> *atomic.Int64
}

func (h *chaosHandler) OnOpen(c Conn) ([]byte, Action) {
	h.live.Store(c.ID(), struct{}{})
	h.opened.Add(1)
	return nil, None
}

func (h *chaosHandler) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	if i := bytes.IndexByte(b, 0xFF); i >= 0 {
		c.Write(b[:i])
		c.Write(h.farewell)
		return Close
	}
	c.Write(b)
	return None
}

func (h *chaosHandler) OnClose(c Conn, err error) Action {
	if _, ok := h.live.LoadAndDelete(c.ID()); !ok {
		h.twice.Add(1)
	}
	n, _ := h.why.LoadOrStore(errName(err), new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	h.closed.Add(1)
	return None
}

// chaosPeer is one kind of client. It returns an error when what it
// received is not what the server owes it.
type chaosPeer func(c *net.TCPConn, r *rand.Rand, farewell []byte) error

// message returns n random bytes without 0xFF, which the server treats as
// a request to close.
func message(r *rand.Rand, n int) []byte {
	b := make([]byte, n+7)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	b = b[:n]
	for i := bytes.IndexByte(b, 0xFF); i >= 0; i = bytes.IndexByte(b, 0xFF) {
		b[i] = 0xFE
	}
	return b
}

var chaosPeers = map[string]chaosPeer{
	// Echoes a few messages and closes.
	"echo": func(c *net.TCPConn, r *rand.Rand, _ []byte) error {
		for range 1 + r.IntN(4) {
			if err := echoOnce(c, message(r, 1+r.IntN(32<<10))); err != nil {
				return err
			}
		}
		return nil
	},
	// Sends fast and reads slowly.
	"slow reader": func(c *net.TCPConn, r *rand.Rand, _ []byte) error {
		msg := message(r, 256<<10)
		go c.Write(msg)
		got := make([]byte, len(msg))
		for n := 0; n < len(got); {
			m, err := c.Read(got[n:min(n+8<<10, len(got))])
			if err != nil {
				return fmt.Errorf("after %d of %d bytes: %w", n, len(got), err)
			}
			n += m
			time.Sleep(200 * time.Microsecond)
		}
		if !bytes.Equal(got, msg) {
			return fmt.Errorf("slow echo differs at byte %d", firstDiff(got, msg))
		}
		return nil
	},
	// Sends, shuts down its write side, and reads the whole echo.
	"half-closer": func(c *net.TCPConn, r *rand.Rand, _ []byte) error {
		msg := message(r, 1+r.IntN(512<<10))
		go func() {
			c.Write(msg)
			c.CloseWrite()
		}()
		got, err := io.ReadAll(c)
		if err != nil {
			return fmt.Errorf("after %d of %d bytes: %w", len(got), len(msg), err)
		}
		if !bytes.Equal(got, msg) {
			return fmt.Errorf("half-closed echo: %d bytes for %d", len(got), len(msg))
		}
		return nil
	},
	// Asks the server to close, keeps sending, and must still get the
	// whole farewell.
	"sends while closed": func(c *net.TCPConn, r *rand.Rand, farewell []byte) error {
		msg := message(r, 1+r.IntN(4<<10))
		if _, err := c.Write(append(msg[:len(msg):len(msg)], 0xFF)); err != nil {
			return err
		}
		go c.Write(message(r, 32<<10))
		got, err := io.ReadAll(c)
		want := append(msg, farewell...)
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("farewell: %d bytes of %d, then %v", len(got), len(want), err)
		}
		return nil
	},
	// Sends and resets.
	"resetter": func(c *net.TCPConn, r *rand.Rand, _ []byte) error {
		c.Write(message(r, r.IntN(64<<10)))
		c.SetLinger(0)
		return nil
	},
	// Connects and says nothing until the idle timeout closes it.
	"idler": func(c *net.TCPConn, _ *rand.Rand, _ []byte) error {
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			return fmt.Errorf("idle connection: read %d, %v; want the end of the stream", n, err)
		}
		return nil
	},
	// Sends and never reads, until the write timeout closes it and a
	// write fails.
	"never reads": func(c *net.TCPConn, r *rand.Rand, _ []byte) error {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		msg := message(r, 256<<10)
		for {
			if _, err := c.Write(msg); err != nil {
				if os.IsTimeout(err) {
					return fmt.Errorf("not closed by the write timeout: %v", err)
				}
				return nil
			}
		}
	},
}

// rss returns the process's resident memory.
func rss(t testing.TB) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestChaos runs a few thousand clients of every kind above against one
// engine, a few hundred at a time, on each poller: every client gets what
// it is owed, every OnOpen has exactly one OnClose, memory stays bounded,
// and no descriptor is left open (serve checks that as it stops).
func TestChaos(t *testing.T) {
	clients, concurrent := 2000, 200
	if raceEnabled {
		// The race detector slows every goroutine several times over.
		clients, concurrent = 600, 60
	}
	// Idlers and peers that never read hold their place for a timeout
	// each: fewer of them.
	kinds := []string{"echo", "echo", "echo", "slow reader", "slow reader", "half-closer", "half-closer",
		"sends while closed", "sends while closed", "resetter", "resetter", "idler", "never reads"}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &chaosHandler{farewell: bytes.Repeat([]byte("bye"), 20<<10)}
		// Socket buffers the size of the backpressure mark, so that a
		// peer that does not read stalls the server's output soon.
		eng, addr := serve(t, h, p, WithNumEventLoop(2), WithBackpressureMark(64<<10),
			WithIdleTimeout(3*time.Second), WithWriteTimeout(2*time.Second),
			WithLingeringClose(2*time.Second, 1<<20),
			WithSocketSendBuffer(64<<10), WithSocketRecvBuffer(64<<10))
		base := rss(t)
		var peak, peakHeap atomic.Uint64
		var failures sync.Map
		sem := make(chan struct{}, concurrent)
		var wg sync.WaitGroup
		deadline := time.Now().Add(20 * time.Second)
		for i := range clients {
			if time.Now().After(deadline) {
				t.Errorf("ran out of time after %d clients", i)
				break
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				r := rand.New(rand.NewPCG(uint64(i), 99))
				kind := kinds[r.IntN(len(kinds))]
				// Small receive buffers, so that reading slowly holds the
				// server's output back.
				c, err := dialReadBuffer(addr, 16<<10)
				if err != nil {
					failures.Store(i, kind+": "+err.Error())
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(15 * time.Second))
				if err := chaosPeers[kind](c, r, h.farewell); err != nil {
					failures.Store(i, kind+": "+err.Error())
				}
				if i%50 == 0 {
					peak.Store(max(peak.Load(), rss(t)))
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					peakHeap.Store(max(peakHeap.Load(), ms.HeapInuse))
				}
			})
		}
		wg.Wait()
		failures.Range(func(i, f any) bool {
			t.Errorf("client %d: %s", i, f)
			return true
		})
		waitFor(t, 10*time.Second, func() bool { return eng.CountConnections() == 0 && h.closed.Load() == h.opened.Load() },
			func() string { return fmt.Sprintf("%d opened, %d closed", h.opened.Load(), h.closed.Load()) })
		assert.Zero(t, h.twice.Load(), "OnClose for a connection not open")
		h.why.Range(func(k, v any) bool {
			t.Logf("OnClose %s: %d", k, v.(*atomic.Int64).Load())
			return true
		})
		grew := int64(peak.Load()) - int64(base)
		t.Logf("%d connections; resident memory grew by %d MiB at most; heap in use %d MiB at most", h.opened.Load(), grew>>20, peakHeap.Load()>>20)
		// Clients and server share the process: 200 clients of up to
		// half a megabyte each, and the engine's bounded share. The race
		// detector's shadow memory makes the figure meaningless; CI runs
		// this test without it too.
		if !raceEnabled {
			require.Less(t, grew, int64(384<<20), "resident memory grew without bound")
		}
		return outcome{}
	})
}
