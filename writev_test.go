//go:build unix

package sluice

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syscount"
)

// manySlices returns n one-byte slices with an empty one after every
// third, all views of want, the bytes they hold in order.
func manySlices(n int) (bs [][]byte, want []byte) {
	want = make([]byte, n)
	for i := range want {
		want[i] = byte(i % 251)
	}
	bs = make([][]byte, 0, n+n/3)
	for i := range n {
		bs = append(bs, want[i:i+1])
		if i%3 == 2 {
			bs = append(bs, want[i:i])
		}
	}
	return bs, want
}

// writevHandler writes, when a connection's peer sends anything, with
// write, which it gives the connection and the one opened before it.
type writevHandler struct {
	BuiltinEventEngine
	write  func(c, prev Conn)
	opened chan Conn
	prev   Conn
	queued atomic.Int64 // the most output write left queued, as OutboundBuffered said
	took   atomic.Int64 // the longest write, in nanoseconds
}

func (h *writevHandler) OnOpen(c Conn) ([]byte, Action) {
	h.opened <- c
	return nil, None
}

func (h *writevHandler) OnTraffic(c Conn) Action {
	c.Discard(-1)
	start := time.Now()
	h.write(c, h.prev)
	storeMax(&h.took, int(time.Since(start)))
	h.prev = c
	return None
}

// readExactly reads n bytes from c, or fails the test.
func readExactly(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	got := make([]byte, n)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	m, err := io.ReadFull(c, got)
	require.NoError(t, err, "read %d of %d bytes", m, n)
	return got
}

// Writev and AsyncWritev of a million one-byte slices, with empty ones
// among them, more than IOV_MAX many times over: every byte arrives, in
// order, written to the connection in its own callback, from another
// goroutine, from another connection's callback, and from Loop.Execute,
// in the clear and over TLS. What it leaves queued is the bytes, and over
// TLS their records: a Writev is one write, sealed as one, wherever it is
// made.
func TestWritevManySlices(t *testing.T) {
	const n = 1_000_000
	bs, want := manySlices(n)
	ways := map[string]func(h *writevHandler) func(c, prev Conn){
		"own": func(h *writevHandler) func(c, prev Conn) {
			return func(c, _ Conn) {
				m, err := c.Writev(bs)
				assert.NoError(t, err)
				assert.Equal(t, n, m)
				storeMax(&h.queued, c.OutboundBuffered())
			}
		},
		"async": func(h *writevHandler) func(c, prev Conn) {
			return func(c, _ Conn) {
				go func() {
					assert.NoError(t, c.AsyncWritev(bs, func(c Conn, err error) { assert.NoError(t, err) }))
				}()
			}
		},
		"other": func(h *writevHandler) func(c, prev Conn) {
			return func(c, prev Conn) {
				if prev == nil {
					return // the first connection is written to by the second
				}
				m, err := prev.Writev(bs)
				assert.NoError(t, err)
				assert.Equal(t, n, m)
				storeMax(&h.queued, prev.OutboundBuffered())
			}
		},
		"execute": func(h *writevHandler) func(c, prev Conn) {
			return func(c, _ Conn) {
				assert.NoError(t, c.Loop().Execute(func() {
					m, err := c.Writev(bs)
					assert.NoError(t, err)
					assert.Equal(t, n, m)
					storeMax(&h.queued, c.OutboundBuffered())
				}))
			}
		},
	}
	for _, secure := range []bool{false, true} {
		for _, way := range []string{"own", "async", "other", "execute"} {
			name := way
			if secure {
				name += "/TLS"
			}
			t.Run(name, func(t *testing.T) {
				syscount.Enabled = true // before the engine starts
				t.Cleanup(func() { syscount.Enabled = false })
				h := &writevHandler{opened: make(chan Conn, 2)}
				h.write = ways[way](h)
				opts := []Option{WithNumEventLoop(1)}
				if secure {
					opts = append(opts, WithTLS(serverTLS(t)))
				}
				_, addr := serve(t, h, opts...)
				dialer := func() net.Conn {
					if secure {
						return dialTLS(t, addr, clientTLS(t, tls.VersionTLS13))
					}
					return dial(t, addr)
				}
				reader := dialer()
				<-h.opened
				trigger := reader
				if way == "other" {
					// The reader's peer writes to it from the second
					// connection's callback.
					_, err := reader.Write([]byte("first"))
					require.NoError(t, err)
					writer := dialer()
					<-h.opened
					waitFor(t, 10*time.Second, func() bool { return h.took.Load() > 0 }, func() string { return "the first connection was not served" })
					trigger = writer // the first connection's writer
				}
				calls := syscount.Load()
				_, err := trigger.Write([]byte("go"))
				require.NoError(t, err)
				got := readExactly(t, reader, n)
				calls = syscount.Load() - calls
				if i := firstDiff(got, want); i >= 0 {
					t.Fatalf("byte %d differs: got %d, want %d", i, got[i], want[i])
				}
				if secure && h.queued.Load() > 0 {
					// Sealed as one write: records of 1 KiB to 16 KiB,
					// each 22 to 29 bytes more.
					assert.LessOrEqual(t, h.queued.Load(), int64(n+n/32), "output queued for %d bytes", n)
				} else {
					assert.LessOrEqual(t, h.queued.Load(), int64(n), "output queued for %d bytes", n)
				}
				// Sent as the socket takes it, not a system call a slice.
				assert.LessOrEqual(t, calls, uint64(n/1024), "system calls to send %d bytes", n)
				t.Logf("left queued: %d bytes; %d system calls; the longest write held the loop %v", h.queued.Load(), calls, time.Duration(h.took.Load()))
			})
		}
	}
}

