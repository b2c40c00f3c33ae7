package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
)

// testPoller is the poller test servers run on unless the test chooses
// one: epoll, or what SLUICE_TEST_POLLER names, so that the tests run
// again on io_uring with SLUICE_TEST_POLLER=uring.
var testPoller = func() poller.Kind {
	var k poller.Kind
	if name := os.Getenv("SLUICE_TEST_POLLER"); name != "" {
		if err := k.UnmarshalText([]byte(name)); err != nil {
			panic(err)
		}
	}
	return k
}()

// testServer is a server running in-process on a free port.
type testServer struct {
	*server
	host, port string
}

// startServer runs a server with cfg, on a free port of 127.0.0.1 and two
// loops unless cfg says otherwise, until the test ends.
func startServer(t testing.TB, cfg config) *testServer {
	t.Helper()
	if cfg.poller == poller.Epoll {
		cfg.poller = testPoller
	}
	return startServerOn(t, cfg)
}

// startServerOn is startServer on the poller cfg names, whatever
// SLUICE_TEST_POLLER says.
func startServerOn(t testing.TB, cfg config) *testServer {
	t.Helper()
	if cfg.addr == "" {
		cfg.addr = "tcp://127.0.0.1:0"
	}
	if cfg.loops == 0 {
		cfg.loops = 2
	}
	s := newServer(cfg)
	done := make(chan error, 1)
	go func() { done <- s.run() }()
	select {
	case <-s.booted:
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.eng.Stop(ctx))
		require.NoError(t, <-done)
	})
	ts := &testServer{server: s}
	if a, ok := s.eng.Addrs()[0].(*net.TCPAddr); ok {
		ts.host, ts.port = a.IP.String(), strconv.Itoa(a.Port)
	}
	return ts
}

func (ts *testServer) addr() string { return net.JoinHostPort(ts.host, ts.port) }

// hasTool reports whether one of the Redis programs is installed.
func hasTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil || os.Getenv("CI") != ""
}

// tool returns the path of one of the Redis tools, redis-cli or
// redis-benchmark (Debian package redis-tools), or of redis-server
// (package redis-server). Without it the test is skipped, except in CI,
// where it must be there.
func tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed, and CI is set: install redis-tools and redis-server", name)
	}
	t.Skipf("%s is not on PATH, so this test, which compares with the real Redis, is skipped (apt-get install redis-tools redis-server)", name)
	return ""
}

// run runs a Redis tool against addr, "host:port", with stdin, and returns
// what it printed.
func run(t testing.TB, name, addr, stdin string, args ...string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	cmd := exec.Command(tool(t, name), append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return string(out)
}

// cli runs redis-cli with the commands in script, one a line, and returns
// what it printed, in its typed format: "(integer) 1", "(nil)", "\"v\"".
func (ts *testServer) cli(t testing.TB, script string, args ...string) string {
	t.Helper()
	return run(t, "redis-cli", ts.addr(), script, append([]string{"--no-raw"}, args...)...)
}

// do runs one command with redis-cli and returns its reply, trimmed.
func (ts *testServer) do(t testing.TB, args ...string) string {
	t.Helper()
	return strings.TrimSpace(run(t, "redis-cli", ts.addr(), "", append([]string{"--no-raw"}, args...)...))
}

// dial opens a raw connection to the server, closed when the test ends.
func (ts *testServer) dial(t testing.TB) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// rawConn speaks RESP by hand, to send what redis-cli would not.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *rawConn) send(t testing.TB, s string) {
	t.Helper()
	_, err := io.WriteString(c, s)
	require.NoError(t, err)
}

// expect reads exactly len(want) bytes and checks they are want.
func (c *rawConn) expect(t testing.TB, want string) {
	t.Helper()
	got := make([]byte, len(want))
	_, err := io.ReadFull(c.r, got)
	require.NoError(t, err, "after %q", got)
	require.Equal(t, want, string(got))
}

// line reads one line of reply, without its CRLF.
func (c *rawConn) line(t testing.TB) string {
	t.Helper()
	s, err := c.r.ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSuffix(s, "\r\n")
}

// bulk reads a bulk string reply, or a RESP3 verbatim string's text.
func (c *rawConn) bulk(t testing.TB) string {
	t.Helper()
	header := c.line(t)
	require.NotEmpty(t, header)
	n, err := strconv.Atoi(header[1:])
	require.True(t, err == nil && (header[0] == '$' || header[0] == '='), "bulk string header %q", header)
	b := make([]byte, n+2)
	_, err = io.ReadFull(c.r, b)
	require.NoError(t, err)
	require.Equal(t, "\r\n", string(b[n:]))
	if header[0] == '=' {
		format, text, ok := strings.Cut(string(b[:n]), ":")
		require.True(t, ok && format == "txt", "verbatim string %q", b[:n])
		return text
	}
	return string(b[:n])
}

