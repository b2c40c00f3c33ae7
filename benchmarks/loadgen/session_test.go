package loadgen

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/echotest"
)

func dialTest(t *testing.T, addr netip.AddrPort, conns, size, workers int) *Session {
	t.Helper()
	s, err := Dial(Config{Addr: addr, Conns: conns, Size: size, Workers: workers})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestClosedLoop(t *testing.T) {
	addr := echotest.Listen(t, echotest.Echo)
	for _, tc := range []struct {
		name                 string
		conns, size, workers int
	}{
		{"one connection", 1, 64, 1},
		{"many connections", 50, 64, 1},
		{"two workers", 50, 64, 2},
		{"16 KiB", 20, 16 << 10, 1},
		{"1 MiB, past the read buffer", 4, 1 << 20, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dialTest(t, addr, tc.conns, tc.size, tc.workers)
			res := s.Run(100 * time.Millisecond)
			assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
			assert.Positive(t, res.RoundTrips)
			assert.Equal(t, uint64(res.RoundTrips), res.Latency.Count())
			assert.GreaterOrEqual(t, res.Elapsed, 90*time.Millisecond)
			assert.Less(t, res.Elapsed, time.Second, "the run stops at its deadline")
			assert.Positive(t, res.Rate())
		})
	}
}

func TestExchangeCountsExactly(t *testing.T) {
	s := dialTest(t, echotest.Listen(t, echotest.Echo), 7, 64, 2)
	for range 2 { // a second run picks up where the first left the streams
		res := s.Exchange(1001)
		assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
		assert.Equal(t, int64(1001), res.RoundTrips)
	}
}

func TestPaceHoldsTheRate(t *testing.T) {
	// Each connection's turn comes every 25 ms, far longer than an echo
	// takes even on a loaded machine, so no send waits for an earlier echo.
	s := dialTest(t, echotest.Listen(t, echotest.Echo), 50, 64, 1)
	for range 2 { // a second run starts its schedule afresh
		res := s.Pace(2000, 250*time.Millisecond)
		assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
		// 2,000/s for 250 ms: exactly the schedule's 500, however late a
		// busy machine runs the generator, and not sooner than the last
		// one is due (499 slots of 0.5 ms after the first).
		assert.Equal(t, int64(500), res.RoundTrips)
		assert.Greater(t, res.Elapsed, 499*500*time.Microsecond)
	}
}

func TestPaceCountsFromIntendedTime(t *testing.T) {
	// A server that takes 20 ms per reply on one connection paced every 5 ms:
	// the queue grows, and latency from the intended send shows it.
	addr := echotest.Listen(t, func(c net.Conn, in []byte) error {
		time.Sleep(20 * time.Millisecond)
		return echotest.Echo(c, in)
	})
	s := dialTest(t, addr, 1, 64, 1)
	res := s.Pace(200, 300*time.Millisecond)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Greater(t, res.Latency.Quantile(0.99), 100*time.Millisecond)
}

