//go:build unix

package sluice

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/poller"
)

// The bounds on what a connection may hold queued for its peer
// (WithMaxOutbound, WithOutboundSoftLimit, WithBackpressureMark,
// WithWriteTimeout), tried against peers that read slowly, never, or only
// once they have written everything. Each test runs on the poller of the
// pass: epoll, io_uring (SLUICE_TEST_POLLER=uring) and the development
// backend (-tags sluice_std).

// pushed is one message of a publisher's stream: its number, then a body
// that every message shares.
func pushed(seq uint64) []byte {
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], seq)
	return hdr[:]
}

// readPushes reads n messages of size bytes from c and reports the first
// one out of order, or the error that ended the stream early.
func readPushes(c net.Conn, n, size int, body []byte) error {
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	msg := make([]byte, size)
	for i := range n {
		if _, err := io.ReadFull(c, msg); err != nil {
			return fmt.Errorf("after %d messages: %w", i, err)
		}
		if seq := binary.BigEndian.Uint64(msg); seq != uint64(i) || !bytes.Equal(msg[8:], body) {
			return fmt.Errorf("message %d came as %d", i, seq)
		}
	}
	return nil
}

// publish pushes n numbered messages, each the number then body, to every
// one of subs with AsyncWritev, as a pub/sub server fans a message out. A
// push refused with ErrOutboundFull waits for its subscriber to drain to
// room, or to close, and is tried again, so that a subscriber that reads
// loses nothing; the soft limit cuts one that never reads, after which
// what is posted to it is dropped on its loop. It returns how many pushes
// were refused.
func publish(t *testing.T, h *lifetimes, subs []Conn, n int, body []byte, room int) int {
	refused := 0
	for i := range n {
		for _, c := range subs {
			for {
				err := c.AsyncWritev([][]byte{pushed(uint64(i)), body}, nil)
				if err == nil {
					break
				}
				require.ErrorIs(t, err, ErrOutboundFull)
				refused++
				waitFor(t, 20*time.Second, func() bool {
					_, gone := h.closing(c.ID())
					return gone || c.OutboundQueued() <= room
				}, func() string {
					return fmt.Sprintf("message %d: subscriber %d holds %d bytes", i, slices.Index(subs, c), c.OutboundQueued())
				})
			}
		}
	}
	return refused
}

// subscribe opens n subscribers to addr, each with a small receive buffer
// so that the kernel holds little of what they are sent, and returns the
// clients and the server's Conns, in the same order.
func subscribe(t *testing.T, h *lifetimes, addr string, n int) ([]net.Conn, []Conn) {
	var clients []net.Conn
	var subs []Conn
	for range n {
		clients = append(clients, dialSmallUnix(t, addr))
		subs = append(subs, h.conn(h.next(t)))
	}
	return clients, subs
}

// readAll has each of readers read n messages of size bytes, checking
// their order, and returns a channel of their results.
func readAll(readers []net.Conn, n, size int, body []byte) <-chan error {
	errs := make(chan error, len(readers))
	for _, c := range readers {
		go func() { errs <- readPushes(c, n, size, body) }()
	}
	return errs
}

