//go:build unix && !sluice_std

package sluice

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// hotPathMode is a configuration the hot path's budget holds in, and the
// PROXY header its client sends first, if any.
type hotPathMode struct {
	engineMode
	header string
}

// hotPathModes are the configurations the hot path's budget holds in:
// deadlines cost no allocation and no system call, and neither does a
// connection that began with a PROXY header, once it is read.
var hotPathModes = []hotPathMode{
	{engineMode{"default", "tcp://127.0.0.1:0", nil}, ""},
	{engineMode{"idle-timeout", "tcp://127.0.0.1:0", []Option{WithIdleTimeout(time.Minute)}}, ""},
	{engineMode{"all-timeouts", "tcp://127.0.0.1:0", []Option{WithIdleTimeout(time.Minute), WithReadTimeout(time.Minute), WithWriteTimeout(time.Minute)}}, ""},
	{engineMode{"proxy-optional-plain", "tcp://127.0.0.1:0", []Option{WithProxyProtocol(ProxyOptional, 0)}}, ""},
	{engineMode{"proxy-optional-v1", "tcp://127.0.0.1:0", []Option{WithProxyProtocol(ProxyOptional, 0)}}, "PROXY TCP4 203.0.113.7 198.51.100.1 4242 443\r\n"},
	{engineMode{"proxy-required-v2-tlvs", "tcp://127.0.0.1:0", []Option{WithProxyProtocol(ProxyRequired, 0), WithIdleTimeout(time.Minute)}},
		// v2, PROXY, TCP4 203.0.113.7:4242 to 198.51.100.1:443, with a
		// UNIQUE_ID TLV "req-42".
		"\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x15" + "\xcb\x00\x71\x07\xc6\x33\x64\x01\x10\x92\x01\xbb" + "\x05\x00\x06req-42"},
}

// dialHot connects a raw client for mode m and sends its PROXY header.
func dialHot(t testing.TB, m hotPathMode, addr string) *rawClient {
	t.Helper()
	c := dialRaw(t, addr)
	if m.header != "" {
		_, err := unix.Write(c.fd, []byte(m.header))
		require.NoError(t, err)
	}
	return c
}

func TestEchoRoundTripAllocatesNothing(t *testing.T) {
	skipUnderRace(t)
	for _, m := range hotPathModes {
		t.Run(m.name, func(t *testing.T) {
			_, addr := serveAddr(t, m.addr, echoHandler{}, append(m.opts, WithNumEventLoop(1))...)
			c := dialHot(t, m, addr)
			for range 100 {
				c.roundTrip(t) // warm up: pools, buffers, the conns table
			}
			allocs := testing.AllocsPerRun(1000, func() { c.roundTrip(t) })
			require.Zero(t, allocs, "heap allocations per 64-byte echo round trip")
		})
	}
}

// A hundred connections echoing 16 KiB at once write more in a turn than
// the loop's output buffer first holds. On io_uring, where a turn's output
// stays in that buffer until the next turn, the buffer grows to fit rather
// than each send allocating.
func TestManyLargeEchoesAllocateNothing(t *testing.T) {
	skipUnderRace(t)
	for _, m := range hotPathModes {
		if m.name != "default" && m.name != "uring-default" {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			_, addr := serveAddr(t, m.addr, echoHandler{}, append(m.opts, WithNumEventLoop(1))...)
			cs := make([]*rawClient, 100)
			for i := range cs {
				cs[i] = dialRawSize(t, addr, 16<<10)
			}
			round := func() {
				for _, c := range cs {
					c.send(t)
				}
				for _, c := range cs {
					c.receive(t)
					if !bytes.Equal(c.msg, c.got) {
						t.Fatal("an echo came back changed")
					}
				}
			}
			for range 20 {
				round() // warm up: pools, buffers, the conns table
			}
			allocs := testing.AllocsPerRun(50, round)
			require.Zero(t, allocs, "heap allocations per 100 echoes of 16 KiB")
		})
	}
}

func TestEchoRoundTripSystemCalls(t *testing.T) {
	for _, m := range hotPathModes {
		t.Run(m.name, func(t *testing.T) {
			// Counting is switched on before the engine starts and off by a
			// cleanup that runs after serve's has stopped it, which orders
			// both writes against the loops' reads of the flag.
			syscount.Enabled = true
			t.Cleanup(func() { syscount.Enabled = false })
			eng, addr := serveAddr(t, m.addr, echoHandler{}, append(m.opts, WithNumEventLoop(1))...)
			c := dialHot(t, m, addr)
			for range 100 {
				c.roundTrip(t)
			}
			const trips = 1000
			perTrip := float64(fewestSystemCalls(eng.e.loops[0], func() {
				for range trips {
					c.roundTrip(t)
				}
			})) / trips
			t.Logf("%.2f system calls per 64-byte echo round trip", perTrip)
			require.LessOrEqual(t, perTrip, 3.0)
		})
	}
}

