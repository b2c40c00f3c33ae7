//go:build linux

package sluice

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTLSPauseRead: records that arrive while reading is paused reach the
// handler only once it resumes.
func TestTLSPauseRead(t *testing.T) {
	h := newLifetimes()
	var calls sync.Map
	h.traffic = func(c Conn) Action {
		b, _ := c.Next(-1)
		calls.Store(string(b), true)
		c.Write(b)
		if string(b) == "pause" {
			c.PauseRead()
		}
		return None
	}
	_, addr := serve(t, h, WithTLS(serverTLS(t)))
	c := dialTLS(t, addr, clientTLS(t, 0))
	_, err := c.Write([]byte("pause"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 5))
	require.NoError(t, err)
	sc := h.conn(h.next(t))
	_, err = c.Write([]byte("later"))
	require.NoError(t, err)
	assert.True(t, holdsFor(300*time.Millisecond, func() bool {
		_, ok := calls.Load("later")
		return !ok
	}), "OnTraffic ran while paused")
	require.NoError(t, sc.Loop().Execute(func() { sc.ResumeRead() }))
	got := make([]byte, 5)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "later", string(got))
}
