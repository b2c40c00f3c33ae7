//go:build unix

package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusingAddr returns a loopback address where nothing listens: connects
// to it are refused at once. Its port is below the range the kernel takes
// ports for outgoing connections from, so that no connection the tests
// make takes it meanwhile, and a backend can listen there later.
func refusingAddr(t *testing.T) string {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			low, _ = strconv.Atoi(f[0])
		}
	}
	for range 100 {
		port := 10000 + rand.IntN(max(low-10000, 1))
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// silentAddr returns a loopback address whose connects are never
// answered: a listener with a backlog of zero whose queue is already full,
// so that the kernel drops every further SYN.
func silentAddr(t *testing.T) string {
	// Held against forks between the two calls, so that the commands the
	// tests start never inherit it (SOCK_CLOEXEC is Linux's alone).
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			var ne net.Error
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "filling the queue: %v", err)
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
}

// expectReset connects to addr and checks that the proxy resets the
// connection without relaying anything. The reset can come so soon that
// it fails the connect itself.
func expectReset(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, deadline)
	if err == nil {
		defer c.Close()
		c.SetDeadline(time.Now().Add(deadline))
		var n int
		n, err = c.Read(make([]byte, 1))
		require.Zero(t, n)
	}
	require.ErrorIs(t, err, syscall.ECONNRESET)
}

// serve sends a client through the proxy and checks its echo.
func serve(t *testing.T, tp *testProxy) {
	t.Helper()
	c := dial(t, tp.addr())
	require.NoError(t, echo(c, []byte("ping")))
	c.Close()
}

// A backend whose connects fail max-fails times in a row is down: no
// client tries it until down-time has passed; then one client probes it,
// and its first connect that succeeds brings it back.
func TestBackendDownAndBack(t *testing.T) {
	live := startEcho(t, "")
	revived := refusingAddr(t)
	tp := startProxy(t, config{backends: []string{revived, live.addr}, maxFails: 2, downTime: 100 * time.Millisecond})

	// Clients are served by the live backend meanwhile.
	waitFor(t, func() bool { serve(t, tp); return tp.snapshot().Backends[0].Down }, func() string {
		return "the refusing backend was never marked down"
	})
	s := tp.snapshot()
	require.Equal(t, uint64(2), s.Backends[0].Failed)
	require.Zero(t, s.Unserved)

	// The backend comes back on its address.
	back := startEcho(t, "tcp://"+revived)
	waitFor(t, func() bool { serve(t, tp); return back.opened.Load() > 0 }, func() string {
		return "the revived backend was never probed"
	})
	s = tp.snapshot()
	assert.False(t, s.Backends[0].Down, "the revived backend is up")
	assert.Equal(t, uint64(1), s.Backends[0].Downs, "times marked down")
	assert.True(t, tp.log.Contains("is up"), "the proxy logs that the backend is back")
	tp.settled(t)
}

// When every backend refuses, a client is reset at once; once all are
// down, clients are reset without a connect being tried.
func TestAllBackendsDown(t *testing.T) {
	tp := startProxy(t, config{backends: []string{refusingAddr(t), refusingAddr(t)}, maxFails: 1, downTime: time.Hour})
	expectReset(t, tp.addr())
	s := tp.snapshot()
	require.Equal(t, uint64(2), s.Engine.DialFailed, "both backends tried")
	require.True(t, s.Backends[0].Down && s.Backends[1].Down)

	for range 3 {
		expectReset(t, tp.addr())
	}
	tp.settled(t)
	s = tp.snapshot()
	assert.Equal(t, uint64(2), s.Engine.DialFailed, "connects tried once every backend was down")
	assert.Equal(t, uint64(4), s.Unserved)
}

// A backend that never answers takes only its share of a client's connect
// budget, so the client is still served by the next one; with no other
// backend, the client is reset once its budget is spent.
func TestConnectBudget(t *testing.T) {
	const budget = time.Second
	live := startEcho(t, "")
	silent := silentAddr(t)
	tp := startProxy(t, config{backends: []string{silent, live.addr}, balance: leastConn, connectTimeout: budget})
	// leastconn breaks the tie between two idle backends in turn, so one
	// of two clients tries the silent backend first.
	for range 2 {
		start := time.Now()
		serve(t, tp)
		require.Less(t, time.Since(start), budget, "a client waited out its whole budget")
	}
	s := tp.snapshot()
	assert.Equal(t, uint64(1), s.Backends[0].Failed, "connects the silent backend swallowed")
	assert.Equal(t, uint64(2), s.Backends[1].Connected)

	alone := startProxy(t, config{backends: []string{silent}, connectTimeout: 200 * time.Millisecond})
	start := time.Now()
	expectReset(t, alone.addr())
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "reset before its budget was spent")
	alone.settled(t)
}