// A publisher pushes 3,000 messages of 60 KiB with AsyncWritev to two
// subscribers that read and one that never does. The one that never reads
// holds at most the outbound bound: the publisher's pushes to it are
// refused with ErrOutboundFull once it is full, and it is reset once it
// has stayed over the soft limit for its time. The readers get every
// message, in order, and the server's heap grows by no more than the
// bound allows.
func TestPushesToANonReaderAreBounded(t *testing.T) {
	const (
		messages = 3000
		size     = 60 << 10
		hard     = 4 << 20
		soft     = 2 << 20
	)
	body := bytes.Repeat([]byte{'p'}, size-8)
	h := newLifetimes()
	h.traffic = func(c Conn) Action { c.Discard(-1); return None }
	// Small socket buffers, so that what the non-reader is sent stays in
	// the engine, where the bounds apply, rather than in the kernel.
	eng, addr := serve(t, h, WithNumEventLoop(2), WithMaxOutbound(hard),
		WithOutboundSoftLimit(soft, 3*time.Second), WithSocketSendBuffer(64<<10))
	clients, subs := subscribe(t, h, addr, 3)
	errs := readAll(clients[:2], messages, size, body) // the third never reads
	var refused int
	heap, _ := heapGrowth(t, func() { refused = publish(t, h, subs, messages, body, soft/4) })
	for range 2 {
		require.NoError(t, <-errs)
	}
	t.Logf("heap grew by %d KiB at most; %d pushes refused", heap>>10, refused)
	assert.Positive(t, refused, "no push was refused")
	_, err := h.waitClosed(t, subs[2].ID())
	assert.ErrorIs(t, err, ErrOutboundOverLimit)
	st := eng.Stats()
	assert.Equal(t, uint64(1), st.OutboundOverLimit)
	assert.GreaterOrEqual(t, st.OutboundRefused, uint64(refused))
	// Three queues at the bound, each buffer at most twice what it holds,
	// the buffers their pools keep, and on the development backend the
	// copies its writers take: far below the 180 MB the pushes add up to
	// for each subscriber. Measured: 12 MiB on epoll, 58 MiB on the
	// development backend under the race detector.
	assert.Less(t, heap, uint64(3*2*hard+64<<20), "the heap grew with the pushes")
}

// Among 1,000 subscribers, 10 never read: the readers get every message in
// order, and the 10 are cut by the soft limit, no sooner than its time.
func TestManySubscribersFewNonReaders(t *testing.T) {
	subscribers, silent := 1000, 10
	if raceEnabled {
		subscribers = 300 // the race detector slows every goroutine
	}
	// Each subscriber is sent 200 KiB, several times what the kernel holds
	// for one that does not read.
	const (
		messages = 100
		size     = 2 << 10
		hard     = 64 << 10
		soft     = 16 << 10
		softFor  = 3 * time.Second // long beside a reader's lag, even on a loaded machine
	)
	body := bytes.Repeat([]byte{'m'}, size-8)
	h := newLifetimes()
	h.traffic = func(c Conn) Action { c.Discard(-1); return None }
	eng, addr := serve(t, h, WithNumEventLoop(2), WithMaxOutbound(hard),
		WithOutboundSoftLimit(soft, softFor), WithSocketSendBuffer(16<<10))
	clients, subs := subscribe(t, h, addr, subscribers)
	readers := clients[silent:]
	errs := readAll(readers, messages, size, body)
	// The silent ones first, so that they fill up while the readers read.
	// A publisher sending the same message to all of them would send it
	// once; the pushes here are each their own.
	// A refused push waits for room for itself, not for the subscriber to
	// drain further: a silent one whose kernel buffers took more than
	// usual (the development backend's writes, on a loaded machine) can
	// sit under the soft limit for good, and waiting there for it to
	// drain would wait for ever.
	start := time.Now()
	publish(t, h, subs, messages, body, hard-size)
	for range readers {
		require.NoError(t, <-errs)
	}
	for _, c := range subs[:silent] {
		after, err := h.waitClosed(t, c.ID())
		require.ErrorIs(t, err, ErrOutboundOverLimit)
		assert.GreaterOrEqual(t, time.Since(start), softFor, "cut before its time (%v after opening)", after)
	}
	for _, c := range subs[silent:] {
		_, gone := h.closing(c.ID())
		assert.False(t, gone, "a reader was cut")
	}
	assert.Equal(t, uint64(silent), eng.Stats().OutboundOverLimit)
}

