//go:build unix

package sluice

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/poller"
)

// randomBytes returns n bytes that differ from one call to the next, so a
// byte delivered to the wrong place or twice shows up.
func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// echoOnce sends msg and checks that exactly msg comes back. It writes from
// another goroutine, since a message larger than the socket buffers only
// goes through while the echo is being read.
func echoOnce(c net.Conn, msg []byte) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		werr <- err
	}()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("read %d bytes: %w", len(msg), err)
	}
	if err := <-werr; err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("echo of %d bytes differs at byte %d", len(msg), firstDiff(got, msg))
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// logUniform returns a size from 1 byte to max whose logarithm is uniform,
// so small and large messages are both common.
func logUniform(r *rand.Rand, max int) int {
	bits := r.IntN(21)
	return 1 + r.IntN(min(1<<bits, max))
}

// engineMode is one way to run an engine: an address to listen on and
// options.
type engineMode struct {
	name string
	addr string
	opts []Option
}

// engineModes is the matrix of ways to run an engine that every behaviour
// must hold across.
var engineModes = []engineMode{
	{"one-loop", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(1)}},
	{"round-robin", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(4)}},
	{"least-connections", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(4), WithLoadBalancing(LeastConnections)}},
	{"source-hash", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(4), WithLoadBalancing(SourceAddrHash)}},
	{"reuseport", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(4), WithReusePort(true)}},
	{"tcp6", "tcp6://[::1]:0", []Option{WithNumEventLoop(2)}},
	{"unix", "unix://", []Option{WithNumEventLoop(2)}},
}

func modeAddr(t *testing.T, addr string) string {
	if addr == "unix://" {
		return "unix://" + t.TempDir() + "/echo.sock"
	}
	return addr
}

func TestEchoOneConnection(t *testing.T) {
	for _, m := range engineModes {
		t.Run(m.name, func(t *testing.T) {
			_, addr := serveAddr(t, modeAddr(t, m.addr), echoHandler{}, m.opts...)
			c := dial(t, addr)
			r := rand.New(rand.NewPCG(1, 2))
			for _, n := range []int{1, 64, 4096, 65536, 65537, 1 << 20, logUniform(r, 1<<20)} {
				require.NoError(t, echoOnce(c, randomBytes(r, n)))
			}
		})
	}
}

