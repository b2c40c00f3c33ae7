//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
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
)

func TestMain(m *testing.M) { cmdtest.Main(m) }

// On SIGTERM the command closes its clients gracefully and says how its
// stop went before it exits.
func TestCommandStopIsReported(t *testing.T) {
	cmd := cmdtest.Start(t, cmdtest.Build(t, "."), "redis", nil, "-addr", "tcp://127.0.0.1:0", "-loops", "2")
	addr := cmd.Expect(t, regexp.MustCompile(`^redis: listening on (.+)$`))[1]
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(cmdtest.Deadline))
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", line)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_, err = r.ReadByte()
	require.Error(t, err, "the client's stream ends")
	lines, err := cmd.Exit(t)
	require.NoError(t, err, "%q", lines)
	require.NotEmpty(t, lines)
	assert.Equal(t, "redis: stopped", lines[len(lines)-1])
}

// respClient is a RESP client of the command, for the tests that run it.
type respClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialClient(t *testing.T, addr string) *respClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(cmdtest.Deadline))
	return &respClient{c, bufio.NewReader(c)}
}

// pid asks the server for its process ID (INFO server).
func (cl *respClient) pid(t *testing.T) int {
	t.Helper()
	_, err := io.WriteString(cl.c, "INFO server\r\n")
	require.NoError(t, err)
	head, err := cl.r.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(head, "$"), "%q", head)
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	require.NoError(t, err)
	body := make([]byte, n+2)
	_, err = io.ReadFull(cl.r, body)
	require.NoError(t, err)
	m := regexp.MustCompile(`process_id:(\d+)`).FindSubmatch(body)
	require.NotNil(t, m, "%s", body)
	pid, _ := strconv.Atoi(string(m[1]))
	return pid
}

// On SIGHUP with -upgrade-on SIGHUP a new process takes the port over:
// new clients reach it, a client of the old one is served by the old one
// until it leaves, and then the old one stops.
func TestCommandUpgrade(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "redis.pid")
	// A fixed port for /debug/vars, which the new process takes up once
	// the old one has let it go.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	debugAddr := ln.Addr().String()
	ln.Close()
	cmd := cmdtest.Start(t, cmdtest.Build(t, "."), "redis", nil, "-addr", "tcp://127.0.0.1:0", "-loops", "2",
		"-upgrade-on", "SIGHUP", "-pid-file", pidFile, "-debug-addr", debugAddr)
	addr := cmd.Expect(t, regexp.MustCompile(`^redis: listening on (.+)$`))[1]
	debugOn := regexp.MustCompile(`redis: debug on http://` + regexp.QuoteMeta(debugAddr) + `/debug/vars$`)
	cmd.Expect(t, debugOn)
	old := dialClient(t, addr)
	require.Equal(t, cmd.Process.Pid, old.pid(t))

	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	next, _ := strconv.Atoi(cmd.Expect(t, regexp.MustCompile(`upgrade: process (\d+) took over`))[1])
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(next), strings.TrimSpace(string(b)))
	// The old process, on its way out, ignores the signal now.
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	assert.Equal(t, cmd.Process.Pid, old.pid(t), "the old client is still served by the old process")
	old.c.Close()
	require.NoError(t, cmd.Wait(), "the old process stops once its client has left")
	var seen []string // the new process serves /debug/vars now, and the old one stopped
	for l := range cmd.Lines {
		seen = append(seen, l)
		if debugOn.MatchString(l) {
			break
		}
	}
	for range 10 {
		c := dialClient(t, addr)
		assert.Equal(t, next, c.pid(t), "a new client reaches the new process")
		c.c.Close()
	}

	require.NoError(t, syscall.Kill(next, syscall.SIGTERM))
	lines, err := cmd.Exit(t)
	require.NoError(t, err)
	require.NotEmpty(t, seen)
	assert.Regexp(t, debugOn, seen[len(seen)-1], "the new process serves /debug/vars")
	assert.Equal(t, []string{"redis: stopped", "redis: stopped"}, filter(append(seen, lines...), "redis: stop"))
}

// filter returns the lines that begin with prefix.
func filter(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestFanoutCommand runs the fanout load of bench.sh against the server,
// with subscribers on both loops: every subscriber reads every message
// (fanout fails otherwise), and it prints redis-benchmark's CSV.
func TestFanoutCommand(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	dir := cmdtest.Build(t, "./fanout")
	cmd := cmdtest.Start(t, dir, "fanout", nil, "-addr", ts.addr(), "-subscribers", "50", "-deliveries", "5000", "-window", "16", "-csv")
	lines, err := cmd.Exit(t)
	require.NoError(t, err, "%q", lines)
	require.Len(t, lines, 2)
	assert.Equal(t, `"test","rps"`, lines[0])
	assert.Regexp(t, `^"FANOUT","[0-9.]+"$`, lines[1])
}

// redis-cli shutdown stops the command as SIGTERM does: redis-cli prints
// nothing and exits 0, another client's connection is closed, and the
// command says it stopped and exits with status 0.
func TestCommandShutdown(t *testing.T) {
	cmd := cmdtest.Start(t, cmdtest.Build(t, "."), "redis", nil, "-addr", "tcp://127.0.0.1:0", "-loops", "2")
	addr := cmd.Expect(t, regexp.MustCompile(`^redis: listening on (.+)$`))[1]
	other := dialClient(t, addr)
	_, err := io.WriteString(other.c, "PING\r\n")
	require.NoError(t, err)
	line, err := other.r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line, "the other client is served")

	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), cmdtest.Deadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool(t, "redis-cli"), "-h", host, "-p", port, "shutdown").CombinedOutput()
	require.NoError(t, err, "redis-cli shutdown: %s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "redis-cli prints nothing")
	_, err = other.r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the other client's connection ends")
	cmd.Expect(t, regexp.MustCompile(`^\S+ \S+ redis: SHUTDOWN from client \d+ \(127\.0\.0\.1:\d+\)$`))
	lines, err := cmd.Exit(t)
	require.NoError(t, err, "%q", lines)
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	require.NotEmpty(t, lines)
	assert.Equal(t, "redis: stopped", lines[len(lines)-1])
}
