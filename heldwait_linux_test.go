//go:build !sluice_std

package sluice

import (
	"bytes"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/pool"
)

// readier answers each message from another goroutine, which its
// OnTraffic readies (submit: a channel send, pool.Submit) and which writes
// the answer with AsyncWrite. That goroutine notes whether the loop had
// already begun to wait when it ran: where no P is spare, a loop holding
// its P in that wait would keep it from running until the wait ended.
type readier struct {
	BuiltinEventEngine
	loop   atomic.Pointer[eventloop]
	submit func(func())
	late   atomic.Int64 // answers whose goroutine ran once the loop waited
}

func (h *readier) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	msg := bytes.Clone(b)
	h.submit(func() {
		if h.loop.Load().sleeping.Load() {
			h.late.Add(1)
		}
		_ = c.AsyncWrite(msg, nil)
	})
	return None
}

// A goroutine that a callback of a gathering loop readies, by a channel
// send or pool.Submit, runs before the loop's held wait, with a single P:
// none of them finds the loop waiting, so each answer it writes costs no
// wake-up, and no answer waits for a hold to end.
func TestHeldWaitRunsReadiedGoroutines(t *testing.T) {
	channel := func(t *testing.T) func(func()) {
		work := make(chan func())
		go func() {
			for f := range work {
				f()
			}
		}()
		t.Cleanup(func() { close(work) })
		return func(f func()) { work <- f }
	}
	pooled := func(t *testing.T) func(func()) {
		p, err := pool.New()
		require.NoError(t, err)
		t.Cleanup(p.Release)
		return func(f func()) { require.NoError(t, p.Submit(f)) }
	}
	for name, submitter := range map[string]func(*testing.T) func(func()){"channel": channel, "pool": pooled} {
		t.Run(name, func(t *testing.T) {
			h := &readier{submit: submitter(t)}
			eng, addr := serveGathering(t, h)
			h.loop.Store(eng.e.loops[0])
			c := dial(t, addr)
			require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
			const trips = 100
			msg, got := []byte("readied"), make([]byte, len("readied"))
			for range trips {
				_, err := c.Write(msg)
				require.NoError(t, err)
				_, err = io.ReadFull(c, got)
				require.NoError(t, err)
				require.Equal(t, msg, got)
			}
			assert.Zero(t, h.late.Load(), "answers of %d whose goroutine ran once the loop waited", trips)
		})
	}
}

// With a P to spare a loop holds no wait, since the runtime leaves a
// waiting loop's P alone there.
func TestHeldWaitNeedsNoSpareP(t *testing.T) {
	var h heldWait
	h.count(runtime.GOMAXPROCS(0) - 1)
	assert.True(t, h.spare, "a P spare")
	h.count(runtime.GOMAXPROCS(0))
	assert.False(t, h.spare, "no P spare")
}