func TestEchoThousandConnections(t *testing.T) {
	for _, m := range engineModes {
		t.Run(m.name, func(t *testing.T) {
			_, addr := serveAddr(t, modeAddr(t, m.addr), echoHandler{}, m.opts...)
			const conns = 1000
			errs := make(chan error, conns)
			var wg sync.WaitGroup
			for i := range conns {
				c := dial(t, addr)
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(i), 7))
					for range 2 {
						if err := echoOnce(c, randomBytes(r, logUniform(r, 1<<20)/16)); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

// frameHandler answers 4-byte length-prefixed frames, and only whole
// ones: it leaves a partial frame unread until the rest arrives.
type frameHandler struct {
	BuiltinEventEngine
	events atomic.Int64
}

func (h *frameHandler) OnTraffic(c Conn) Action {
	h.events.Add(1)
	for {
		hdr, err := c.Peek(4)
		if err != nil {
			return None
		}
		n := int(binary.BigEndian.Uint32(hdr))
		frame, err := c.Next(4 + n)
		if err != nil {
			return None
		}
		c.Write(frame)
	}
}

func TestFrameSplitAcrossWrites(t *testing.T) {
	h := &frameHandler{}
	_, addr := serve(t, h, WithNumEventLoop(1))
	c := dial(t, addr)
	r := rand.New(rand.NewPCG(3, 4))
	payload := randomBytes(r, 300)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	frame = append(frame, payload...)

	// One byte per write, each after the server has seen the one before, so
	// every event holds a fragment the handler has to leave unread.
	for i, b := range frame {
		_, err := c.Write([]byte{b})
		require.NoError(t, err)
		if i < len(frame)-1 {
			waitFor(t, 5*time.Second, func() bool { return h.events.Load() > int64(i) },
				func() string { return fmt.Sprintf("server saw %d events after byte %d", h.events.Load(), i) })
		}
	}
	got := make([]byte, len(frame))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, frame, got)
}

// nibbler consumes one byte per event and echoes it, so every event but
// the last leaves bytes unread that must be offered again.
type nibbler struct{ BuiltinEventEngine }

func (nibbler) OnTraffic(c Conn) Action {
	b, err := c.Next(1)
	if err == nil {
		c.Write(b)
	}
	if c.InboundBuffered() > 0 {
		c.Wake(nil) // come back for the rest even if no new bytes arrive
	}
	return None
}

func TestUnreadBytesOfferedAgain(t *testing.T) {
	_, addr := serve(t, nibbler{}, WithNumEventLoop(1))
	c := dial(t, addr)
	require.NoError(t, echoOnce(c, []byte("unread bytes come back on the next event")))
}

// pressure echoes, and records the most output a connection had queued at
// the start of an event and right after its echo was flushed.
type pressure struct {
	BuiltinEventEngine
	maxBefore, maxAfter atomic.Int64
}

func (h *pressure) OnTraffic(c Conn) Action {
	storeMax(&h.maxBefore, c.OutboundBuffered())
	b, _ := c.Next(-1)
	c.Write(b)
	c.Flush()
	storeMax(&h.maxAfter, c.OutboundBuffered())
	return None
}

func storeMax(m *atomic.Int64, n int) {
	if int64(n) > m.Load() {
		m.Store(int64(n))
	}
}

func TestSlowReaderBoundsMemory(t *testing.T) {
	const writeCap = 64 << 10
	h := &pressure{}
	// Small socket buffers on both sides, so that the kernel cannot absorb
	// the message and the server has to queue it.
	_, addr := serve(t, h, WithNumEventLoop(1), WithWriteBufferCap(writeCap), WithBackpressureMark(writeCap), WithSocketSendBuffer(32<<10))
	c := dial(t, addr)
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	msg := randomBytes(rand.New(rand.NewPCG(5, 6)), 8<<20)
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		werr <- err
	}()
	// The peer reads nothing until the server has stopped reading it.
	waitFor(t, 10*time.Second, func() bool { return h.maxAfter.Load() > writeCap },
		func() string { return "the server never queued output for the slow reader" })
	got := make([]byte, len(msg))
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.True(t, bytes.Equal(msg, got), "echo differs at byte %d", firstDiff(got, msg))
	assert.LessOrEqual(t, h.maxBefore.Load(), int64(writeCap), "read past the high-water mark")
	assert.LessOrEqual(t, h.maxAfter.Load(), int64(writeCap+64<<10), "queued more than one read past the mark")
}

// opener hands every opened connection to the test.
type opener struct {
	BuiltinEventEngine
	opened chan Conn
	closed chan error
}

func newOpener() *opener {
	return &opener{opened: make(chan Conn, 1024), closed: make(chan error, 1024)}
}

func (h *opener) OnOpen(c Conn) ([]byte, Action) {
	h.opened <- c
	return nil, None
}

func (h *opener) OnClose(c Conn, err error) Action {
	h.closed <- err
	return None
}

func (h *opener) next(t testing.TB) Conn {
	t.Helper()
	select {
	case c := <-h.opened:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection opened")
		return nil
	}
}

func (h *opener) closeErr(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.closed:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("OnClose was not called")
		return nil
	}
}

func TestAsyncWriteFromManyGoroutines(t *testing.T) {
	h := newOpener()
	_, addr := serve(t, h, WithNumEventLoop(2))
	client := dial(t, addr)
	sc := h.next(t)

	const writers, each = 100, 10
	var calls [writers]atomic.Int32
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				msg := fmt.Appendf(nil, "%03d:%03d;", w, i)
				require.NoError(t, sc.AsyncWrite(msg, func(c Conn, err error) {
					assert.NoError(t, err)
					calls[w].Add(1)
				}))
			}
		})
	}
	wg.Wait()
	got := make([]byte, writers*each*8)
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadFull(client, got)
	require.NoError(t, err)

	seen := map[string]int{}
	for m := range bytes.SplitSeq(bytes.TrimSuffix(got, []byte(";")), []byte(";")) {
		seen[string(m)]++
	}
	require.Len(t, seen, writers*each, "every message arrives, whole")
	for w := range writers {
		waitFor(t, 5*time.Second, func() bool { return calls[w].Load() >= each }, func() string {
			return fmt.Sprintf("writer %d: %d callbacks", w, calls[w].Load())
		})
		assert.EqualValues(t, each, calls[w].Load(), "writer %d: each callback exactly once", w)
	}
}

