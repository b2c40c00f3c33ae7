//go:build linux

// These tests read socket options and thread IDs the Linux way.

package sluice

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syncbuf"
)

// observer records, for every connection it opens, the loop that owns it
// and the socket options it was given.
type observer struct {
	BuiltinEventEngine
	mu      sync.Mutex
	loops   []int
	threads map[int]bool
	sockopt map[string]int
	opened  chan Conn
}

func newObserver() *observer {
	return &observer{threads: map[int]bool{}, sockopt: map[string]int{}, opened: make(chan Conn, 1024)}
}

func (h *observer) OnOpen(c Conn) ([]byte, Action) {
	fd := c.Fd()
	get := func(level, opt int) int {
		v, _ := unix.GetsockoptInt(fd, level, opt)
		return v
	}
	h.mu.Lock()
	h.loops = append(h.loops, c.(*conn).loop.idx)
	h.sockopt["nodelay"] = get(unix.IPPROTO_TCP, unix.TCP_NODELAY)
	h.sockopt["keepalive"] = get(unix.SOL_SOCKET, unix.SO_KEEPALIVE)
	h.sockopt["keepidle"] = get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
	h.sockopt["keepintvl"] = get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
	h.sockopt["keepcnt"] = get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
	h.sockopt["rcvbuf"] = get(unix.SOL_SOCKET, unix.SO_RCVBUF)
	h.sockopt["sndbuf"] = get(unix.SOL_SOCKET, unix.SO_SNDBUF)
	h.mu.Unlock()
	h.opened <- c
	return nil, None
}

func (h *observer) OnTraffic(c Conn) Action {
	h.mu.Lock()
	h.threads[unix.Gettid()] = true
	h.mu.Unlock()
	return echoHandler{}.OnTraffic(c)
}

// open dials n connections, waiting for each to be opened by the engine
// before the next, and returns the loops they landed on, by count.
func (h *observer) open(t *testing.T, addr string, n int) map[int]int {
	t.Helper()
	for range n {
		dial(t, addr)
		h.awaitOpens(t, 1)
	}
	return h.perLoop()
}

// awaitOpens waits for the engine to open n more connections.
func (h *observer) awaitOpens(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-h.opened:
		case <-time.After(5 * time.Second):
			t.Fatal("connection not opened")
		}
	}
}

// perLoop counts the connections opened, by the loop they landed on.
func (h *observer) perLoop() map[int]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	perLoop := map[int]int{}
	for _, l := range h.loops {
		perLoop[l]++
	}
	return perLoop
}

func TestLoadBalancing(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want func(t *testing.T, perLoop map[int]int)
	}{
		{"round-robin spreads evenly", []Option{WithNumEventLoop(4)}, func(t *testing.T, perLoop map[int]int) {
			assert.Equal(t, map[int]int{0: 3, 1: 3, 2: 3, 3: 3}, perLoop)
		}},
		{"least-connections spreads evenly", []Option{WithNumEventLoop(4), WithLoadBalancing(LeastConnections)}, func(t *testing.T, perLoop map[int]int) {
			assert.Equal(t, map[int]int{0: 3, 1: 3, 2: 3, 3: 3}, perLoop)
		}},
		{"source hash keeps one client on one loop", []Option{WithNumEventLoop(4), WithLoadBalancing(SourceAddrHash)}, func(t *testing.T, perLoop map[int]int) {
			assert.Len(t, perLoop, 1)
		}},
		{"multicore off is one loop", []Option{WithNumEventLoop(4), WithMulticore(false)}, func(t *testing.T, perLoop map[int]int) {
			assert.Equal(t, map[int]int{0: 12}, perLoop)
		}},
		{"reuseport lets the kernel spread", []Option{WithNumEventLoop(4), WithReusePort(true)}, func(t *testing.T, perLoop map[int]int) {
			// The kernel hashes each connection's ports; twelve landing on
			// one loop of four has odds of 4^-11.
			assert.Greater(t, len(perLoop), 1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newObserver()
			_, addr := serve(t, h, tt.opts...)
			tt.want(t, h.open(t, addr, 12))
		})
	}
}

func TestLeastConnectionsFillsTheEmptiestLoop(t *testing.T) {
	h := newObserver()
	eng, addr := serve(t, h, WithNumEventLoop(3), WithLoadBalancing(LeastConnections))
	// Two connections on each loop, then empty loop 2.
	var onLoop2 []net.Conn
	for range 6 {
		c := dial(t, addr)
		if (<-h.opened).(*conn).loop.idx == 2 {
			onLoop2 = append(onLoop2, c)
		}
	}
	require.Len(t, onLoop2, 2)
	for _, c := range onLoop2 {
		c.Close()
	}
	waitFor(t, 5*time.Second, func() bool { return eng.CountConnections() == 4 },
		func() string { return "closes not seen" })
	h.mu.Lock()
	h.loops = nil
	h.mu.Unlock()
	assert.Equal(t, map[int]int{2: 2}, h.open(t, addr, 2), "both go to the emptied loop")
}

