//go:build !sluice_std

package sluice

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/leakcheck"
	"github.com/sluicenet/sluice/internal/syscount"
	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/poller"
)

// ringModes are the engine modes again on io_uring. Every test that runs
// over engineModes or hotPathModes runs over them too where the kernel has
// io_uring; in CI they run regardless, so a runner without it fails rather
// than passing untested.
var ringModes = []engineMode{
	{"uring-one-loop", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(1)}},
	{"uring-round-robin", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(4)}},
	{"uring-reuseport", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(4), WithReusePort(true)}},
	{"uring-tcp6", "tcp6://[::1]:0", []Option{WithNumEventLoop(2)}},
	{"uring-unix", "unix://", []Option{WithNumEventLoop(2)}},
}

func init() {
	if !ringTestable() {
		return
	}
	for _, m := range ringModes {
		m.opts = append(m.opts, WithPoller(poller.IOUring))
		engineModes = append(engineModes, m)
	}
	for _, m := range hotPathModes[:len(hotPathModes):len(hotPathModes)] {
		m.name = "uring-" + m.name
		m.opts = append(m.opts[:len(m.opts):len(m.opts)], WithPoller(poller.IOUring))
		hotPathModes = append(hotPathModes, m)
	}
}

func ringTestable() bool {
	return uring.Probe() == nil || os.Getenv("CI") != ""
}

func skipWithoutRing(t testing.TB) {
	t.Helper()
	if !ringTestable() {
		t.Skip(uring.Probe())
	}
}

func TestPollerChoice(t *testing.T) {
	skipWithoutRing(t)
	for _, k := range []poller.Kind{poller.Epoll, poller.IOUring, poller.Auto} {
		t.Run(k.String(), func(t *testing.T) {
			eng, addr := serve(t, echoHandler{}, WithNumEventLoop(2), WithPoller(k))
			require.NoError(t, echoOnce(dial(t, addr), []byte("hello")))
			for _, l := range eng.e.loops {
				require.Equal(t, k != poller.Epoll, l.eng.opts.poller == poller.IOUring)
			}
		})
	}
}

// An io_uring loop opens no epoll instance: the ring itself polls the
// eventfd that wakes it. An engine on epoll, which opens one per loop,
// shows that the count sees them. A write posted from another goroutine
// still wakes the loop.
func TestRingOpensNoEpoll(t *testing.T) {
	skipWithoutRing(t)
	leakcheck.OpenRuntimePoller()
	const loops = 2
	for _, k := range []poller.Kind{poller.Epoll, poller.IOUring} {
		t.Run(k.String(), func(t *testing.T) {
			before := eventpolls(t)
			h := &openHandler{opened: make(chan Conn, 1)}
			_, addr := serve(t, h, WithNumEventLoop(loops), WithPoller(k))
			want := before
			if k == poller.Epoll {
				want += loops
			}
			require.Equal(t, want, eventpolls(t), "epoll instances open")
			c := dial(t, addr)
			require.NoError(t, (<-h.opened).AsyncWrite([]byte("woken"), nil))
			got := make([]byte, len("woken"))
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := io.ReadFull(c, got)
			require.NoError(t, err)
			require.Equal(t, "woken", string(got))
		})
	}
}

// eventpolls counts the process's open epoll instances.
func eventpolls(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "anon_inode:[eventpoll]" {
			n++
		}
	}
	return n
}

// TestRingRoundTripSystemCalls counts io_uring_enter and every other
// system call per 64-byte echo round trip on io_uring, with many
// connections sending at once, so that one turn of the loop serves many.
func TestRingRoundTripSystemCalls(t *testing.T) {
	skipWithoutRing(t)
	const conns, rounds = 100, 50
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	eng, addr := serve(t, echoHandler{}, WithNumEventLoop(1), WithPoller(poller.IOUring))
	cs := make([]*rawClient, conns)
	for i := range cs {
		cs[i] = dialRaw(t, addr)
		cs[i].roundTrip(t)
	}
	loop := eng.e.loops[0]
	waitFor(t, 5*time.Second, func() bool { return loop.count.Load() == conns }, func() string { return "not all open" })
	perTrip := float64(fewestSystemCalls(loop, func() {
		for range rounds {
			for _, c := range cs {
				c.send(t)
			}
			for _, c := range cs {
				c.receive(t)
			}
		}
	})) / (conns * rounds)
	t.Logf("%.2f system calls per 64-byte echo round trip at %d connections", perTrip, conns)
	require.Less(t, perTrip, 1.0, "one enter serves the turn's receives and sends")
}