// OutboundQueued counts every byte written to a peer that reads nothing
// that is not in the kernel's buffers, on every backend: on the
// development backend also what the socket's writer holds, 64 to 128 KiB
// (what waits for it and the batch it sends), which it once left out.
func TestOutboundQueuedCountsAllUnsent(t *testing.T) {
	const (
		written = 1 << 20
		kernel  = 32 << 10 // more than the two 4 KiB socket buffers take (12 KiB)
	)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		h.traffic = func(c Conn) Action {
			c.Next(-1)
			c.Write(make([]byte, written))
			return None
		}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithSocketSendBuffer(4<<10))
		client, err := dialReadBuffer(addr, 4<<10)
		require.NoError(t, err)
		defer client.Close()
		c := h.conn(h.next(t))
		_, err = client.Write([]byte("go"))
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { return c.OutboundQueued() > 0 },
			func() string { return "nothing queued" })
		// The peer reads nothing, so what is counted can only fall as far
		// as the kernel's buffers take; it stays there.
		assert.True(t, holdsFor(200*time.Millisecond, func() bool { return c.OutboundQueued() >= written-kernel }),
			"%d of %d bytes written counted as queued", c.OutboundQueued(), written)
		assert.False(t, c.Writable())
		return outcome{}
	})
}

// A connection's output counts are its own: inside OnClose they are what
// it was left holding, and once OnClose has returned they are zero, also
// while its descriptor's number serves a newer connection that holds
// output of its own. On the development backend part of the count is the
// socket's (what its writer holds), asked for by number, which a Conn
// kept past OnClose must not ask for any more.
func TestOutboundCountsEndWithTheConnection(t *testing.T) {
	const written = 1 << 20
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		var mu sync.Mutex
		fds := map[uint64]int{}     // each connection's descriptor, as OnOpen saw it
		atClose := map[uint64]int{} // OutboundBuffered inside OnClose
		h := &closeWatcher{lifetimes: newLifetimes()}
		h.onOpen = func(c Conn) {
			mu.Lock()
			fds[c.ID()] = c.Fd()
			mu.Unlock()
		}
		h.traffic = func(c Conn) Action {
			c.Next(-1)
			c.Write(make([]byte, written))
			return None
		}
		h.close = func(c Conn) {
			mu.Lock()
			atClose[c.ID()] = c.OutboundBuffered()
			mu.Unlock()
		}
		fdOf := func(id uint64) int {
			mu.Lock()
			defer mu.Unlock()
			return fds[id]
		}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithSocketSendBuffer(4<<10))
		// fill has the server write to a peer that reads nothing, and waits
		// until it holds more than the kernel's buffers take.
		fill := func(client net.Conn, c Conn) {
			_, err := client.Write([]byte("go"))
			require.NoError(t, err)
			waitFor(t, 5*time.Second, func() bool { return c.OutboundQueued() > written/2 },
				func() string { return fmt.Sprintf("%d bytes queued", c.OutboundQueued()) })
		}

		first, err := dialReadBuffer(addr, 4<<10)
		require.NoError(t, err)
		old := h.conn(h.next(t))
		fill(first, old)
		first.SetLinger(0)
		first.Close()
		h.waitClosed(t, old.ID())
		mu.Lock()
		assert.Greater(t, atClose[old.ID()], 0, "OutboundBuffered inside OnClose, with output unsent")
		mu.Unlock()

		// Open connections until the server's side of one has the closed
		// one's number: the client's side of each takes a number too.
		var reused Conn
		var client net.Conn
		for range 8 {
			client = dialSmall(t, addr)
			if c := h.conn(h.next(t)); fdOf(c.ID()) == fdOf(old.ID()) {
				reused = c
				break
			}
		}
		require.NotNil(t, reused, "no connection got descriptor %d again", fdOf(old.ID()))
		fill(client, reused)

		var buffered, fd int
		onConnLoop(t, reused, func() { buffered, fd = old.OutboundBuffered(), old.Fd() })
		assert.Equal(t, -1, fd, "Fd after OnClose")
		assert.Zero(t, buffered, "OutboundBuffered after OnClose, its number reused")
		assert.Zero(t, old.OutboundQueued(), "OutboundQueued after OnClose, its number reused")
		assert.True(t, old.Writable(), "Writable after OnClose")
		return outcome{}
	})
}

