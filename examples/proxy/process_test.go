//go:build unix

package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/cmdtest"
	"github.com/sluicenet/sluice/poller"
)

func TestMain(m *testing.M) { cmdtest.Main(m) }

// command starts one of the commands, this one or examples/redis, built
// once, with args until the test ends, and returns it and the lines it
// prints, as they come, until every process that shares its output has
// exited.
func command(t *testing.T, name string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	c := cmdtest.Start(t, cmdtest.Build(t, ".", "../redis"), name, nil, args...)
	return c.Cmd, c.Lines
}

// expectLine waits for a line that re matches and returns its submatches.
func expectLine(t *testing.T, lines <-chan string, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(deadline)
	var seen []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the command ended without printing a line like %q; it printed:\n%s", re, strings.Join(seen, "\n"))
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
			seen = append(seen, l)
		case <-timeout:
			t.Fatalf("no line like %q; the command printed:\n%s", re, strings.Join(seen, "\n"))
		}
	}
}

// The command prints where it listens, on every address it was given,
// relays through each, prints statistics, and on SIGTERM ends the pairs
// gracefully and exits.
func TestCommand(t *testing.T) {
	backend := startEcho(t, "")
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	second := "[::1]:0"
	if ln, err := net.Listen("tcp6", second); err != nil {
		t.Logf("no IPv6 loopback here (%v): a second TCP listener on IPv4", err)
		second = "127.0.0.1:0"
	} else {
		ln.Close()
	}
	cmd, lines := command(t, "proxy", "-addr", "127.0.0.1:0,unix://"+sock, "-addr", second,
		"-backend", backend.addr, "-loops", "2", "-stats-interval", "20ms", "-drain", "100ms")
	listening := regexp.MustCompile(`^proxy: listening on (\w+)://(.+)$`)
	var addrs [][2]string
	for range 3 {
		m := expectLine(t, lines, listening)
		addrs = append(addrs, [2]string{m[1], m[2]})
	}
	assert.Equal(t, [][2]string{{"tcp", addrs[0][1]}, {"unix", sock}, {"tcp", addrs[2][1]}}, addrs)
	for i, a := range addrs {
		c, err := net.DialTimeout(a[0], a[1], deadline)
		require.NoError(t, err)
		c.SetDeadline(time.Now().Add(deadline))
		require.NoError(t, echo(c, payload(uint64(i), 100<<10)), "through %s", a[1])
		c.Close()
	}
	stats := expectLine(t, lines, regexp.MustCompile(`^(\S+) proxy: backend `+regexp.QuoteMeta(backend.addr)+` up active 0 connected [1-9]`))
	_, err := time.Parse(statsTime, stats[1])
	require.NoError(t, err, "the time on a stats line")

	// A client open as the stop begins reads what was relayed for it,
	// then the end of the stream.
	c := dial(t, addrs[0][1])
	require.NoError(t, echo(c, []byte("still here")))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	rest, err := io.ReadAll(c)
	require.NoError(t, err, "the stop reset the client")
	assert.Empty(t, rest)
	var last string
	for l := range lines {
		last = l
	}
	require.NoError(t, cmd.Wait())
	assert.Equal(t, "proxy: stopped", last, "the stop says how it went, last")
	_, err = os.Stat(sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "the unix socket was left behind")
}

// A bad flag or backend stops the command before it listens.
func TestCommandRefusesBadConfig(t *testing.T) {
	for _, args := range [][]string{
		{},                                 // no backend
		{"-backend", "localhost"},          // no port
		{"-backend", "udp://127.0.0.1:53"}, // not a stream
		{"-backend", "127.0.0.1:1", "-balance", "random"},
		{"-backend", "127.0.0.1:1", "-send-proxy", "v3"},
		{"-backend", "127.0.0.1:1", "-tls-cert", "cert.pem"}, // no key
		{"-backend", "127.0.0.1:1", "-backend-ca", "ca.pem"}, // without -backend-tls
		{"-backend", "127.0.0.1:1", "-backend-tls", "-send-proxy", "v1"},
		{"-backend", "127.0.0.1:1", "-backend-tls", "-backend-ca", "missing.pem"},
	} {
		cmd, lines := command(t, "proxy", args...)
		err := cmd.Wait()
		var out []string
		for l := range lines {
			out = append(out, l)
		}
		require.Error(t, err, "%v: it ran; it printed %q", args, out)
		assert.NotContains(t, strings.Join(out, "\n"), "listening", "%v", args)
	}
}

// redis runs examples/redis as a process until the test ends, and
// returns its address.
func redis(t *testing.T) string {
	t.Helper()
	_, lines := command(t, "redis", "-addr", "tcp://127.0.0.1:0", "-loops", "2")
	return expectLine(t, lines, regexp.MustCompile(`^redis: listening on (.+)$`))[1]
}

