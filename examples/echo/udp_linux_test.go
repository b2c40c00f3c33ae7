//go:build linux && !sluice_std

package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/cmdtest"
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
				ra, err := net.ResolveUDPAddr("udp", addr)
				require.NoError(t, err)
				for i := range 8 {
					c, err := net.DialUDP("udp", nil, ra)
					require.NoError(t, err)
					p := fmt.Sprintf("datagram %d", i)
					assert.Equal(t, p, string(udpRoundTrip(t, c, []byte(p))))
					c.Close()
				}
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				lines, err := cmd.Exit(t)
				require.NoError(t, err, "%q", lines)
				assert.Equal(t, "echo: stopped", lines[len(lines)-1])
			})
		}
	}
}

// udpRoundTrip sends p on c and returns the datagram that comes back,
// sending again when none comes within a second: loopback may drop a
// datagram on a loaded machine.
func udpRoundTrip(t *testing.T, c *net.UDPConn, p []byte) []byte {
	t.Helper()
	buf := make([]byte, 1<<16)
	for deadline := time.Now().Add(cmdtest.Deadline); time.Now().Before(deadline); {
		_, err := c.Write(p)
		require.NoError(t, err)
		c.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		require.NoError(t, err)
		return buf[:n]
	}
	t.Fatal("no answer")
	return nil
}