// gateHandler echoes, but holds its loop in the first OnTraffic until open
// is closed, so that what clients send meanwhile all waits for one turn.
type gateHandler struct {
	echoHandler
	once sync.Once
	open chan struct{}
}

func (h *gateHandler) OnTraffic(c Conn) Action {
	h.once.Do(func() { <-h.open })
	return h.echoHandler.OnTraffic(c)
}

// Receives that find every provided buffer taken end, wait for a later
// turn, and lose no byte.
func TestRingBuffersExhausted(t *testing.T) {
	skipWithoutRing(t)
	const conns, rounds = 300, 5
	h := &gateHandler{open: make(chan struct{})}
	// Buffers of 256 KiB: the ring has 16 of them.
	eng, addr := serve(t, h, WithNumEventLoop(1), WithPoller(poller.IOUring), WithReadBufferCap(256<<10))
	cs := make([]*rawClient, conns)
	for i := range cs {
		cs[i] = dialRaw(t, addr)
		cs[i].readTimeout(t, 5*time.Second) // a receive never armed again leaves it waiting
	}
	for r := range rounds {
		for _, c := range cs {
			c.send(t)
		}
		if r == 0 {
			close(h.open)
		}
		for _, c := range cs {
			c.receive(t)
			require.Equal(t, c.msg, c.got)
		}
	}
	t.Logf("%d receives found no buffer", eng.Stats().RingBuffersExhausted)
	require.NotZero(t, eng.Stats().RingBuffersExhausted, "the ring never ran out of buffers: nothing was tested")
}

// An idle io_uring loop gives the memory of its receive buffers back, and
// receives into fresh pages when traffic returns.
func TestRingIdleReleasesBuffers(t *testing.T) {
	skipWithoutRing(t)
	eng, addr := serve(t, echoHandler{}, WithNumEventLoop(1), WithPoller(poller.IOUring))
	rg := eng.e.loops[0].drv.(*ringDriver)
	if !rg.releases {
		t.Skip("the ring has no deferred task work, so its buffers are kept")
	}
	resident := func() int {
		n, err := rg.bufs.Resident()
		require.NoError(t, err)
		return n
	}
	cs := make([]*rawClient, 20)
	for i := range cs {
		cs[i] = dialRaw(t, addr)
		cs[i].readTimeout(t, 5*time.Second)
	}
	for range 2 {
		for _, c := range cs {
			c.roundTrip(t)
			require.Equal(t, c.msg, c.got)
		}
		waitFor(t, 5*time.Second, func() bool { return resident() == 0 },
			func() string { return fmt.Sprintf("%d pages of buffers still resident", resident()) })
	}
}

// The buffers of a loop idle past ringIdleRelease go back to the system
// between turns, never in the middle of one: the turn that handles the
// idle timer may also hold a receive into a buffer the kernel has already
// filled. Here the loop is held in a callback while the timer fires and
// bytes arrive, so that one turn brings both.
func TestRingIdleReleaseKeepsReceivedBytes(t *testing.T) {
	skipWithoutRing(t)
	opened := make(chan Conn, 1)
	h := &openHandler{opened: opened}
	eng, addr := serve(t, h, WithNumEventLoop(1), WithPoller(poller.IOUring))
	if !eng.e.loops[0].drv.(*ringDriver).releases {
		t.Skip("the ring has no deferred task work, so its buffers are kept")
	}
	c := dialRaw(t, addr)
	c.readTimeout(t, 5*time.Second)
	for i := range c.msg {
		c.msg[i] = byte(i + 1) // no zero, which a dropped page reads as
	}
	sc := <-opened
	for range 3 {
		c.roundTrip(t)
		require.Equal(t, c.msg, c.got)
		held, release := make(chan struct{}), make(chan struct{})
		require.NoError(t, sc.Wake(func(Conn, error) {
			close(held)
			<-release
		}))
		<-held
		// Not a wait for a condition: time passing is the point. The idle
		// timer, armed by the round trip above, fires in the meantime.
		time.Sleep(ringIdleRelease + 50*time.Millisecond)
		c.send(t)
		close(release)
		c.receive(t)
		require.Equal(t, c.msg, c.got, "the echo of bytes received in the turn the idle timer fired in")
	}
}