// redisTool returns the path of redis-cli or redis-benchmark (Debian
// package redis-tools), and skips the test without it, except in CI.
func redisTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed, and CI is set: install redis-tools", name)
	}
	t.Skipf("%s is not installed (apt-get install redis-tools)", name)
	return ""
}

// runTool runs a Redis tool against addr, "host:port", with stdin, and
// returns what it printed.
func runTool(t *testing.T, name, addr, stdin string, args ...string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	// A tool that stalls fails the test rather than hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 4*deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, redisTool(t, name), append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return string(out)
}

// In front of examples/redis, redis-cli's answers come back as Redis
// gives them, and redis-benchmark's pipelined tests all complete without
// an error.
func TestRedis(t *testing.T) {
	redisTool(t, "redis-cli")
	redisTool(t, "redis-benchmark")
	backend := redis(t)
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		tp := startProxy(t, config{backends: []string{backend}, poller: k})
		key := "greeting:" + k.String()
		out := runTool(t, "redis-cli", tp.addr(), strings.Join([]string{
			"SET " + key + " hello",
			"GET " + key,
			"APPEND " + key + " \", world\"",
			"GET " + key,
			"DEL " + key,
			"GET " + key,
			"RPUSH list:" + k.String() + " a b c",
			"LRANGE list:" + k.String() + " 0 -1",
			"INCRBY counter:" + k.String() + " 41",
			"INCR counter:" + k.String(),
			"PING",
		}, "\n"), "--no-raw")
		assert.Equal(t, strings.Join([]string{
			`OK`, `"hello"`, `(integer) 12`, `"hello, world"`, `(integer) 1`, `(nil)`,
			`(integer) 3`, `1) "a"`, `2) "b"`, `3) "c"`, `(integer) 41`, `(integer) 42`, `PONG`,
		}, "\n")+"\n", out)

		out = runTool(t, "redis-benchmark", tp.addr(), "", "-q", "-n", "100000", "-P", "16",
			"-t", "ping_mbulk,set,get,incr,lpush,lpop,mset")
		// With -q, progress lines end in '\r' and results in '\n'.
		var done []string
		result := regexp.MustCompile(`^(.+): [\d.]+ requests per second`)
		for _, line := range strings.Split(out, "\n") {
			if i := strings.LastIndexByte(line, '\r'); i >= 0 {
				line = line[i+1:]
			}
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			m := result.FindStringSubmatch(line)
			require.NotNil(t, m, "unexpected output %q", line)
			done = append(done, m[1])
		}
		assert.Equal(t, []string{"PING_MBULK", "SET", "GET", "INCR", "LPUSH", "LPOP", "MSET (10 keys)"}, done)
		assert.NotRegexp(t, `(?i)err`, out)
		tp.settled(t)
		assert.Zero(t, tp.snapshot().Unserved)
	})
}

// On SIGHUP with -upgrade-on SIGHUP a new process takes the listener
// over: a pair open across the upgrade relays on the old process until
// its client leaves, which then stops; new clients are relayed by the new
// one, which writes the PID file.
func TestCommandUpgrade(t *testing.T) {
	backend := startEcho(t, "")
	pidFile := filepath.Join(t.TempDir(), "proxy.pid")
	cmd, lines := command(t, "proxy", "-addr", "127.0.0.1:0", "-backend", backend.addr, "-loops", "2",
		"-upgrade-on", "SIGHUP", "-pid-file", pidFile, "-drain", "10s")
	addr := expectLine(t, lines, regexp.MustCompile(`^proxy: listening on tcp://(.+)$`))[1]
	old := dial(t, addr)
	require.NoError(t, echo(old, []byte("before")))

	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	next := expectLine(t, lines, regexp.MustCompile(`upgrade: process (\d+) took over`))[1]
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	assert.Equal(t, next, strings.TrimSpace(string(b)))
	c := dial(t, addr)
	require.NoError(t, echo(c, []byte("while both run")))
	c.Close()
	require.NoError(t, echo(old, []byte("after, on the old process")))
	old.Close()
	require.NoError(t, cmd.Wait(), "the old process stops once its pair has finished")
	for i := range 10 {
		c := dial(t, addr)
		require.NoError(t, echo(c, payload(uint64(i), 10<<10)), "through the new process")
		c.Close()
	}
	pid, err := strconv.Atoi(next)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	var stops []string
	for l := range lines {
		if strings.HasPrefix(l, "proxy: stop") {
			stops = append(stops, l)
		}
	}
	assert.Equal(t, []string{"proxy: stopped", "proxy: stopped"}, stops)
}
