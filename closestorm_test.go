//go:build unix

package sluice

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeTally counts OnClose per connection and keeps the first error
// each got.
type closeTally struct {
	BuiltinEventEngine
	opened chan Conn
	mu     sync.Mutex
	closes map[uint64]int
	errs   map[uint64]error
}

func newCloseCounter(n int) *closeTally {
	return &closeTally{opened: make(chan Conn, n), closes: map[uint64]int{}, errs: map[uint64]error{}}
}

func (h *closeTally) OnOpen(c Conn) ([]byte, Action) {
	h.opened <- c
	return nil, None
}

func (h *closeTally) OnClose(c Conn, err error) Action {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closes[c.ID()] == 0 {
		h.errs[c.ID()] = err
	}
	h.closes[c.ID()]++
	return None
}

func (h *closeTally) count(id uint64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closes[id], h.errs[id]
}

// holdLoop runs a function on c's loop that waits until the returned
// function is called: what is posted to the loop meanwhile stays queued.
func holdLoop(t *testing.T, c Conn) (release func()) {
	t.Helper()
	started, done := make(chan struct{}), make(chan struct{})
	require.NoError(t, c.Loop().Execute(func() {
		close(started)
		<-done
	}))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not run the function")
	}
	var once sync.Once
	release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(release)
	return release
}

// A goroutine that calls Close in a loop, as code that closes on every
// error it sees does, must not grow the loop's queue with a task per call
// while the loop is busy: the first Close asks for the close, and the rest
// have nothing to add.
func TestCloseStormQueuesOneTask(t *testing.T) {
	h := newCloseCounter(1)
	_, addr := serve(t, h, WithNumEventLoop(1))
	client := dial(t, addr)
	sc := <-h.opened
	release := holdLoop(t, sc)

	var before, after runtimeMem
	before.read()
	const goroutines, each = 4, 50_000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				assert.NoError(t, sc.Close())
			}
		})
	}
	wg.Wait()
	after.read()
	queued := sc.(*conn).loop.tasks.n.Load()
	t.Logf("%d Close calls with the loop busy: %d tasks queued, heap grew %d KiB",
		goroutines*each, queued, (int64(after.heap)-int64(before.heap))>>10)
	assert.LessOrEqual(t, queued, int32(1), "tasks queued by %d Close calls", goroutines*each)

	release()
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadAll(client)
	require.NoError(t, err, "the close is graceful: the client reads the end of the stream")
	client.Close()
	id := sc.ID()
	waitFor(t, 10*time.Second, func() bool { n, _ := h.count(id); return n > 0 }, func() string { return "OnClose did not run" })
	require.NoError(t, sc.Close(), "Close of a closed connection")
	assert.True(t, holdsFor(50*time.Millisecond, func() bool { n, _ := h.count(id); return n == 1 }), "OnClose ran more than once")
	_, cerr := h.count(id)
	assert.NoError(t, cerr, "a Close gives OnClose no error")
}

// runtimeMem is the heap in use, read after a collection.
type runtimeMem struct{ heap uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&s)
	m.heap = s.HeapInuse
}

// Thousands of connections, each closed by its own goroutine over and over
// while that goroutine also writes to it and wakes it, and every other one
// killed over and over too: each connection's OnClose runs once, with no
// error, or ErrKilled where it was killed, every callback runs once, with
// nil or ErrConnClosed, nothing panics, and each Kill after the first
// finds the connection gone.
func TestCloseStormManyConnections(t *testing.T) {
	const conns, rounds = 1000, 50
	h := newCloseCounter(conns)
	eng, addr := serve(t, h, WithNumEventLoop(2), WithLogger(discardLogger()))
	var clients sync.WaitGroup
	for range conns {
		client := dial(t, addr)
		clients.Go(func() {
			// Read to the end of the stream, then close: the server's
			// graceful close waits for it.
			client.SetReadDeadline(time.Now().Add(30 * time.Second))
			io.Copy(io.Discard, client) // a killed one is reset
			client.Close()
		})
	}
	scs := make([]Conn, conns)
	for i := range scs {
		select {
		case scs[i] = <-h.opened:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d connections opened", i, conns)
		}
	}

	var calls, bad atomic.Int64
	cb := func(c Conn, err error) {
		calls.Add(1)
		if err != nil && err != ErrConnClosed {
			bad.Add(1)
		}
	}
	var posted, kills atomic.Int64
	var maxQueued atomic.Int32
	var wg sync.WaitGroup
	for i, sc := range scs {
		killer := i%2 == 1
		wg.Go(func() {
			for range rounds {
				if killer {
					if err := eng.Kill(sc.ID()); err == nil {
						kills.Add(1)
					} else {
						assert.ErrorIs(t, err, ErrConnClosed)
					}
				}
				assert.NoError(t, sc.Close())
				if sc.AsyncWrite([]byte("x"), cb) == nil {
					posted.Add(1)
				}
				if sc.Wake(cb) == nil {
					posted.Add(1)
				}
				for _, l := range sc.(*conn).loop.eng.loops {
					storeMax32(&maxQueued, l.tasks.n.Load())
				}
			}
		})
	}
	wg.Wait()
	clients.Wait()
	for _, sc := range scs {
		id := sc.ID()
		waitFor(t, 10*time.Second, func() bool { n, _ := h.count(id); return n > 0 }, func() string {
			return fmt.Sprintf("connection %#x: OnClose did not run", id)
		})
	}
	waitFor(t, 10*time.Second, func() bool { return calls.Load() == posted.Load() }, func() string {
		return fmt.Sprintf("%d of %d callbacks ran", calls.Load(), posted.Load())
	})
	for i, sc := range scs {
		n, err := h.count(sc.ID())
		assert.Equal(t, 1, n, "OnClose runs once per connection")
		if i%2 == 1 && err != nil {
			assert.ErrorIs(t, err, ErrKilled, "a Kill, before or after a Close, resets")
		} else {
			assert.NoError(t, err, "a Close gives OnClose no error")
		}
	}
	assert.LessOrEqual(t, kills.Load(), int64(conns/2), "Kills that found the connection")
	assert.Zero(t, bad.Load(), "callbacks that got an error other than ErrConnClosed")
	t.Logf("most tasks queued on a loop: %d (posted writes and wakes: %d)", maxQueued.Load(), posted.Load())
}

func storeMax32(m *atomic.Int32, n int32) {
	for {
		old := m.Load()
		if n <= old || m.CompareAndSwap(old, n) {
			return
		}
	}
}
