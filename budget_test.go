//go:build unix

package sluice

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/sysmem"
)

// TestInboundBudget holds the engine to its inbound budget: clients each
// hold a partial frame well under the per-connection bound, and when one
// more takes the total past the budget, the connection holding the most is
// reset, not the one that tipped it; when that one grows past the others
// and tips it again, it is reset in turn. The rest are served as before and
// complete their frames.
//
// A connection counts the capacity of its buffer, which its growth leaves
// up to a quarter above what it holds, so the sizes keep clear margins:
// A, B and C hold 10, 6 and 4 MiB (20 to 26 MiB counted) under a budget of
// 28 MiB. T then sends a frame of 40 MiB: it tips the budget while it holds
// at most 8 MiB, less than A, which is reset; then, once it holds at least
// 15 MiB, more than B or C, it tips it again and is reset itself.
func TestInboundBudget(t *testing.T) {
	const mib = 1 << 20
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		h.traffic = ackFrames
		eng, addr := serve(t, h, p, WithNumEventLoop(2), WithInboundBudget(28*mib))

		held := 0
		stage := func(n int) (*frameSender, uint64) {
			s, err := dialFrames(addr)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			id := h.next(t)
			require.NoError(t, s.begin(n+mib, n))
			held += n
			waitFor(t, 10*time.Second, func() bool { return eng.Stats().InboundHeld >= int64(held) },
				func() string { return fmt.Sprintf("holding %d bytes, %d sent", eng.Stats().InboundHeld, held) })
			return s, id
		}
		a, idA := stage(10 * mib)
		b, idB := stage(6 * mib)
		c, idC := stage(4 * mib)
		assert.Zero(t, eng.Stats().InboundOverBudget, "under the budget")

		tipper, err := dialFrames(addr)
		require.NoError(t, err)
		defer tipper.Close()
		idT := h.next(t)
		go tipper.begin(48*mib, 40*mib) // fails once the server resets it

		var closed []string
		for _, id := range []uint64{idA, idT} {
			_, err := h.waitClosed(t, id)
			require.ErrorIs(t, err, ErrInboundOverBudget)
			closed = append(closed, errName(err))
		}
		for _, id := range []uint64{idB, idC} {
			_, gone := h.closing(id)
			require.False(t, gone, "a connection holding less than the largest was closed")
		}
		for _, s := range []*frameSender{b, c} {
			require.NoError(t, s.body(mib))
			require.NoError(t, s.acked())
		}
		a.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = a.Read(make([]byte, 1))
		require.Error(t, err, "the reset connection reads on")

		st := eng.Stats()
		assert.EqualValues(t, 2, st.InboundOverBudget)
		assert.Zero(t, st.InboundTooLarge)
		assert.Zero(t, st.InboundHeld, "held after every frame left is whole")
		return outcome{Closed: closed, Stats: Stats{InboundOverBudget: st.InboundOverBudget}}
	})
}

// TestInboundBudgetOff holds the engine to no budget when told so: the
// same clients as in TestInboundBudget, and more, are all served.
func TestInboundBudgetOff(t *testing.T) {
	const mib = 1 << 20
	h := newLifetimes()
	h.traffic = ackFrames
	eng, addr := serve(t, h, WithNumEventLoop(2), WithInboundBudget(0))
	require.Zero(t, eng.e.opts.inBudget)
	var senders []*frameSender
	for _, n := range []int{10, 6, 4, 40} {
		s, err := dialFrames(addr)
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.begin((n+1)*mib, n*mib))
		senders = append(senders, s)
	}
	waitFor(t, 10*time.Second, func() bool { return eng.Stats().InboundHeld >= 60*mib },
		func() string { return fmt.Sprintf("holding %d bytes", eng.Stats().InboundHeld) })
	for _, s := range senders {
		require.NoError(t, s.body(mib))
		require.NoError(t, s.acked())
	}
	assert.Zero(t, eng.Stats().InboundOverBudget)
}

