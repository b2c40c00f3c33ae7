//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/internal/syncbuf"
	"github.com/sluicenet/sluice/poller"
)

// deadline bounds every wait in these tests: long enough for a loaded
// machine under the race detector, short enough that a hang fails.
const deadline = 20 * time.Second

// eachPoller runs f once with the proxy's loops on epoll and once on
// io_uring. io_uring is skipped where the kernel cannot run it, except in
// CI, where the test then fails rather than passing untested, as the
// engine's own tests do.
func eachPoller(t *testing.T, f func(t *testing.T, k poller.Kind)) {
	for _, k := range []poller.Kind{poller.Epoll, poller.IOUring} {
		t.Run(k.String(), func(t *testing.T) {
			if k == poller.IOUring {
				if err := ringUnsupported(); err != nil && os.Getenv("CI") == "" {
					t.Skip(err)
				}
			}
			f(t, k)
		})
	}
}

// ringUnsupported reports why io_uring cannot run here, or nil when it
// can: an engine with no listener, asked for io_uring, either starts (and
// stops at once) or says why not.
var ringUnsupported = sync.OnceValue(func() error {
	err := sluice.Run(stopAtBoot{}, "", sluice.WithPoller(poller.IOUring), sluice.WithNumEventLoop(1))
	if errors.Is(err, sluice.ErrPollerUnsupported) {
		return err
	}
	return nil
})

// stopAtBoot is a handler that stops its engine as soon as it starts.
type stopAtBoot struct{ sluice.BuiltinEventEngine }

// OnBoot stops the engine.
func (stopAtBoot) OnBoot(sluice.Engine) sluice.Action { return sluice.Shutdown }

// waitFor polls cond until it holds, or fails the test with what describe
// says once the deadline passes.
func waitFor(t testing.TB, cond func() bool, describe func() string) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatal(describe())
		}
		time.Sleep(time.Millisecond)
	}
}

// testProxy is a proxy running in-process.
type testProxy struct {
	*proxy
	addrs []string // as net.Dial takes them: "host:port", or a unix path
	log   *syncbuf.Buffer
	stop  func() error // stops the proxy, as a signal does, and returns what run did; once
}

// startProxy runs a proxy with cfg, on a free port of 127.0.0.1 and two
// loops unless cfg says otherwise, until the test ends; then it stops it
// and checks that it let go of every connection.
func startProxy(t testing.TB, cfg config) *testProxy {
	t.Helper()
	if len(cfg.addrs) == 0 {
		cfg.addrs = []string{"tcp://127.0.0.1:0"}
	}
	if cfg.loops == 0 {
		cfg.loops = 2
	}
	tp := &testProxy{log: &syncbuf.Buffer{}}
	cfg.out = tp.log
	cfg.logf = func(format string, args ...any) { fmt.Fprintf(tp.log, format+"\n", args...) }
	px, err := newProxy(cfg)
	require.NoError(t, err)
	tp.proxy = px
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- px.run(ctx) }()
	select {
	case <-px.booted:
	case err := <-done:
		cancel()
		t.Fatalf("the proxy did not start: %v", err)
	}
	tp.stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(deadline):
			return errors.New("the proxy did not stop")
		}
	})
	t.Cleanup(func() {
		require.NoError(t, tp.stop())
		if t.Failed() {
			t.Logf("proxy log:\n%s", tp.log)
		}
	})
	for _, a := range px.eng.Addrs() {
		tp.addrs = append(tp.addrs, a.String())
	}
	return tp
}

// addr is the proxy's first address.
func (tp *testProxy) addr() string { return tp.addrs[0] }

// settled waits until the proxy holds no connection and no pair.
func (tp *testProxy) settled(t testing.TB) {
	t.Helper()
	var s snapshot
	waitFor(t, func() bool {
		s = tp.snapshot()
		return s.Engine.Conns == 0 && s.Pairs == 0 && s.Clients == 0
	}, func() string {
		return fmt.Sprintf("the proxy still holds %d connections, %d pairs, %d clients", s.Engine.Conns, s.Pairs, s.Clients)
	})
}

// echoServer is a backend for the tests: an in-process Sluice engine,
// on epoll, that sends back every byte it receives.
type echoServer struct {
	sluice.BuiltinEventEngine
	eng    sluice.Engine
	addr   string
	opened atomic.Int64

	mu      sync.Mutex
	remotes []net.Addr      // each connection's RemoteAddr, as OnOpen saw it
	live    map[uint64]bool // IDs of connections open now
}

