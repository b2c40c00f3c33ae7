//go:build unix

package main

import (
	"bufio"
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