// A Writev or AsyncWritev past WithMaxOutbound is refused whole: nothing
// of it is queued, so nothing of it arrives, and its callback never runs;
// empty slices count nothing, and many of them change nothing.
func TestWritevRefusedWhole(t *testing.T) {
	const bound = 4096
	bs, _ := manySlices(bound + 1)
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			refused := make(chan error, 1)
			ran := make(chan error, 1)
			h := &writevHandler{opened: make(chan Conn, 1)}
			h.write = func(c, _ Conn) {
				if async {
					err := c.AsyncWritev(bs, func(c Conn, err error) { ran <- err })
					assert.Zero(t, c.OutboundQueued(), "queued by a refused AsyncWritev")
					refused <- err
				} else {
					_, err := c.Writev(bs)
					assert.Zero(t, c.OutboundBuffered(), "queued by a refused Writev")
					refused <- err
				}
				c.Write([]byte("end"))
			}
			_, addr := serve(t, h, WithNumEventLoop(1), WithMaxOutbound(bound))
			client := dial(t, addr)
			_, err := client.Write([]byte("go"))
			require.NoError(t, err)
			require.ErrorIs(t, <-refused, ErrOutboundFull)
			assert.Equal(t, "end", string(readExactly(t, client, 3)), "nothing of the refused write arrives")
			assert.True(t, holdsFor(50*time.Millisecond, func() bool { return len(ran) == 0 }), "the refused write's callback ran")
		})
	}
}

// An AsyncWritev holds its slices until its loop runs it, so they count
// against WithMaxOutbound too, a slice header each: a goroutine posting
// many empty slices faster than the loop runs them is refused as one
// posting many empty AsyncWrites is.
func TestAsyncWritevCountsItsSlices(t *testing.T) {
	const bound = 8 << 20
	h := &writevHandler{opened: make(chan Conn, 1), write: func(c, prev Conn) {}}
	_, addr := serve(t, h, WithNumEventLoop(1), WithMaxOutbound(bound))
	dial(t, addr)
	sc := <-h.opened
	release := holdLoop(t, sc)

	empty := make([][]byte, 100_000)
	var ran atomic.Int64
	posted := 0
	for range 100 {
		if sc.AsyncWritev(empty, func(Conn, error) { ran.Add(1) }) != nil {
			break
		}
		posted++
	}
	t.Logf("AsyncWritev of %d empty slices, against a bound of %d: %d posted, OutboundQueued %d",
		len(empty), bound, posted, sc.OutboundQueued())
	per := len(empty)*int(postedSlice) + int(postedTask)
	assert.Equal(t, bound/per, posted, "postings taken")
	assert.Equal(t, posted*per, sc.OutboundQueued(), "OutboundQueued")

	release()
	waitFor(t, 10*time.Second, func() bool { return ran.Load() == int64(posted) }, func() string {
		return fmt.Sprintf("%d of %d callbacks ran", ran.Load(), posted)
	})
	waitFor(t, 10*time.Second, func() bool { return sc.OutboundQueued() == 0 }, func() string {
		return fmt.Sprintf("OutboundQueued %d once every write ran", sc.OutboundQueued())
	})
}

// echoOpener echoes, and hands the test each connection as it opens.
type echoOpener struct {
	echoHandler
	opened chan Conn
}

func (h *echoOpener) OnOpen(c Conn) ([]byte, Action) {
	h.opened <- c
	return nil, None
}

// A goroutine posting AsyncWritevs of a million one-byte slices to one
// connection as fast as the bound lets it does not starve another
// connection of the same loop: the loop runs what was posted before its
// turn began and serves the rest between. Every byte of each write
// arrives, in order.
func TestManySliceWritesLeaveOthersServed(t *testing.T) {
	const n = 1_000_000
	bs, want := manySlices(n)
	h := &echoOpener{opened: make(chan Conn, 2)}
	_, addr := serve(t, h, WithNumEventLoop(1))
	bulk := dial(t, addr)
	bc := <-h.opened
	echo := dial(t, addr)
	<-h.opened

	stop := make(chan struct{})
	posterDone := make(chan struct{})
	var writes atomic.Int64
	go func() {
		defer close(posterDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if bc.AsyncWritev(bs, nil) == nil {
				writes.Add(1)
			} else {
				time.Sleep(time.Millisecond) // full: the peer reads it first
			}
		}
	}()
	var read atomic.Int64
	differs := make(chan string, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		got := make([]byte, n)
		for {
			if _, err := io.ReadFull(bulk, got); err != nil {
				return
			}
			if i := firstDiff(got, want); i >= 0 {
				differs <- fmt.Sprintf("byte %d of write %d differs: got %d, want %d", i, read.Load(), got[i], want[i])
				return
			}
			read.Add(1)
		}
	}()

	var slowest time.Duration
	msg := []byte("ping")
	for range 200 {
		start := time.Now()
		echo.SetDeadline(start.Add(10 * time.Second))
		require.NoError(t, echoOnce(echo, msg), "the other connection is served")
		slowest = max(slowest, time.Since(start))
	}
	close(stop)
	<-posterDone
	waitFor(t, 30*time.Second, func() bool { return read.Load() == writes.Load() || len(differs) > 0 }, func() string {
		return fmt.Sprintf("%d of %d writes arrived", read.Load(), writes.Load())
	})
	t.Logf("200 echoes beside %d AsyncWritevs of %d slices: the slowest took %v", writes.Load(), len(bs), slowest)
	assert.Empty(t, differs)
	assert.Positive(t, writes.Load())
	bulk.Close()
	<-readerDone
}