// openHandler echoes and hands over each connection it opens.
type openHandler struct {
	echoHandler
	opened chan Conn
}

func (h *openHandler) OnOpen(c Conn) ([]byte, Action) {
	h.opened <- c
	return nil, None
}

// A starved receive is armed again even when none queued ahead of it is
// armed by the queue: they closed meanwhile, or were armed again another
// way (output queued for them). Otherwise a turn could arm none, and with
// nothing else in flight the loop would sleep with the receive's bytes
// unread. Three hundred connections meet 16 buffers; once every one has
// received or starved, the queued ones ahead of the last are written to
// or closed.
func TestRingStarvedBehindOthers(t *testing.T) {
	skipWithoutRing(t)
	const conns = 300
	h := &gateHandler{open: make(chan struct{})}
	// Buffers of 256 KiB: the ring has 16 of them.
	eng, addr := serve(t, h, WithNumEventLoop(1), WithPoller(poller.IOUring), WithReadBufferCap(256<<10))
	l := eng.e.loops[0]
	cs := make([]*rawClient, conns)
	for i := range cs {
		cs[i] = dialRaw(t, addr)
		cs[i].readTimeout(t, 5*time.Second)
	}
	waitFor(t, 5*time.Second, func() bool { return l.count.Load() == conns }, func() string { return "not all open" })
	// The callback, on the loop, waits a turn at a time until two turns
	// have passed with no receive starving (each has received or starved,
	// and only the queued ones are left to arm). Then the first three
	// turns' worth of the queue get output, which arms their receives,
	// and the rest but the last close.
	survivor := make(chan int, 1)
	var sc Conn
	for _, c := range l.conns {
		if c != nil {
			sc = c
			break
		}
	}
	turns, calm, exhausted := 0, 0, uint64(0)
	var crowd AsyncCallback
	crowd = func(c Conn, _ error) {
		queued := l.drv.(*ringDriver).starved[l.drv.(*ringDriver).fed:]
		if n := l.counts[countRingBuffersExhausted].Load(); n != exhausted {
			exhausted, calm = n, 0
		} else {
			calm++
		}
		written := 3 * l.drv.(*ringDriver).feed
		if calm < 2 || len(queued) <= written+1 {
			if turns++; turns < 100 && c.Wake(crowd) == nil {
				return
			}
			survivor <- -1
			return
		}
		keep := queued[len(queued)-1]
		for i, q := range queued[:len(queued)-1] {
			if i < written {
				q.Write([]byte("x")) // from another's callback: watched, so armed
			} else {
				l.closeConn(q, nil)
			}
		}
		survivor <- int(keep.remote.Port())
	}
	for _, c := range cs {
		c.send(t)
	}
	require.NoError(t, sc.Wake(crowd))
	close(h.open)
	port := <-survivor
	require.Positive(t, port, "too few receives starved to test anything")
	for _, c := range cs {
		sa, err := unix.Getsockname(c.fd)
		require.NoError(t, err)
		if sa.(*unix.SockaddrInet4).Port == port {
			c.receive(t)
			require.Equal(t, c.msg, c.got)
			return
		}
	}
	t.Fatal("no client has the surviving connection's port")
}

// A turn that fills the submission queue submits it early, in the middle
// of the turn, and what it submitted may complete within it: a send that
// goes whole and a poll for writable armed after it, for a connection
// paused for its output, complete before the send is settled at the next
// turn. The connection must still hear that its output drained, and be
// read again: with eight submission entries every busy turn submits early,
// and echoes to peers that read slowly, past the high-water mark, all
// arrive whole and in time.
func TestEarlySubmissionKeepsOutputFlowing(t *testing.T) {
	skipWithoutRing(t)
	saved := ringEntries
	t.Cleanup(func() { ringEntries = saved }) // after the engine stops
	ringEntries = 8
	_, addr := serve(t, echoHandler{}, WithPoller(poller.IOUring), WithNumEventLoop(1),
		WithWriteBufferCap(16<<10), WithBackpressureMark(16<<10), WithSocketSendBuffer(16<<10), WithWriteTimeout(10*time.Second))
	const clients, size = 20, 256 << 10
	errs := make(chan error, clients)
	for i := range clients {
		go func() { errs <- slowReaderEcho(addr, size, byte(i)) }()
	}
	for range clients {
		require.NoError(t, <-errs)
	}
}