func TestAsyncWriteAfterCloseReportsIt(t *testing.T) {
	h := newOpener()
	_, addr := serve(t, h, WithNumEventLoop(1))
	client := dial(t, addr)
	sc := h.next(t)
	client.Close()
	require.NoError(t, h.closeErr(t))
	got := make(chan error, 1)
	require.NoError(t, sc.AsyncWrite([]byte("late"), func(c Conn, err error) { got <- err }))
	require.ErrorIs(t, <-got, ErrConnClosed)
}

func TestCloseFromAnotherGoroutine(t *testing.T) {
	h := newOpener()
	_, addr := serve(t, h, WithNumEventLoop(2))
	client := dial(t, addr)
	sc := h.next(t)
	require.NoError(t, sc.AsyncWrite([]byte("bye"), nil))
	go sc.Close()
	got, err := io.ReadAll(client)
	require.NoError(t, err)
	require.Equal(t, "bye", string(got), "queued output is sent before the close")
	// The server lingers until the client, having read the end of the
	// stream, closes too.
	client.Close()
	require.NoError(t, h.closeErr(t))
}

func TestPeerResetReachesOnClose(t *testing.T) {
	h := newOpener()
	_, addr := serve(t, h, WithNumEventLoop(1))
	client := dial(t, addr).(*net.TCPConn)
	h.next(t)
	require.NoError(t, client.SetLinger(0))
	require.NoError(t, client.Close())
	require.ErrorIs(t, h.closeErr(t), syscall.ECONNRESET)
}

// bulk answers "go" with size bytes, more than the socket buffers hold.
type bulk struct {
	BuiltinEventEngine
	payload []byte
	sent    chan struct{}
}

func (h *bulk) OnTraffic(c Conn) Action {
	c.Next(-1)
	c.Write(h.payload)
	h.sent <- struct{}{}
	return None
}

func TestStopFlushesQueuedOutput(t *testing.T) {
	h := &bulk{payload: randomBytes(rand.New(rand.NewPCG(8, 9)), 4<<20), sent: make(chan struct{}, 1)}
	eng, addr := serve(t, h, WithNumEventLoop(1))
	client := dial(t, addr)
	_, err := client.Write([]byte("go"))
	require.NoError(t, err)
	<-h.sent

	stopped := make(chan error, 1)
	go func() { stopped <- eng.Stop(context.Background()) }()
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(client)
	require.NoError(t, err)
	require.True(t, bytes.Equal(h.payload, got), "got %d of %d bytes", len(got), len(h.payload))
	require.NoError(t, <-stopped)
}

// panicker panics on "boom" and echoes anything else.
type panicker struct{ echoHandler }

func (h panicker) OnTraffic(c Conn) Action {
	if b, _ := c.Peek(-1); string(b) == "boom" {
		panic("boom")
	}
	return h.echoHandler.OnTraffic(c)
}

func (panicker) OnClose(c Conn, err error) Action {
	if errors.Is(err, ErrHandlerPanic) {
		c.SetContext(err) // nothing to check it on; closing must not panic
	}
	return None
}

func TestPanicClosesOnlyItsConnection(t *testing.T) {
	_, addr := serve(t, panicker{}, WithNumEventLoop(1), WithLogger(discardLogger()))
	good, bad := dial(t, addr), dial(t, addr)
	require.NoError(t, echoOnce(good, []byte("before")))
	bad.Write([]byte("boom"))
	bad.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := bad.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the panicking connection is closed")
	require.NoError(t, echoOnce(good, []byte("after")), "its neighbour carries on")
}