// roundrobin takes the backends in turn, leastconn the one with the fewest
// clients, and source keeps a client's address on one backend.
func TestBalance(t *testing.T) {
	backends := []*echoServer{startEcho(t, ""), startEcho(t, ""), startEcho(t, "")}
	addrs := []string{backends[0].addr, backends[1].addr, backends[2].addr}
	opened := func() []int64 {
		var n []int64
		for _, b := range backends {
			n = append(n, b.opened.Load())
		}
		return n
	}
	counts := func(before []int64) []int64 {
		n := opened()
		for i := range n {
			n[i] -= before[i]
		}
		return n
	}

	t.Run("roundrobin", func(t *testing.T) {
		tp := startProxy(t, config{backends: addrs, balance: roundRobin})
		before := opened()
		for range 6 {
			serve(t, tp)
		}
		assert.Equal(t, []int64{2, 2, 2}, counts(before))
		tp.settled(t)
	})
	t.Run("leastconn", func(t *testing.T) {
		tp := startProxy(t, config{backends: addrs, balance: leastConn})
		before := opened()
		// Two clients stay; the next four go to the backend without one,
		// each closing before the next comes.
		held := []net.Conn{dial(t, tp.addr()), dial(t, tp.addr())}
		for _, c := range held {
			require.NoError(t, echo(c, []byte("stay")))
		}
		busy := counts(before)
		for range 4 {
			serve(t, tp)
			// The next client must find this one's backend idle again.
			var s snapshot
			waitFor(t, func() bool {
				s = tp.snapshot()
				return s.Backends[0].Active+s.Backends[1].Active+s.Backends[2].Active == 2
			}, func() string { return fmt.Sprintf("pairs still open: %+v", s.Backends) })
		}
		got := counts(before)
		for i := range got {
			if busy[i] == 0 {
				assert.Equal(t, int64(4), got[i], "the idle backend's clients: %v", got)
			} else {
				assert.Equal(t, int64(1), got[i], "a busy backend's clients: %v", got)
			}
		}
		for _, c := range held {
			c.Close()
		}
		tp.settled(t)
	})
	t.Run("source", func(t *testing.T) {
		tp := startProxy(t, config{backends: addrs, balance: source})
		before := opened()
		for range 6 {
			serve(t, tp)
		}
		got := counts(before)
		assert.ElementsMatch(t, []int64{0, 0, 6}, got, "one client address, one backend: %v", got)
		tp.settled(t)
	})
}

// Past -maxconn a client is reset at once; the clients within it are
// served.
func TestMaxConn(t *testing.T) {
	backend := startEcho(t, "")
	tp := startProxy(t, config{backends: []string{backend.addr}, maxConn: 2})
	a, b := dial(t, tp.addr()), dial(t, tp.addr())
	require.NoError(t, echo(a, []byte("a")))
	require.NoError(t, echo(b, []byte("b")))
	expectReset(t, tp.addr())
	b.Close()
	// b's place is given back once the proxy has closed it.
	waitFor(t, func() bool { return tp.snapshot().Clients == 1 }, func() string { return "b was not closed" })
	c := dial(t, tp.addr())
	require.NoError(t, echo(c, []byte("c")))
	a.Close()
	c.Close()
	tp.settled(t)
	assert.Equal(t, uint64(1), tp.snapshot().Rejected)
}

// The pool's health bookkeeping, on a clock the test sets.
func TestPoolHealth(t *testing.T) {
	cfg := config{addrs: []string{"127.0.0.1:0"}, backends: []string{"a:1", "b:1"}, maxFails: 2, downTime: 10}
	require.NoError(t, cfg.check())
	p := newPool(&cfg)
	a, b := p.backends[0], p.backends[1]
	fail := errors.New("refused")
	pick := func(tried uint64, now int64) string {
		be, _ := p.pick(tried, nil, now)
		if be == nil {
			return "none"
		}
		return be.addr
	}

	p.connectFailed(a, fail, 0)
	assert.Equal(t, up, p.health(a, 0), "one failure is not enough")
	p.connectFailed(a, fail, 0)
	assert.Equal(t, down, p.health(a, 5))
	assert.Equal(t, "b:1", pick(0, 5))
	assert.Equal(t, "b:1", pick(0, 5), "a down backend is passed by")
	assert.Equal(t, "none", pick(1<<b.idx, 5), "nothing left once b is tried")

	// At 10 a's time down is over: the first client to find it probes it,
	// and no other tries it meanwhile.
	assert.Equal(t, probeable, p.health(a, 10))
	probes := 0
	for range 4 {
		if pick(1<<b.idx, 10) == "a:1" {
			probes++
		}
	}
	assert.Equal(t, 1, probes, "clients that probed a")
	p.connectFailed(a, fail, 12) // the probe failed: down again
	assert.Equal(t, down, p.health(a, 21))
	assert.Equal(t, probeable, p.health(a, 22))
	require.Equal(t, "a:1", pick(1<<b.idx, 22))
	p.connectOK(a) // this probe succeeded: up
	assert.Equal(t, up, p.health(a, 22))
	assert.Equal(t, "a:1", pick(1<<b.idx, 22))
	assert.Equal(t, uint64(1), a.downs.Load())
	assert.Equal(t, uint64(3), a.failed.Load())
	assert.Equal(t, uint64(1), a.connected.Load())
}