// TestLoadCountsAConnectionOnceInOnOpen holds the count LeastConnections
// reads to each connection once by the time OnOpen runs, whichever loop
// accepted it: a client that connects again as soon as it is served must
// find the loops' loads as they are. A connection handed from the
// accepting loop used to count as handed and as open until OnOpen had
// returned, so a second connection went to another loop.
func TestLoadCountsAConnectionOnceInOnOpen(t *testing.T) {
	h := &loadRecorder{loads: make(chan int64, 6)}
	_, addr := serve(t, h, WithNumEventLoop(3))
	var got []int64
	for range 6 {
		dial(t, addr)
		select {
		case n := <-h.loads:
			got = append(got, n)
		case <-time.After(5 * time.Second):
			t.Fatal("connection not opened")
		}
	}
	assert.Equal(t, []int64{1, 1, 1, 2, 2, 2}, got, "each loop's load as OnOpen saw it")
}

type loadRecorder struct {
	BuiltinEventEngine
	loads chan int64
}

func (h *loadRecorder) OnOpen(c Conn) ([]byte, Action) {
	h.loads <- c.(*conn).loop.load()
	return nil, None
}

func TestSocketOptions(t *testing.T) {
	needsKernelSockets(t, "reads the options back with getsockopt")
	tests := []struct {
		name string
		opts []Option
		want map[string]int
	}{
		{"defaults", nil, map[string]int{"nodelay": 1, "keepalive": 0}},
		{"no delay off", []Option{WithTCPNoDelay(false)}, map[string]int{"nodelay": 0}},
		// Probes every fifth of the idle time, five of them, as gnet sends them.
		{"keep-alive", []Option{WithTCPKeepAlive(10 * time.Second)}, map[string]int{"keepalive": 1, "keepidle": 10, "keepintvl": 2, "keepcnt": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newObserver()
			_, addr := serve(t, h, append(tt.opts, WithNumEventLoop(1))...)
			h.open(t, addr, 1)
			h.mu.Lock()
			defer h.mu.Unlock()
			for k, v := range tt.want {
				assert.Equal(t, v, h.sockopt[k], k)
			}
		})
	}
}

func TestSocketBuffers(t *testing.T) {
	needsKernelSockets(t, "reads the options back with getsockopt")
	h := newObserver()
	_, addr := serve(t, h, WithNumEventLoop(1), WithSocketRecvBuffer(50000), WithSocketSendBuffer(60000))
	h.open(t, addr, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	// Linux doubles what it is asked for, to leave room for its bookkeeping.
	assert.Equal(t, 100000, h.sockopt["rcvbuf"])
	assert.Equal(t, 120000, h.sockopt["sndbuf"])
}

func TestLockOSThreadKeepsALoopOnOneThread(t *testing.T) {
	h := newObserver()
	_, addr := serve(t, h, WithNumEventLoop(1), WithLockOSThread(true))
	c := dial(t, addr)
	// Other goroutines compete for threads meanwhile.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					time.Sleep(time.Microsecond)
				}
			}
		})
	}
	for i := range 200 {
		require.NoError(t, echoOnce(c, []byte{byte(i)}))
	}
	close(stop)
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Len(t, h.threads, 1, "every event ran on one thread")
}

// reads records the largest inbound view any event offered.
type reads struct {
	BuiltinEventEngine
	largest atomic.Int64
}

func (h *reads) OnTraffic(c Conn) Action {
	storeMax(&h.largest, c.InboundBuffered())
	return echoHandler{}.OnTraffic(c)
}

func TestReadBufferCapBoundsOneRead(t *testing.T) {
	h := &reads{}
	_, addr := serve(t, h, WithNumEventLoop(1), WithReadBufferCap(1024))
	c := dial(t, addr)
	require.NoError(t, echoOnce(c, bytes.Repeat([]byte("x"), 256<<10)))
	assert.Equal(t, int64(1024), h.largest.Load())
}

type ticker struct {
	BuiltinEventEngine
	ticks atomic.Int64
}

func (h *ticker) OnTick() (time.Duration, Action) {
	h.ticks.Add(1)
	return time.Millisecond, None
}

func TestTicker(t *testing.T) {
	for _, on := range []bool{true, false} {
		h := &ticker{}
		serve(t, h, WithNumEventLoop(2), WithTicker(on))
		if on {
			waitFor(t, 5*time.Second, func() bool { return h.ticks.Load() >= 5 },
				func() string { return "OnTick was not called repeatedly" })
		} else {
			// With the ticker off nothing calls OnTick; give it the time
			// five ticks would take, plus margin, to show it does not.
			time.Sleep(20 * time.Millisecond)
			assert.Zero(t, h.ticks.Load())
		}
	}
}