// closeWatcher is lifetimes with a hook that runs inside OnClose.
type closeWatcher struct {
	*lifetimes
	close func(c Conn)
}

func (h *closeWatcher) OnClose(c Conn, err error) Action {
	h.close(c)
	return h.lifetimes.OnClose(c, err)
}

// A push that would take a connection past WithMaxOutbound is refused
// whole, from any goroutine or on the loop, and its callback never runs;
// one larger than the bound always is. OutboundQueued and Writable tell a
// publisher where the connection stands before it builds a message.
func TestOutboundBoundRefusesWhole(t *testing.T) {
	const hard = 256 << 10
	h := newLifetimes()
	_, addr := serve(t, h, WithNumEventLoop(1), WithMaxOutbound(hard), WithSocketSendBuffer(16<<10))
	nc := dialSmallUnix(t, addr)
	c := h.conn(h.next(t))
	require.True(t, c.Writable())

	chunk := bytes.Repeat([]byte{'x'}, 32<<10)
	var ran atomic.Int64
	cb := func(Conn, error) { ran.Add(1) }
	accepted := 0
	for {
		err := c.AsyncWrite(chunk, cb)
		if err != nil {
			require.ErrorIs(t, err, ErrOutboundFull)
			break
		}
		accepted++
		require.Less(t, accepted, 1000, "never refused")
	}
	waitFor(t, 5*time.Second, func() bool { return ran.Load() == int64(accepted) },
		func() string { return "callbacks of accepted writes did not run" })
	assert.LessOrEqual(t, c.OutboundQueued(), hard)
	// Writable is false past the high-water mark (64 KiB). What the
	// development backend's writer holds counts as queued there.
	queued := c.OutboundQueued()
	assert.Equal(t, queued <= 64<<10, c.Writable(), "%d bytes queued", queued)
	assert.Greater(t, queued, 64<<10, "the bound filled, yet the output is not past the mark")
	assert.ErrorIs(t, c.AsyncWrite(make([]byte, hard+1), cb), ErrOutboundFull, "larger than the bound")
	assert.ErrorIs(t, c.AsyncWritev([][]byte{chunk, chunk, chunk, chunk, chunk, chunk, chunk, chunk, chunk}, cb),
		ErrOutboundFull, "refused whole")

	// On the loop, Write and Writev are held to the same bound.
	onLoop := make(chan error, 2)
	written := 0
	require.NoError(t, c.Wake(func(c Conn, _ error) {
		var err error
		for ; err == nil && written <= hard/len(chunk); written++ {
			_, err = c.Write(chunk)
		}
		written-- // the last was refused, or the loop ran past the bound
		if c.OutboundBuffered() > hard {
			err = errors.New("queued past the bound")
		}
		onLoop <- err
		n, err := c.Writev([][]byte{chunk, chunk, chunk, chunk, chunk, chunk, chunk, chunk, chunk})
		if n != 0 {
			err = errors.New("Writev queued part of what it refused")
		}
		onLoop <- err
	}))
	assert.ErrorIs(t, <-onLoop, ErrOutboundFull)
	assert.ErrorIs(t, <-onLoop, ErrOutboundFull)
	assert.Equal(t, int64(accepted), ran.Load(), "a refused write's callback ran")

	// Once the peer reads, the connection takes pushes again, and every
	// byte it accepted arrives.
	got := make([]byte, (accepted+written)*len(chunk))
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadFull(nc, got)
	require.NoError(t, err)
	waitFor(t, 5*time.Second, c.Writable, func() string { return "still not writable after the peer read" })
	require.NoError(t, c.AsyncWrite(chunk, nil))
}

// dialSmallUnix dials addr with a small receive buffer, so that the
// kernel holds little of what the server queues.
func dialSmallUnix(t testing.TB, addr string) net.Conn {
	t.Helper()
	c := dial(t, addr)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(16 << 10)
	}
	return c
}