// BenchmarkEchoRoundTrip is one 64-byte echo on one connection, client and
// server in one process: a check on the hot path's cost, not a figure to
// compare with other servers (benchmarks/ does that, in separate processes).
// It runs in each hot-path mode.
func BenchmarkEchoRoundTrip(b *testing.B) {
	for _, m := range hotPathModes {
		b.Run(m.name, func(b *testing.B) {
			_, addr := serve(b, echoHandler{}, append(m.opts, WithNumEventLoop(1))...)
			benchmarkRoundTrips(b, dialHot(b, m, addr), 64)
		})
	}
}

func benchmarkEcho(b *testing.B, size int, opts ...Option) {
	_, addr := serve(b, echoHandler{}, append(opts, WithNumEventLoop(1))...)
	benchmarkRoundTrips(b, dialRawSize(b, addr, size), size)
}

func benchmarkRoundTrips(b *testing.B, c *rawClient, size int) {
	b.ReportAllocs()
	b.SetBytes(int64(size))
	for b.Loop() {
		c.roundTrip(b)
	}
}

// BenchmarkWipeBuffers is the echo round trip with WithWipeBuffers off
// and on: what zeroing the loop's read and write buffers after each use
// costs.
func BenchmarkWipeBuffers(b *testing.B) {
	for _, size := range []int{64, 16 << 10} {
		for _, wipe := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dB/wipe=%v", size, wipe), func(b *testing.B) {
				benchmarkEcho(b, size, WithWipeBuffers(wipe))
			})
		}
	}
}

// BenchmarkPostToWake measures how long work posted from another goroutine
// takes to run on a sleeping loop: from the call to the start of its
// callback. AsyncWrite posts an empty write, so that only the hand-off is
// measured.
func BenchmarkPostToWake(b *testing.B) {
	posts := []struct {
		name string
		post func(c Conn, cb AsyncCallback) error
	}{
		{"Wake", Conn.Wake},
		{"AsyncWrite", func(c Conn, cb AsyncCallback) error { return c.AsyncWrite(nil, cb) }},
	}
	for _, p := range posts {
		b.Run(p.name, func(b *testing.B) {
			h := newOpener()
			_, addr := serve(b, h, WithNumEventLoop(1))
			dial(b, addr)
			sc := h.next(b)
			l := sc.(*conn).loop
			ran := make(chan time.Time, 1)
			cb := func(Conn, error) { ran <- time.Now() }
			var samples []time.Duration
			for b.Loop() {
				for !l.sleeping.Load() {
					runtime.Gosched()
				}
				start := time.Now()
				if err := p.post(sc, cb); err != nil {
					b.Fatal(err)
				}
				samples = append(samples, (<-ran).Sub(start))
			}
			reportPercentiles(b, samples)
		})
	}
}

// reportPercentiles reports the median and the 99th percentile of samples.

// fewestSystemCalls runs work three times and returns the fewest system
// calls the loop l counted over one. The loop counts a wait as it enters
// it, which may be after a client has its answer; so a count starts and
// ends with the loop asleep in its poller. A signal to the loop's thread
// now and then interrupts its wait (EINTR), which costs a wait more: the
// runtime's doing, not the engine's. The fewest of three leaves it out; a
// cost the engine adds shows in every one.
func fewestSystemCalls(l *eventloop, work func()) uint64 {
	return fewestSystemCallsBesides(l, work, func(time.Duration) uint64 { return 0 })
}

// fewestSystemCallsBesides is fewestSystemCalls, each run's count less
// besides(its duration): calls a timer makes, however many round trips
// the work has, as long as it lasts.
func fewestSystemCallsBesides(l *eventloop, work func(), besides func(time.Duration) uint64) uint64 {
	asleep := func() {
		for !l.sleeping.Load() {
			runtime.Gosched()
		}
	}
	fewest := uint64(math.MaxUint64)
	for range 3 {
		asleep()
		before, start := syscount.Load(), time.Now()
		work()
		asleep()
		calls, timers := syscount.Load()-before, besides(time.Since(start))
		fewest = min(fewest, calls-min(calls, timers))
	}
	return fewest
}