func TestLoggerReceivesPanics(t *testing.T) {
	var logs syncbuf.Buffer
	_, addr := serve(t, panicker{}, WithNumEventLoop(1), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	c := dial(t, addr)
	c.Write([]byte("boom"))
	waitFor(t, 5*time.Second, func() bool { return bytes.Contains([]byte(logs.String()), []byte("handler panicked")) },
		func() string { return "panic not logged: " + logs.String() })
	assert.Contains(t, logs.String(), "stack=")
}

// panickyTicker panics on every tick.
type panickyTicker struct {
	BuiltinEventEngine
	ticks atomic.Int64
}

func (h *panickyTicker) OnTick() (time.Duration, Action) {
	h.ticks.Add(1)
	panic("tick")
}

func TestPanickingTickWaitsASecond(t *testing.T) {
	h := &panickyTicker{}
	serve(t, h, WithNumEventLoop(1), WithTicker(true), WithLogger(discardLogger()))
	waitFor(t, 5*time.Second, func() bool { return h.ticks.Load() >= 1 }, func() string { return "OnTick never ran" })
	// A loop that retried at once would tick thousands of times meanwhile.
	time.Sleep(100 * time.Millisecond)
	assert.EqualValues(t, 1, h.ticks.Load())
}

func TestLeastConnectionsSpreadsABurst(t *testing.T) {
	h := newObserver()
	_, addr := serve(t, h, WithNumEventLoop(4), WithLoadBalancing(LeastConnections))
	const n = 40
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { dial(t, addr) })
	}
	wg.Wait()
	h.awaitOpens(t, n)
	perLoop := h.perLoop()
	// A connection moving from handed to opened can count twice for a
	// moment, so a pick then may miss by one.
	for l := range 4 {
		assert.InDelta(t, 10, perLoop[l], 1, "loop %d of %v: connections still being handed over count too", l, perLoop)
	}
}

// WithSocketRecvBuffer and WithSocketSendBuffer reach UDP sockets too: each
// loop's listener socket (WithReusePort) and a dialed one, as the kernel
// reports them. A UDP listener's receive buffer is what holds datagrams
// while its loop is busy or stalled; past it the kernel drops them.
func TestSocketBuffersOfUDPSockets(t *testing.T) {
	needsKernelSockets(t, "reads the options back with getsockopt")
	h := &udpBufferSizes{sizes: make(chan [2]int, 4)}
	eng, addr := serveAddr(t, "udp4://127.0.0.1:0", h, WithNumEventLoop(2), WithReusePort(true),
		WithSocketRecvBuffer(200000), WithSocketSendBuffer(150000))
	fds := packetSockets(t, eng)
	require.Len(t, fds, 2, "one socket per loop")
	peer := udpDial(t, addr)
	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	dialed := <-h.sizes
	// Linux doubles what it is asked for, to leave room for its bookkeeping.
	for _, fd := range fds {
		rcv, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		require.NoError(t, err)
		snd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		require.NoError(t, err)
		assert.Equal(t, [2]int{400000, 300000}, [2]int{rcv, snd}, "a listener's socket")
	}
	assert.Equal(t, [2]int{400000, 300000}, dialed, "a dialed socket")
}

// A UDP listener asks for DefaultPacketRecvBuffer where no receive buffer
// is set, and the kernel grants it as far as net.core.rmem_max allows; a
// dialed UDP socket keeps the kernel's default.
func TestUDPListenerRecvBufferDefault(t *testing.T) {
	needsKernelSockets(t, "reads the options back with getsockopt")
	rmemMax, rmemDefault := sysctlInt(t, "net/core/rmem_max"), sysctlInt(t, "net/core/rmem_default")
	h := &udpBufferSizes{sizes: make(chan [2]int, 4)}
	eng, addr := serveAddr(t, "udp4://127.0.0.1:0", h, WithNumEventLoop(2), WithReusePort(true))
	fds := packetSockets(t, eng)
	require.Len(t, fds, 2, "one socket per loop")
	for _, fd := range fds {
		rcv, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		require.NoError(t, err)
		assert.Equal(t, 2*min(DefaultPacketRecvBuffer, rmemMax), rcv, "a listener's socket, net.core.rmem_max %d", rmemMax)
	}
	peer := udpDial(t, addr)
	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	assert.Equal(t, rmemDefault, (<-h.sizes)[0], "a dialed socket")
}

// packetSockets returns the descriptors of eng's UDP listener sockets.
func packetSockets(t *testing.T, eng Engine) []int {
	var fds []int
	done := make(chan struct{})
	for _, l := range eng.e.loops {
		require.NoError(t, Loop{l}.Execute(func() {
			for _, u := range l.packets.socks {
				if u != nil {
					fds = append(fds, u.fd)
				}
			}
			done <- struct{}{}
		}))
		<-done
	}
	return fds
}

// sysctlInt reads the integer under /proc/sys/name.
func sysctlInt(t *testing.T, name string) int {
	b, err := os.ReadFile("/proc/sys/" + name)
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return n
}

// udpBufferSizes tells the buffer sizes of each socket it opens.
type udpBufferSizes struct {
	BuiltinEventEngine
	sizes chan [2]int
}

func (h *udpBufferSizes) OnOpen(c Conn) ([]byte, Action) {
	rcv, _ := unix.GetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_RCVBUF)
	snd, _ := unix.GetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF)
	h.sizes <- [2]int{rcv, snd}
	return nil, Close
}