// Closing a connection over its soft limit resets it at once, rather than
// waiting to send what it holds to a peer that does not read.
func TestCloseOverSoftLimitResets(t *testing.T) {
	const soft = 256 << 10
	h := newLifetimes()
	eng, addr := serve(t, h, WithNumEventLoop(1), WithOutboundSoftLimit(soft, time.Hour), WithSocketSendBuffer(16<<10))
	nc := dialSmallUnix(t, addr)
	c := h.conn(h.next(t))
	big := bytes.Repeat([]byte{'y'}, 4*soft)
	done := make(chan error, 1)
	require.NoError(t, c.AsyncWrite(big, func(c Conn, err error) { done <- err }))
	require.NoError(t, <-done)
	require.NoError(t, c.Close())
	_, err := h.waitClosed(t, c.ID())
	require.ErrorIs(t, err, ErrOutboundOverLimit)
	assert.Equal(t, uint64(1), eng.Stats().OutboundOverLimit)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(nc)
	assert.Error(t, err, "the peer read a clean end, not a reset")
}

// framedEcho answers each whole 4-byte length-prefixed frame with itself
// and leaves a partial one unread.
type framedEcho struct{ BuiltinEventEngine }

func (framedEcho) OnTraffic(c Conn) Action {
	for {
		hdr, err := c.Peek(4)
		if err != nil {
			return None
		}
		n := 4 + int(binary.BigEndian.Uint32(hdr))
		frame, err := c.Next(n)
		if err != nil {
			return None
		}
		if _, err := c.Write(frame); err != nil {
			return Close
		}
	}
}

// A client that writes 10 MB of framed requests before it reads any reply,
// as gnet's simple_protocol client does with a large batch, gets every
// reply with the default bounds: the server keeps reading while it holds
// less than the backpressure mark.
func TestBatchThenReadClient(t *testing.T) {
	_, addr := serve(t, framedEcho{}, WithNumEventLoop(1))
	var batch []byte
	for i := 0; len(batch) < 10<<20; i++ {
		payload := bytes.Repeat([]byte{byte(i)}, 1000+i%97)
		batch = binary.BigEndian.AppendUint32(batch, uint32(len(payload)))
		batch = append(batch, payload...)
	}
	c := dial(t, addr)
	c.SetDeadline(time.Now().Add(60 * time.Second))
	got := make([]byte, len(batch))
	heap, _ := heapGrowth(t, func() {
		_, err := c.Write(batch)
		require.NoError(t, err, "the server stopped reading a batch it could answer")
		_, err = io.ReadFull(c, got)
		require.NoError(t, err)
	})
	require.True(t, bytes.Equal(batch, got), "replies differ at byte %d", firstDiff(got, batch))
	t.Logf("heap grew by %d KiB at most for a %d KiB batch", heap>>10, len(batch)>>10)
}

// exchanger writes its message to every connection as it opens, then
// counts what it reads; done closes once every connection has read want
// bytes.
type exchanger struct {
	BuiltinEventEngine
	msg  []byte
	want int

	mu   sync.Mutex
	got  map[uint64]int
	errs []error
	done chan struct{}
	left int
}

func newExchanger(msg []byte, conns int) *exchanger {
	return &exchanger{msg: msg, want: len(msg), got: map[uint64]int{}, done: make(chan struct{}), left: conns}
}

func (h *exchanger) OnOpen(c Conn) ([]byte, Action) {
	if _, err := c.Write(h.msg); err != nil {
		h.fail(err)
	}
	return nil, None
}

func (h *exchanger) OnTraffic(c Conn) Action {
	n, _ := c.Discard(-1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got[c.ID()] += n
	if h.got[c.ID()] == h.want {
		if h.left--; h.left == 0 {
			close(h.done)
		}
	}
	return None
}

func (h *exchanger) OnClose(c Conn, err error) Action {
	if err != nil {
		h.fail(err)
	}
	return None
}

func (h *exchanger) fail(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
}

func (h *exchanger) failures() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.errs
}

