//go:build unix

package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/cmdtest"
)

func TestMain(m *testing.M) { cmdtest.Main(m) }

var listeningLine = regexp.MustCompile(`^echo: listening on (.+)$`)

// startEcho runs the command with args and returns it and the address it
// listens on.
func startEcho(t *testing.T, env []string, args ...string) (*cmdtest.Cmd, string) {
	t.Helper()
	cmd := cmdtest.Start(t, cmdtest.Build(t, "."), "echo", env, args...)
	return cmd, cmd.Expect(t, listeningLine)[1]
}

// echoOnce sends p on c and reads it back.
func echoOnce(t *testing.T, c net.Conn, p string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(cmdtest.Deadline))
	_, err := io.WriteString(c, p)
	require.NoError(t, err)
	got := make([]byte, len(p))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, p, string(got))
}

// On SIGTERM the command closes its connections gracefully and says how
// its stop went before it exits: a client connected meanwhile reads the
// end of its stream, and the last line is the stop's.
func TestStopIsReported(t *testing.T) {
	cmd, addr := startEcho(t, nil, "-addr", "tcp://127.0.0.1:0", "-loops", "2")
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	echoOnce(t, c, "hello")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	rest, err := io.ReadAll(c)
	require.NoError(t, err, "the stop reset the client")
	assert.Empty(t, rest)
	lines, err := cmd.Exit(t)
	require.NoError(t, err, "%q", lines)
	require.NotEmpty(t, lines)
	assert.Equal(t, "echo: stopped", lines[len(lines)-1])
}

// With -debug-addr the command serves /debug/vars, the engine's counters
// under "sluice".
func TestDebugVars(t *testing.T) {
	cmd, addr := startEcho(t, nil, "-addr", "tcp://127.0.0.1:0", "-loops", "1", "-debug-addr", "127.0.0.1:0")
	url := cmd.Expect(t, regexp.MustCompile(`echo: debug on (http://\S+/debug/vars)$`))[1]
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	echoOnce(t, c, "hello")
	c.Close()
	var vars struct {
		Sluice  sluice.Stats
		Cmdline []string
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
		return vars.Sluice.ClosedByPeer == 1
	}, cmdtest.Deadline, time.Millisecond, "the client's close in %+v", &vars)
	assert.EqualValues(t, 1, vars.Sluice.Accepted)
	assert.EqualValues(t, 5, vars.Sluice.BytesIn)
	assert.Contains(t, vars.Cmdline, "-debug-addr")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_, err = cmd.Exit(t)
	require.NoError(t, err)
}

// With -gather-wait the command serves as without it: on io_uring its
// loops gather events for up to that long, elsewhere the flag is ignored.
func TestGatherWaitFlag(t *testing.T) {
	_, addr := startEcho(t, nil, "-addr", "tcp://127.0.0.1:0", "-loops", "1", "-poller", "auto", "-gather-wait", "100us")
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	for range 10 {
		echoOnce(t, c, "gathered")
	}
}
