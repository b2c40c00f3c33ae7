package sluicehttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/internal/leakcheck"
	"github.com/sluicenet/sluice/poller"
)

// deadline bounds every wait of a test.
const deadline = 10 * time.Second

// testPoller is the poller the tests' engines run on: epoll, or what
// SLUICE_TEST_POLLER names (uring), so that every test runs on both.
var testPoller = func() poller.Kind {
	var k poller.Kind
	if name := os.Getenv("SLUICE_TEST_POLLER"); name != "" {
		if err := k.UnmarshalText([]byte(name)); err != nil {
			panic(err)
		}
	}
	return k
}()

// serve starts s on a free loopback port, on two loops, and returns the
// address to dial. Shutting it down, and checking that it left no
// goroutine and no descriptor behind, is the test's cleanup.
func serve(t testing.TB, s *Server, opts ...sluice.Option) string {
	t.Helper()
	leaks := leakcheck.Start(t, deadline)
	if s.ErrorLog == nil {
		s.ErrorLog = testLogger(t)
	}
	opts = append([]sluice.Option{sluice.WithPoller(testPoller), sluice.WithNumEventLoop(2)}, opts...)
	eng, err := s.Start("tcp://127.0.0.1:0", opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := s.Shutdown(ctx); !errors.Is(err, sluice.ErrEngineStopped) {
			require.NoError(t, err) // the test may have shut it down
		}
		require.NoError(t, eng.Wait())
		leaks()
	})
	return eng.Addrs()[0].String()
}

// waitFor polls cond until it holds, or fails the test with describe's
// words once the deadline passes.
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

// client returns an http.Client for the test, whose idle connections are
// closed when it ends.
func client(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: deadline}
}

// serveOneLoop serves s on one loop and returns a client connected to it
// and the loop's state, for tests that look at what the loop keeps.
func serveOneLoop(t testing.TB, s *Server) (net.Conn, *loopState) {
	c := dial(t, serve(t, s, sluice.WithNumEventLoop(1)))
	s.mu.Lock()
	defer s.mu.Unlock()
	return c, s.loops[0]
}

// dial connects to addr over TCP; the connection closes when the test
// ends, and its reads and writes fail past the deadline.
func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, deadline)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(deadline))
	return c
}

// readResponse reads one response from br, its body whole.
func readResponse(t testing.TB, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	return resp, string(body)
}

// testLogger logs to the test.
func testLogger(t testing.TB) *log.Logger {
	return log.New(testWriter{t}, "", 0)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// hello answers "hello" and the request's path.
func hello(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "hello "+r.URL.Path)
}

// holdsFor reports whether cond holds throughout d, polling it: for what
// must not happen.
func holdsFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); {
		if !cond() {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return cond()
}

// serveStd starts net/http's server std on a free loopback port, for a
// test that compares this package's behaviour with it, and returns the
// address to dial; it closes when the test ends.
func serveStd(t testing.TB, std *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go std.Serve(ln)
	t.Cleanup(func() { std.Close() })
	return ln.Addr().String()
}