// slowReaderEcho sends size bytes to the echo server at addr and reads them back
// 4 KiB at a time, pausing between reads, within 20 seconds.
func slowReaderEcho(addr string, size int, seed byte) error {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(addr, "tcp://"), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i*7) ^ seed
	}
	go c.Write(msg)
	got := make([]byte, size)
	for n := 0; n < size; {
		m, err := c.Read(got[n:min(n+4<<10, size)])
		if err != nil {
			return fmt.Errorf("after %d of %d bytes: %w", n, size, err)
		}
		n += m
		time.Sleep(100 * time.Microsecond)
	}
	if !bytes.Equal(got, msg) {
		return errors.New("the echo differs")
	}
	return nil
}

// sizedReplies answers each byte of a request, one per call, with a reply
// of that byte repeated as many times as sizes says.
type sizedReplies struct {
	BuiltinEventEngine
	sizes map[byte]int
}

func (h *sizedReplies) OnTraffic(c Conn) Action {
	if b, _ := c.Next(1); len(b) == 1 {
		c.Write(bytes.Repeat(b, h.sizes[b[0]]))
	}
	return None
}

// A reply past the high-water mark goes in a send that arms a poll for
// writable behind it; if the send goes whole but leaves the socket more
// than two thirds full, the poll stays armed. When it completes in the
// turn whose callbacks hand the connection's next reply to the ring (a
// send, submitted only as the next wait begins) and queue another behind
// that, the queued reply must wait for the send, not be written ahead of
// it. The loop is held in a task while the next request comes and the
// client then reads the first reply, which makes the socket writable, so
// that the receive and the poll complete in that order in one turn, every
// time rather than by chance under load.
func TestRingQueuedOutputWaitsForTheSendInFlight(t *testing.T) {
	skipWithoutRing(t)
	// The kernel doubles SO_SNDBUF: 128 KiB, of which the first reply,
	// with the client's small receive buffer taking little of it, keeps
	// over two thirds (the socket is writable again below that).
	const sndbuf, first, second, third = 64 << 10, 80 << 10, 8 << 10, 100
	h := &sizedReplies{sizes: map[byte]int{'a': first, 'b': second, 'c': third}}
	eng, addr := serve(t, h, WithNumEventLoop(1), WithPoller(poller.IOUring),
		WithSocketSendBuffer(sndbuf), WithWriteBufferCap(4<<10))
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<10) })
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(addr, "tcp://"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))

	_, err = c.Write([]byte("a"))
	require.NoError(t, err)
	// The first reply's send has settled, having gone whole, and the poll
	// armed behind it waits on a socket that is not writable.
	fd := -1
	waitFor(t, 5*time.Second, func() bool {
		onLoopOf(t, eng, 0, func() {
			for _, sc := range eng.e.loops[0].conns {
				if sc != nil && sc.out == nil && sc.ds.armed&(armedWrite|armedSend) == armedWrite {
					fd = sc.fd
				}
			}
		})
		return fd >= 0
	}, func() string {
		var st string
		onLoopOf(t, eng, 0, func() {
			for _, sc := range eng.e.loops[0].conns {
				if sc != nil {
					q, _ := unix.IoctlGetInt(sc.fd, unix.SIOCOUTQ)
					sb, _ := unix.GetsockoptInt(sc.fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
					st += fmt.Sprintf("out %d armed %b events %v outq %d sndbuf %d; ", sc.pending(), sc.ds.armed, sc.events, q, sb)
				}
			}
		})
		return "no connection has sent its first reply whole and waits to hear it may send more: " + st
	})
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(pfd, 0)
	require.NoError(t, err)
	require.Zero(t, n, "the socket is writable after the first reply: the poll behind it completed at once")

	held, release := make(chan struct{}), make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	t.Cleanup(let)
	require.NoError(t, eng.Loop(0).Execute(func() { close(held); <-release }))
	<-held
	_, err = c.Write([]byte("bc"))
	require.NoError(t, err)
	got := make([]byte, first)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, bytes.Repeat([]byte("a"), first), got)
	// The socket is writable once the client has read the reply, and the
	// poll completed with it (the kernel wakes both waiters together).
	n, err = unix.Poll(pfd, 5000)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the socket did not become writable")
	let()

	got = make([]byte, second+third)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	want := append(bytes.Repeat([]byte("b"), second), bytes.Repeat([]byte("c"), third)...)
	require.True(t, bytes.Equal(want, got), "the replies came out of order: the third begins at byte %d, not %d",
		bytes.IndexByte(got, 'c'), second)
}