func TestShutdownActionStopsEngine(t *testing.T) {
	done := make(chan error, 1)
	h := &booter{EventHandler: shutdowner{}, booted: make(chan Engine, 1)}
	go func() { done <- Run(h, "tcp://127.0.0.1:0", WithNumEventLoop(2)) }()
	eng := <-h.booted
	a := eng.Addrs()[0]
	c := dial(t, a.Network()+"://"+a.String())
	c.Write([]byte("x"))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Shutdown")
	}
}

type shutdowner struct{ BuiltinEventEngine }

func (shutdowner) OnTraffic(Conn) Action { return Shutdown }

func TestRunListensOnEveryAddressForm(t *testing.T) {
	for _, addr := range []string{"tcp://:0", "tcp4://:0", "tcp6://:0", "127.0.0.1:0", "tcp://localhost:0"} {
		t.Run(addr, func(t *testing.T) {
			eng, _ := serveAddr(t, addr, echoHandler{}, WithNumEventLoop(1))
			port := eng.Addrs()[0].(*net.TCPAddr).Port
			network := "tcp4"
			if strings.HasPrefix(addr, "tcp6") {
				network = "tcp6"
			}
			host := map[string]string{"tcp4": "127.0.0.1", "tcp6": "[::1]"}[network]
			c := dial(t, fmt.Sprintf("%s://%s:%d", network, host, port))
			require.NoError(t, echoOnce(c, []byte(addr)))
		})
	}
}

func TestRunRejectsBadAddress(t *testing.T) {
	for _, addr := range []string{"sctp://127.0.0.1:0", "unix://", "tcp://256.0.0.1:0"} {
		err := Run(BuiltinEventEngine{}, addr)
		require.Error(t, err, addr)
	}
	require.ErrorIs(t, Run(BuiltinEventEngine{}, "sctp://127.0.0.1:0"), ErrInvalidAddr)
}

// boundedReplies answers every inbound byte with a 100 KiB reply, but stops
// once a call has 256 KiB queued, leaving the rest of the pipeline unread:
// what a handler must do to bound the memory one call can take.
type boundedReplies struct {
	BuiltinEventEngine
	reply  []byte
	maxOut atomic.Int64
}

func (h *boundedReplies) OnTraffic(c Conn) Action {
	for c.InboundBuffered() > 0 && c.OutboundBuffered() < 256<<10 {
		c.Discard(1)
		c.Write(h.reply)
	}
	storeMax(&h.maxOut, c.OutboundBuffered())
	return None
}

func TestHandlerThatStopsEarlyIsCalledAgain(t *testing.T) {
	h := &boundedReplies{reply: randomBytes(rand.New(rand.NewPCG(10, 11)), 100<<10)}
	_, addr := serve(t, h, WithNumEventLoop(1))
	c := dial(t, addr)
	const requests = 50
	// The whole pipeline arrives in one read, and nothing more is sent
	// until every reply is in: only the engine can call the handler again.
	_, err := c.Write(bytes.Repeat([]byte("g"), requests))
	require.NoError(t, err)
	got := make([]byte, requests*len(h.reply))
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	for i := range requests {
		require.True(t, bytes.Equal(h.reply, got[i*len(h.reply):(i+1)*len(h.reply)]), "reply %d", i)
	}
	assert.LessOrEqual(t, h.maxOut.Load(), int64(256<<10+len(h.reply)))
}

// flushAfterPeerLeft waits in OnTraffic until the test has closed the
// client, then writes and flushes, which fails; it records whether OnClose
// ran while OnTraffic was still on the stack.
type flushAfterPeerLeft struct {
	BuiltinEventEngine
	peerGone  chan struct{}
	inTraffic atomic.Bool
	reentered atomic.Bool
	flushErr  chan error
	closed    chan error
}

