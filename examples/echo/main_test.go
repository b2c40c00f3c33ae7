//go:build unix

package main

import (
	"io"
	"net"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
