//go:build unix

package main

import (
	"fmt"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/cmdtest"
)

func TestMain(m *testing.M) { cmdtest.Main(m) }

// The command serves its client on either poller, and on SIGTERM says
// how its stop went before it exits.
func TestCommandStopIsReported(t *testing.T) {
	for _, kind := range []string{"epoll", "auto"} {
		t.Run(kind, func(t *testing.T) {
			dir := cmdtest.Build(t, ".")
			cmd := cmdtest.Start(t, dir, "offload", nil, "-addr", "tcp://127.0.0.1:0", "-loops", "2", "-poller", kind, "-delay", "1ms")
			addr := cmd.Expect(t, regexp.MustCompile(`^offload: listening on (.+)$`))[1]
			client := cmdtest.Start(t, dir, "offload", nil, "-client", "-addr", "tcp://"+addr, "-n", "100", "-c", "10")
			lines, err := client.Exit(t)
			require.NoError(t, err, "%q", lines)
			assert.Regexp(t, `: 100 answered, 0 shed;`, fmt.Sprint(lines))

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			lines, err = cmd.Exit(t)
			require.NoError(t, err, "%q", lines)
			require.NotEmpty(t, lines)
			assert.Equal(t, "offload: stopped", lines[len(lines)-1])
		})
	}
}
