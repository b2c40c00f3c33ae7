//go:build unix

package sluice

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyUpdateFlood has a TLS 1.3 peer of addr, which never reads, send
// KeyUpdates that each ask for one in return, 16 at a time (crypto/tls's
// bound on records that carry no data) between one-byte data records,
// until it has sent total bytes or the server stops reading it. It returns
// the server's connection, its unsent output at its highest, sampled while
// the peer writes, and how much the peer sent.
func keyUpdateFlood(t *testing.T, h *lifetimes, addr string, total int) (id uint64, most, sent int) {
	_, raw, s := rawTLS13(t, addr)
	require.NoError(t, raw.(*net.TCPConn).SetReadBuffer(16<<10))
	require.NoError(t, raw.(*net.TCPConn).SetWriteBuffer(16<<10))
	id = h.next(t)
	sc := h.conn(id)
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sent < total {
			var batch []byte
			for range 16 {
				batch = append(batch, s.keyUpdate(true)...)
			}
			batch = append(batch, s.data([]byte("x"))...)
			raw.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
			n, err := raw.Write(batch)
			sent += n
			if err != nil {
				return // the server stopped reading, or closed
			}
		}
	}()
	for {
		peak.Store(max(peak.Load(), int64(sc.OutboundQueued())))
		select {
		case <-done:
			peak.Store(max(peak.Load(), int64(sc.OutboundQueued())))
			return id, int(peak.Load()), sent
		case <-time.After(time.Millisecond):
		}
	}
}

// TestTLSKeyUpdatesFromAPeerThatNeverReads: each KeyUpdate that asks for
// one back has the record layer write a record the handler never sees,
// so the handler cannot bound it. A peer that sends them and never reads
// holds at most the backpressure mark, or, with backpressure off, at most
// WithMaxOutbound's bound: past it the connection is closed with
// ErrOutboundFull.
func TestTLSKeyUpdatesFromAPeerThatNeverReads(t *testing.T) {
	const bound = 128 << 10
	const slack = 64 << 10 // one read's replies, taken before the loop looks
	discard := func(c Conn) Action { c.Discard(-1); return None }
	t.Run("backpressure", func(t *testing.T) {
		h := newLifetimes()
		h.traffic = discard
		_, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1),
			WithBackpressureMark(bound), WithSocketSendBuffer(16<<10), WithSocketRecvBuffer(16<<10))
		_, most, sent := keyUpdateFlood(t, h, addr, 2<<20)
		assert.Less(t, sent, 2<<20, "the server read all the peer sent")
		assert.LessOrEqual(t, most, bound+slack, "unsent output")
	})
	t.Run("no backpressure", func(t *testing.T) {
		h := newLifetimes()
		h.traffic = discard
		eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1),
			WithBackpressure(false), WithMaxOutbound(bound), WithSocketSendBuffer(16<<10), WithSocketRecvBuffer(16<<10))
		id, most, _ := keyUpdateFlood(t, h, addr, 2<<20)
		assert.LessOrEqual(t, most, bound+slack, "unsent output")
		_, err := h.waitClosed(t, id)
		assert.ErrorIs(t, err, ErrOutboundFull)
		assert.NotZero(t, eng.Stats().OutboundRefused)
	})
}
