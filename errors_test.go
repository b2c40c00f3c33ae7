//go:build unix

package sluice

import (
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sluice's errors answer the errors.Is idioms Go network code already
// uses, beside Sluice's own sentinels.
func TestErrorsMatchTheStandardLibrarys(t *testing.T) {
	assert.ErrorIs(t, ErrConnClosed, net.ErrClosed)
	for _, err := range []error{ErrIdleTimeout, ErrReadTimeout, ErrWriteTimeout} {
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		var ne net.Error
		if assert.ErrorAs(t, err, &ne) {
			assert.True(t, ne.Timeout(), "%v", err)
		}
		assert.NotErrorIs(t, err, net.ErrClosed)
	}
	assert.NotErrorIs(t, ErrKilled, os.ErrDeadlineExceeded)
}

// A peer's reset reaches OnClose as net.Conn would report it: an
// *os.SyscallError of "read" wrapping ECONNRESET.
func TestResetReachesOnCloseAsASyscallError(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		_, addr := serve(t, h, p, WithNumEventLoop(1))
		c := dial(t, addr).(*net.TCPConn)
		id := h.next(t)
		_, err := c.Write([]byte("x"))
		require.NoError(t, err)
		got := make([]byte, 1)
		_, err = c.Read(got)
		require.NoError(t, err)
		require.NoError(t, c.SetLinger(0))
		c.Close()
		_, err = h.waitClosed(t, id)
		var se *os.SyscallError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "read", se.Syscall)
		assert.ErrorIs(t, err, syscall.ECONNRESET)
		return outcome{Closed: []string{err.Error()}}
	})
}