// startEcho runs an echo server on a free port of 127.0.0.1, or at the
// unix address addr if given, until the test ends.
func startEcho(t testing.TB, addr string, opts ...sluice.Option) *echoServer {
	t.Helper()
	if addr == "" {
		addr = "tcp://127.0.0.1:0"
	}
	s := &echoServer{live: map[uint64]bool{}}
	booted := make(chan sluice.Engine, 1)
	done := make(chan error, 1)
	go func() {
		done <- sluice.Run(&booter{s, booted}, addr, append([]sluice.Option{sluice.WithNumEventLoop(2)}, opts...)...)
	}()
	select {
	case s.eng = <-booted:
	case err := <-done:
		t.Fatalf("the echo server did not start: %v", err)
	}
	a := s.eng.Addrs()[0]
	s.addr = a.String()
	if a.Network() == "unix" {
		s.addr = "unix://" + a.String()
	}
	t.Cleanup(func() { s.stop(t, done) })
	return s
}

// stop stops the server gracefully; it may be called again.
func (s *echoServer) stop(t testing.TB, done chan error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.eng.Stop(ctx); err != nil && !errors.Is(err, sluice.ErrEngineStopped) {
		t.Errorf("stopping the echo server: %v", err)
	}
	if done != nil {
		<-done
	}
}

// booter hands an echo server its engine as it boots.
type booter struct {
	*echoServer
	booted chan sluice.Engine
}

// OnBoot passes the engine on.
func (b *booter) OnBoot(eng sluice.Engine) sluice.Action {
	b.booted <- eng
	return sluice.None
}

// OnOpen records the connection and its peer's address.
func (s *echoServer) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	s.opened.Add(1)
	s.mu.Lock()
	s.remotes = append(s.remotes, c.RemoteAddr())
	s.live[c.ID()] = true
	s.mu.Unlock()
	return nil, sluice.None
}

// OnTraffic sends back what arrived.
func (s *echoServer) OnTraffic(c sluice.Conn) sluice.Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return sluice.None
}

// OnClose forgets the connection.
func (s *echoServer) OnClose(c sluice.Conn, _ error) sluice.Action {
	s.mu.Lock()
	delete(s.live, c.ID())
	s.mu.Unlock()
	return sluice.None
}

// liveIDs returns the IDs of the server's open connections.
func (s *echoServer) liveIDs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []uint64
	for id := range s.live {
		ids = append(ids, id)
	}
	return ids
}

// remoteAddrs returns what RemoteAddr said of each connection, in order.
func (s *echoServer) remoteAddrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var as []string
	for _, a := range s.remotes {
		as = append(as, a.String())
	}
	return as
}

// dial connects to a proxy address, closed when the test ends.
func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, deadline)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(deadline)))
	return c.(*net.TCPConn)
}

// payload returns n random bytes, the same for the same seed, so that
// each client's stream differs from the others' and a byte relayed to the
// wrong client shows. It copies them from one block of random bytes made
// once, starting where the seed says: generating every payload afresh
// cost more than the rest of the tests under the race detector.
func payload(seed uint64, n int) []byte {
	block := randomBlock()
	b := make([]byte, 0, n)
	for at := int(seed*7919) % len(block); len(b) < n; at = 0 {
		b = append(b, block[at:min(len(block), at+n-len(b))]...)
	}
	return b
}

// randomBlock is where payload copies its bytes from.
var randomBlock = sync.OnceValue(func() []byte {
	b := make([]byte, 1<<20+13) // an odd size, so that the copies of long payloads do not line up
	rand.NewChaCha8([32]byte{}).Read(b)
	return b
})

// echo sends p through c, reading the echo as it goes, and checks that
// every byte came back in order. When the stream breaks, the error is the
// read's and the write's together: a reset that comes while a write is
// blocked ends the write with it, and the read then sees only the end.
func echo(c net.Conn, p []byte) error {
	c.SetDeadline(time.Now().Add(deadline))
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(p)
		sent <- err
	}()
	got := make([]byte, len(p))
	n, err := io.ReadFull(c, got)
	if err != nil {
		return fmt.Errorf("read %d of %d bytes: %w", n, len(p), errors.Join(err, <-sent))
	}
	if err := <-sent; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if i := firstDiff(got, p); i >= 0 {
		return fmt.Errorf("echo differs at byte %d of %d", i, len(p))
	}
	return nil
}

// firstDiff returns where a and b first differ, or -1.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// openFDs counts the process's open descriptors.
func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}
