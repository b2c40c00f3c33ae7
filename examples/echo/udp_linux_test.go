//go:build linux && !sluice_std

package main

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
	"github.com/sluicenet/sluice/internal/uring"
)

// Over UDP every datagram comes back to its sender, on two loops, each
// with a socket of its own on the port (-reuseport) or sharing one, on
// epoll and io_uring; SIGTERM stops it cleanly.
func TestUDPEcho(t *testing.T) {
	for _, kind := range []string{"epoll", "uring"} {
		for _, reuse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reuseport=%v", kind, reuse), func(t *testing.T) {
				if kind == "uring" && uring.Probe() != nil {
					t.Skip("io_uring is not available here")
				}
				args := []string{"-addr", "udp://127.0.0.1:0", "-loops", "2", "-poller", kind}
				if reuse {
					args = append(args, "-reuseport")
				}
				cmd, addr := startEcho(t, nil, args...)
				for i := range 8 {
					c := udptest.Dial(t, "udp", addr)
					p := fmt.Sprintf("datagram %d", i)
					assert.Equal(t, p, string(udptest.RoundTrip(t, c, []byte(p))))
				}
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				lines, err := cmd.Exit(t)
				require.NoError(t, err, "%q", lines)
				assert.Equal(t, "echo: stopped", lines[len(lines)-1])
			})
		}
	}
}