// Two Sluice programs that each write 16 MiB in one call before reading
// anything both finish: neither stops reading the other while it holds
// less than the backpressure mark.
func TestTwoEnginesExchangeLargeWrites(t *testing.T) {
	msg := bytes.Repeat([]byte{'e'}, 16<<20)
	server := newExchanger(msg, 1)
	_, addr := serve(t, server, WithNumEventLoop(1))
	client := newExchanger(msg, 1)
	eng := start(t, client, "", WithNumEventLoop(1))
	require.NoError(t, eng.Dial(addr, nil))
	for _, h := range []*exchanger{server, client} {
		select {
		case <-h.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("the exchange hung; errors: %v", h.failures())
		}
	}
	assert.Empty(t, server.failures())
	assert.Empty(t, client.failures())
}

// Past the backpressure mark, two peers that both write before they read
// wait on each other: the write timeout ends that with ErrWriteTimeout,
// counted, rather than leaving both waiting for ever.
func TestStalledExchangeEndsWithWriteTimeout(t *testing.T) {
	msg := bytes.Repeat([]byte{'s'}, 16<<20)
	opts := []Option{WithNumEventLoop(1), WithBackpressureMark(64 << 10), WithWriteTimeout(300 * time.Millisecond),
		WithSocketSendBuffer(64 << 10), WithSocketRecvBuffer(64 << 10)}
	server := newExchanger(msg, 1)
	eng, addr := serve(t, server, opts...)
	client := newExchanger(msg, 1)
	ceng := start(t, client, "", opts...)
	require.NoError(t, ceng.Dial(addr, nil))
	waitFor(t, 20*time.Second, func() bool {
		return eng.Stats().WriteTimeouts+ceng.Stats().WriteTimeouts > 0 &&
			eng.CountConnections() == 0 && ceng.CountConnections() == 0
	}, func() string { return "the stalled exchange did not end" })
	var timedOut bool
	for _, err := range append(server.failures(), client.failures()...) {
		timedOut = timedOut || errors.Is(err, ErrWriteTimeout)
	}
	assert.True(t, timedOut, "no side closed with ErrWriteTimeout: %v %v", server.failures(), client.failures())
}

// BenchmarkMemoryHeld reports, on each poller and with the default
// bounds, the peak growth of the live heap and of resident memory while a
// connection is held to them: a subscriber that never reads, pushed 3,000
// messages of 60 KiB (held to WithMaxOutbound), and a client that writes
// 10 MB of framed requests before it reads a reply (held below
// WithBackpressureMark).
func BenchmarkMemoryHeld(b *testing.B) {
	for _, k := range pollerNames {
		b.Run("non-reader/"+k.String(), func(b *testing.B) {
			if k == poller.IOUring {
				skipWithoutRing(b)
			}
			body := bytes.Repeat([]byte{'p'}, 60<<10)
			var heap, resident uint64
			var queued int
			for b.Loop() {
				h := newLifetimes()
				_, addr := serve(b, h, WithPoller(k), WithNumEventLoop(1))
				dialSmallUnix(b, addr)
				c := h.conn(h.next(b))
				hp, rs := heapGrowth(b, func() {
					for range 3000 {
						if err := c.AsyncWrite(body, nil); err != nil && !errors.Is(err, ErrOutboundFull) {
							b.Fatal(err)
						}
					}
					waitFor(b, 10*time.Second, func() bool { return c.OutboundQueued() > DefaultMaxOutbound-len(body) },
						func() string { return "the subscriber's queue never filled" })
				})
				heap, resident, queued = max(heap, hp), max(resident, rs), c.OutboundQueued()
			}
			b.ReportMetric(float64(queued)/(1<<20), "queued-MiB")
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(resident)/(1<<20), "peak-RSS-MiB")
		})
		b.Run("batch-then-read/"+k.String(), func(b *testing.B) {
			if k == poller.IOUring {
				skipWithoutRing(b)
			}
			var batch []byte
			for i := 0; len(batch) < 10<<20; i++ {
				batch = binary.BigEndian.AppendUint32(batch, 1000)
				batch = append(batch, bytes.Repeat([]byte{byte(i)}, 1000)...)
			}
			got := make([]byte, len(batch))
			var heap, resident uint64
			for b.Loop() {
				_, addr := serve(b, framedEcho{}, WithPoller(k), WithNumEventLoop(1))
				c := dial(b, addr)
				hp, rs := heapGrowth(b, func() {
					if _, err := c.Write(batch); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, got); err != nil {
						b.Fatal(err)
					}
				})
				heap, resident = max(heap, hp), max(resident, rs)
			}
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(resident)/(1<<20), "peak-RSS-MiB")
		})
	}
}