// expectClosed checks that the server ends the connection, having sent
// nothing more.
func (c *rawConn) expectClosed(t testing.TB) {
	t.Helper()
	b, err := c.r.ReadByte()
	require.Error(t, err, "read %q", b)
}

// expectReset checks that the server resets the connection.
func (c *rawConn) expectReset(t testing.TB) {
	t.Helper()
	_, err := c.r.ReadByte()
	require.ErrorIs(t, err, syscall.ECONNRESET)
}

// expectResetAfterAll reads what the server sent until it resets the
// connection.
func (c *rawConn) expectResetAfterAll(t testing.TB) {
	t.Helper()
	_, err := io.Copy(io.Discard, c.r)
	require.ErrorIs(t, err, syscall.ECONNRESET)
}

// dedent trims a script or an expected output written as an indented raw
// string: blank lines at either end, and each line's leading tabs.
func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n\t"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "\n") + "\n"
}

// numbering matches the numbers redis-cli puts before the elements of
// arrays ("1) "), maps ("1# ") and sets ("1~ ").
var numbering = regexp.MustCompile(`(?m)^\s*\d+[)#~] `)

// unordered returns redis-cli's output as its lines sorted, without the
// numbering, to compare replies whose order Redis does not define.
func unordered(out string) []string {
	lines := strings.Split(strings.TrimSpace(numbering.ReplaceAllString(out, "")), "\n")
	slices.Sort(lines)
	return lines
}

// A client past -maxclients is answered as Redis answers it, then
// disconnected: one that sent a command at once, and redis-cli, read the
// error.
func TestMaxClients(t *testing.T) {
	ts := startServer(t, config{maxClients: 2})
	a, b := ts.dial(t), ts.dial(t)
	a.clientID(t)
	b.clientID(t) // both are open
	c := ts.dial(t)
	c.send(t, "PING\r\n")
	c.expect(t, "-ERR max number of clients reached\r\n")
	c.expectClosed(t)
	assert.Equal(t, "ERR max number of clients reached", strings.TrimSpace(run(t, "redis-cli", ts.addr(), "", "ping")))
	a.send(t, "PING\r\n")
	a.expect(t, "+PONG\r\n")
	assert.EqualValues(t, 2, ts.eng.Stats().RejectedMaxConns)
}

func TestIdleTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	ts := startServer(t, config{idleTimeout: timeout})
	c := ts.dial(t)
	c.send(t, "PING\r\n")
	c.expect(t, "+PONG\r\n")
	c.expectClosed(t)
	assert.EqualValues(t, 1, ts.eng.Stats().IdleTimeouts)
}

func TestInboundLimit(t *testing.T) {
	tests := []struct {
		maxRequest, want int
	}{
		{0, sluice.DefaultMaxInboundBuffered},
		{4096, sluice.DefaultMaxInboundBuffered},
		{512 << 20, 1 << 30},
	}
	for _, tt := range tests {
		cfg := config{maxRequest: tt.maxRequest}
		assert.Equal(t, tt.want, cfg.inboundLimit(), "max-request %d", tt.maxRequest)
	}
}

// reply reads one whole reply, of any RESP2 or RESP3 type, and returns
// it as it arrived.
func (c *rawConn) reply(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	c.readValue(t, &b)
	return b.String()
}

func (c *rawConn) readValue(t testing.TB, b *strings.Builder) {
	t.Helper()
	line := c.line(t)
	b.WriteString(line + "\r\n")
	require.NotEmpty(t, line)
	n, _ := strconv.Atoi(line[1:])
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return
		}
		body := make([]byte, n+2)
		_, err := io.ReadFull(c.r, body)
		require.NoError(t, err)
		b.Write(body)
	case '*', '~', '>':
		for range n {
			c.readValue(t, b)
		}
	case '%':
		for range 2 * n {
			c.readValue(t, b)
		}
	}
}

// resp encodes a command as a multibulk, as client libraries send them.
func resp(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// bulkArray encodes the array of bulk strings a RESP2 client reads, or a
// RESP3 push when push is true.
func bulkArray(push bool, elems ...string) string {
	s := resp(elems...)
	if push {
		s = ">" + s[1:]
	}
	return s
}