func TestAccepts(t *testing.T) {
	res, err := Accepts(Config{Addr: echotest.Listen(t, echotest.Echo), Conns: 8, Size: 64, Workers: 1}, 100*time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Positive(t, res.RoundTrips)
}

// A brokenEcho is a server's wrong answer, and the count of Errors it
// shows in.
type brokenEcho struct {
	name  string
	reply echotest.Reply
	want  func(Errors) int64
}

// brokenEchoes are the wrong answers a stream counts, plain or TLS.
var brokenEchoes = []brokenEcho{
	{"flipped byte", func(c net.Conn, in []byte) error {
		in[len(in)-1] ^= 1
		return echotest.Echo(c, in)
	}, func(e Errors) int64 { return e.Mismatch }},
	{"closed", func(net.Conn, []byte) error { return io.EOF }, func(e Errors) int64 { return e.Closed }},
	{"stalled", func(net.Conn, []byte) error { return nil }, func(e Errors) int64 { return e.Timeout }},
}

// shortDrain has a run wait d, not seconds, for the round trips in flight
// when it stops, for the test.
func shortDrain(t *testing.T, d time.Duration) {
	old := drainTimeout
	drainTimeout = d
	t.Cleanup(func() { drainTimeout = old })
}

func TestErrorsAreCounted(t *testing.T) {
	shortDrain(t, 100*time.Millisecond)
	for _, tc := range append(brokenEchoes, brokenEcho{"extra byte", func(c net.Conn, in []byte) error {
		return echotest.Echo(c, append(in, 0))
	}, func(e Errors) int64 { return e.Mismatch }}) {
		t.Run(tc.name, func(t *testing.T) {
			s := dialTest(t, echotest.Listen(t, tc.reply), 3, 64, 1)
			res := s.Exchange(3)
			assert.Equal(t, int64(3), tc.want(res.Errors), "%+v", res.Errors)
			assert.Zero(t, res.RoundTrips)
			// The broken connections are closed and skipped from then on.
			assert.Zero(t, s.Exchange(3).RoundTrips)
		})
	}
}

func TestDialFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	require.NoError(t, ln.Close()) // nothing listens there now
	_, err = Dial(Config{Addr: addr, Conns: 2, Size: 64, Workers: 1})
	assert.ErrorIs(t, err, ErrDial)
	res, err := Accepts(Config{Addr: addr, Conns: 2, Size: 64, Workers: 1}, 10*time.Millisecond)
	require.NoError(t, err)
	assert.Positive(t, res.Errors.Dial)
}

func TestBadConfig(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.1:1")
	for _, cfg := range []Config{
		{Conns: 1, Size: 1, Workers: 1},
		{Addr: addr, Size: 1, Workers: 1},
		{Addr: addr, Conns: 1, Workers: 1},
		{Addr: addr, Conns: 1, Size: 1},
	} {
		_, err := Dial(cfg)
		assert.True(t, errors.Is(err, ErrConfig), "%+v: %v", cfg, err)
	}
}

func TestNoAllocationPerRoundTrip(t *testing.T) {
	s := dialTest(t, echotest.Listen(t, echotest.Echo), 10, 64, 1)
	s.Exchange(100) // warm up the server's goroutines
	const n = 5000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := s.Exchange(n)
	runtime.ReadMemStats(&after)
	require.Equal(t, int64(n), res.RoundTrips)
	// A run allocates a fixed few objects (goroutines, the result), and the
	// in-process test server a few more; none per round trip.
	assert.Less(t, after.Mallocs-before.Mallocs, uint64(n/50))
}

// dialingServer dials conns connections to addr from this process, as a
// server that dials its clients would, and echoes on each.
func dialingServer(t *testing.T, addr string, conns int) {
	t.Helper()
	for range conns {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		go func() {
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
		}()
	}
}

func TestAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	t.Cleanup(func() { f.Close(); ln.Close() })

	dialingServer(t, ln.Addr().String(), 7) // they wait in the listener's queue
	s, err := Accept(int(f.Fd()), Config{Conns: 7, Size: 64, Workers: 2})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	res := s.Exchange(1001)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Equal(t, int64(1001), res.RoundTrips)
	res = s.Pace(2000, 100*time.Millisecond)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Positive(t, res.RoundTrips)
	assert.Equal(t, int64(200), res.RoundTrips, "what the schedule holds, over both workers")

	_, err = Accept(int(f.Fd()), Config{Size: 64, Workers: 1})
	assert.ErrorIs(t, err, ErrConfig)
}

func TestOwner(t *testing.T) {
	for _, tc := range []struct{ n, parts int }{{7, 2}, {100, 1}, {3, 3}, {10, 4}} {
		counts := make([]int, tc.parts)
		for id := range tc.n {
			counts[owner(id, tc.n, tc.parts)]++
		}
		for i := range tc.parts {
			from, to := share(tc.n, tc.parts, i)
			assert.Equal(t, to-from, counts[i], "%+v part %d", tc, i)
		}
	}
}