// A connection whose output never drains whole, because its peer reads a
// little slower than it is sent, holds a buffer the size of what is
// unsent, not of everything it was ever sent: what has gone makes room at
// the front for what comes.
func TestSteadyBacklogKeepsItsBufferSmall(t *testing.T) {
	const (
		total = 64 << 20
		chunk = 32 << 10
		keep  = 256 << 10 // the backlog the publisher keeps
	)
	h := newLifetimes()
	_, addr := serve(t, h, WithNumEventLoop(1), WithSocketSendBuffer(32<<10))
	nc := dialSmallUnix(t, addr)
	c := h.conn(h.next(t))
	read := make(chan error, 1)
	go func() {
		nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, err := io.CopyN(io.Discard, nc, total)
		read <- err
	}()
	body := bytes.Repeat([]byte{'s'}, chunk)
	largest := 0
	for sent := 0; sent < total; sent += chunk {
		waitFor(t, 10*time.Second, func() bool { return c.OutboundQueued() < keep },
			func() string { return "the reader stopped" })
		require.NoError(t, c.AsyncWrite(body, func(c Conn, _ error) {
			if out := c.(*conn).out; out != nil {
				largest = max(largest, cap(out.B)) // on the loop, as is every callback
			}
		}))
	}
	require.NoError(t, <-read)
	done := make(chan int)
	require.NoError(t, c.Wake(func(Conn, error) { done <- largest }))
	got := <-done
	t.Logf("largest output buffer %d KiB for a backlog under %d KiB", got>>10, keep>>10)
	assert.Less(t, got, 3*keep, "the buffer kept what was sent")
}

// A goroutine wakes a connection faster than its OnTraffic runs: each
// Wake's task counts against the connection's bound on queued output by
// default, so that past it Wake returns ErrOutboundFull and the loop's
// queue stops growing (at most 32 MiB's worth of tasks). Without that, two seconds of Wake queued 2 million
// tasks and 400 MiB, and more for as long as it went on.
func TestWakingFasterThanTheLoopIsBounded(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		h.traffic = func(c Conn) Action {
			c.Discard(-1)
			for start := time.Now(); time.Since(start) < 5*time.Microsecond; {
			}
			return None
		}
		_, addr := serve(t, h, p, WithNumEventLoop(1))
		dial(t, addr)
		c := h.conn(h.next(t))
		queue := &c.(*conn).loop.tasks
		most := int(DefaultMaxOutbound / postedTask)
		// Under the race detector the loop may keep up, and no Wake is
		// refused; the queue is bounded either way.
		for range 10 * most {
			if err := c.Wake(nil); err != nil {
				require.ErrorIs(t, err, ErrOutboundFull)
			}
			require.LessOrEqual(t, int(queue.n.Load()), most, "the loop's queue grew past the bound")
		}
		waitFor(t, 30*time.Second, func() bool { return c.OutboundQueued() == 0 },
			func() string { return fmt.Sprintf("%d bytes posted still", c.OutboundQueued()) })
		return outcome{}
	})
}