func (h *flushAfterPeerLeft) OnTraffic(c Conn) Action {
	h.inTraffic.Store(true)
	defer h.inTraffic.Store(false)
	<-h.peerGone
	c.Next(-1)
	c.Write([]byte("too late"))
	h.flushErr <- c.Flush()
	return None
}

func (h *flushAfterPeerLeft) OnClose(c Conn, err error) Action {
	h.reentered.Store(h.inTraffic.Load())
	h.closed <- err
	return None
}

func TestOnCloseWaitsForTheCallbackThatClosed(t *testing.T) {
	needsKernelSockets(t, "a write is taken before the writer learns the peer has gone, so Flush cannot fail")
	h := &flushAfterPeerLeft{peerGone: make(chan struct{}), flushErr: make(chan error, 1), closed: make(chan error, 1)}
	_, addr := serveAddr(t, "unix://"+t.TempDir()+"/s.sock", h, WithNumEventLoop(1))
	c := dial(t, addr)
	_, err := c.Write([]byte("x"))
	require.NoError(t, err)
	c.Close() // a unix socket's writer sees EPIPE at once once its peer is gone
	close(h.peerGone)
	require.ErrorIs(t, <-h.flushErr, ErrConnClosed)
	require.ErrorIs(t, <-h.closed, syscall.EPIPE)
	assert.False(t, h.reentered.Load(), "OnClose ran inside OnTraffic")
}

func TestUnixSocketOfALiveServerIsLeftAlone(t *testing.T) {
	path := t.TempDir() + "/live.sock"
	_, addr := serveAddr(t, "unix://"+path, echoHandler{}, WithNumEventLoop(1))
	err := Run(BuiltinEventEngine{}, "unix://"+path)
	require.ErrorIs(t, err, syscall.EADDRINUSE, "a second server must not take over the path")
	require.NoError(t, echoOnce(dial(t, addr), []byte("still served")))
}

// keeper keeps the slice Next returned in its first OnTraffic, against
// the rule that it is valid only until the callback returns.
type keeper struct {
	BuiltinEventEngine
	kept   []byte
	second chan []byte
}

func (h *keeper) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	if h.kept == nil {
		h.kept = b
		c.Write([]byte{1})
		return None
	}
	h.second <- append([]byte(nil), h.kept...)
	return None
}

// TestKeptNextSliceIsOverwritten shows why a slice from Next or Peek must
// be copied to outlive its callback: it aliases the loop's read buffer, and
// the next read lands on top of it. (On io_uring reads land in a ring of
// buffers, so the kept slice is overwritten only once the ring comes
// round, which this test cannot show as plainly.)
func TestKeptNextSliceIsOverwritten(t *testing.T) {
	h := &keeper{second: make(chan []byte, 1)}
	_, addr := serve(t, h, WithNumEventLoop(1), WithPoller(poller.Epoll))
	c := dial(t, addr)
	c.Write([]byte("first"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	require.NoError(t, err)
	c.Write([]byte("SECOND"))
	assert.Equal(t, "SECON", string(<-h.second), "the kept slice now shows the next read's bytes")
}

// An accepted connection's RemoteAddr is the client's own address, over
// IPv4 and IPv6.
func TestRemoteAddrIsTheClients(t *testing.T) {
	for _, addr := range []string{"tcp4://127.0.0.1:0", "tcp6://[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			h := &remoteRecorder{remotes: make(chan string, 1)}
			_, served := serveAddr(t, addr, h, WithNumEventLoop(1))
			c := dial(t, served)
			select {
			case got := <-h.remotes:
				assert.Equal(t, c.LocalAddr().String(), got)
			case <-time.After(5 * time.Second):
				t.Fatal("no connection opened")
			}
		})
	}
}

// remoteRecorder sends each opened connection's RemoteAddr.
type remoteRecorder struct {
	BuiltinEventEngine
	remotes chan string
}

func (h *remoteRecorder) OnOpen(c Conn) ([]byte, Action) {
	h.remotes <- c.RemoteAddr().String()
	return nil, None
}
