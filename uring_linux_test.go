package sluice

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	perTrip := math.Inf(1)
	for range 3 {
		for !loop.sleeping.Load() {
			runtime.Gosched()
		}
		before := syscount.Load()
		for range rounds {
			for _, c := range cs {
				c.send(t)
			}
			for _, c := range cs {
				c.receive(t)
			}
		}
		for !loop.sleeping.Load() {
			runtime.Gosched()
		}
		perTrip = min(perTrip, float64(syscount.Load()-before)/(conns*rounds))
	}
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
	rg := eng.e.loops[0].ring
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