// TestInboundBudgetDefault holds the default budget to a quarter of the
// memory the process may use: the machine's, or the Go runtime's soft
// limit where that is lower.
func TestInboundBudgetDefault(t *testing.T) {
	quarter := func(limit int64) int {
		total := sysmem.Total()
		if limit != math.MaxInt64 && (total == 0 || uint64(limit) < total) {
			total = uint64(limit)
		}
		return int(total / 4)
	}
	eng, _ := serve(t, BuiltinEventEngine{})
	assert.Equal(t, quarter(debug.SetMemoryLimit(-1)), eng.e.opts.inBudget)
	if sysmem.Total() == 0 && debug.SetMemoryLimit(-1) == math.MaxInt64 {
		assert.Zero(t, eng.e.opts.inBudget, "no budget where the system tells no memory size")
	}

	limit := debug.SetMemoryLimit(1 << 30)
	eng, _ = serve(t, BuiltinEventEngine{})
	debug.SetMemoryLimit(limit)
	assert.Equal(t, quarter(1<<30), eng.e.opts.inBudget, "a quarter of GOMEMLIMIT, or of less")
	if total := sysmem.Total(); total == 0 || total > 1<<30 {
		assert.Equal(t, 256<<20, eng.e.opts.inBudget)
	}
}

// mebibyte is what amplify answers each byte with.
var mebibyte = bytes.Repeat([]byte{'m'}, 1<<20)

// amplify answers each byte it reads with a MiB: a client that asks for
// large answers, as a GET of a large value does.
func amplify(c Conn) Action {
	b, _ := c.Next(-1)
	for range b {
		if _, err := c.Write(mebibyte); err != nil {
			break
		}
	}
	return None
}

// TestOutboundBudget holds the engine to its default outbound budget, a
// quarter of the memory the process may use (here GOMEMLIMIT's 256 MiB,
// set while the engine starts): clients ask for large answers and never
// read them, each within the per-connection bounds (WithMaxOutbound,
// the backpressure mark), and when one more takes what they hold together
// past the budget, the connection holding the most is reset and its
// output dropped. The rest are served as before and get every byte.
//
// Without the budget the engine held 80 MiB of unsent output for these
// six clients, and would hold 32 MiB for each more.
func TestOutboundBudget(t *testing.T) {
	const mib = 1 << 20
	if total := sysmem.Total(); total != 0 && total < 1<<30 {
		t.Skip("a machine with less than 1 GiB sets a lower budget")
	}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		h.traffic = amplify
		limit := debug.SetMemoryLimit(256 * mib)
		// Small send buffers, so that what the clients are sent stays in
		// the engine, where the budget applies, rather than in the kernel.
		eng, addr := serve(t, h, p, WithNumEventLoop(2), WithSocketSendBuffer(64<<10))
		debug.SetMemoryLimit(limit)
		require.Equal(t, 64*mib, eng.e.opts.outBudget)

		ask := func(n int) (net.Conn, uint64) {
			c := dial(t, addr)
			id := h.next(t)
			_, err := c.Write(make([]byte, n))
			require.NoError(t, err)
			return c, id
		}
		var holders []net.Conn
		for range 5 {
			c, id := ask(10)
			holders = append(holders, c)
			waitFor(t, 10*time.Second, func() bool { return h.conn(id).OutboundQueued() >= 9*mib },
				func() string { return fmt.Sprintf("holding %d bytes", h.conn(id).OutboundQueued()) })
		}
		assert.Zero(t, eng.Stats().OutboundOverBudget, "under the budget")

		_, idT := ask(30)
		_, err := h.waitClosed(t, idT)
		require.ErrorIs(t, err, ErrOutboundOverBudget)
		// OnClose runs before the connection's share is taken off.
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().OutboundHeld <= 64*mib },
			func() string {
				return fmt.Sprintf("%d bytes held once the largest was reset", eng.Stats().OutboundHeld)
			})
		st := eng.Stats()
		assert.EqualValues(t, 1, st.OutboundOverBudget)
		for _, c := range holders {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err := io.ReadFull(c, make([]byte, 10*mib))
			require.NoError(t, err, "a client under the budget was not served")
		}
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().OutboundHeld == 0 },
			func() string { return fmt.Sprintf("%d bytes held once all were read", eng.Stats().OutboundHeld) })
		return outcome{Closed: []string{errName(err)}, Stats: Stats{OutboundOverBudget: st.OutboundOverBudget}}
	})
}
