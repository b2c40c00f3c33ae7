//go:build unix

package sluice

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/bytebufferpool"
)

// burst dials n connections at once from source (any local address when
// empty) and returns them once each has either been opened by the engine
// or closed by it at once.
func burst(t *testing.T, eng Engine, addr, source string, n int) []net.Conn {
	t.Helper()
	network, address, _ := strings.Cut(addr, "://")
	d := net.Dialer{Timeout: 5 * time.Second}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	before := eng.Stats()
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, err := d.Dial(network, address)
			if assert.NoError(t, err) {
				conns[i] = c
				t.Cleanup(func() { c.Close() })
			}
		})
	}
	wg.Wait()
	waitFor(t, 10*time.Second, func() bool { return seen(eng.Stats())-seen(before) == uint64(n) },
		func() string {
			return fmt.Sprintf("the engine saw %d of %d connections", seen(eng.Stats())-seen(before), n)
		})
	return conns
}

// seen counts the connections an engine admitted or rejected.
func seen(s Stats) uint64 { return s.Accepted + s.RejectedMaxConns + s.RejectedPerSource }

// closedAtOnce counts the connections the server closed: those that do
// not echo.
func closedAtOnce(conns []net.Conn) int {
	n := 0
	for _, c := range conns {
		if !echoes(c) {
			n++
		}
	}
	return n
}

// echoes reports whether c is open at an echoing server. A connection the
// server closed reads the end of the stream (or a reset, for the probe).
func echoes(c net.Conn) bool {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte{1}); err != nil {
		return false
	}
	_, err := io.ReadFull(c, make([]byte, 1))
	return err == nil
}

func TestMaxConnections(t *testing.T) {
	const limit = 20
	for _, m := range engineModes {
		if m.name != "round-robin" && m.name != "reuseport" {
			continue // several loops, with a shared listener and with one each
		}
		t.Run(m.name, func(t *testing.T) {
			h := newLifetimes()
			eng, addr := serveAddr(t, m.addr, h, append(m.opts, WithMaxConnections(limit))...)
			conns := burst(t, eng, addr, "", 2*limit)
			// Admitted is not yet opened, when another loop opens it.
			waitFor(t, 5*time.Second, func() bool { return eng.CountConnections() == limit },
				func() string { return fmt.Sprintf("%d of %d connections opened", eng.CountConnections(), limit) })
			s := eng.Stats()
			assert.EqualValues(t, limit, s.Accepted)
			assert.EqualValues(t, limit, s.RejectedMaxConns)
			assert.Equal(t, limit, s.Conns)
			assert.Len(t, h.ids, limit, "OnOpen ran for a rejected connection")
			assert.Equal(t, limit, closedAtOnce(conns))

			// A closed connection frees its place.
			conns[slices.IndexFunc(conns, echoes)].Close()
			waitFor(t, 5*time.Second, func() bool { return eng.Stats().Conns == limit-1 },
				func() string { return "the close was not seen" })
			burst(t, eng, addr, "", 1)
			assert.EqualValues(t, limit+1, eng.Stats().Accepted)
		})
	}
}

func TestMaxConnectionsPerSource(t *testing.T) {
	const limit = 5
	h := newLifetimes()
	eng, addr := serve(t, h, WithNumEventLoop(4), WithMaxConnectionsPerSource(limit))
	first := burst(t, eng, addr, "127.0.0.1", 2*limit)
	second := burst(t, eng, addr, "127.0.0.2", limit)
	s := eng.Stats()
	assert.EqualValues(t, 2*limit, s.Accepted)
	assert.EqualValues(t, limit, s.RejectedPerSource)
	assert.Equal(t, limit, closedAtOnce(first))
	assert.Zero(t, closedAtOnce(second), "one source's limit held another back")

	// Closing a source's connections frees its places.
	for _, c := range first {
		c.Close()
	}
	waitFor(t, 5*time.Second, func() bool { return eng.Stats().Conns == limit },
		func() string { return "the closes were not seen" })
	burst(t, eng, addr, "127.0.0.1", limit)
	assert.EqualValues(t, 3*limit, eng.Stats().Accepted)
}

func TestMaxInboundBuffered(t *testing.T) {
	const limit = 64 << 10
	h := newLifetimes()
	h.traffic = func(Conn) Action { return None } // consumes nothing
	eng, addr := serve(t, h, WithNumEventLoop(1), WithMaxInboundBuffered(limit))
	c := dial(t, addr)
	id := h.next(t)
	go c.Write(make([]byte, 1<<20)) // fails once the server closes
	_, err := h.waitClosed(t, id)
	require.ErrorIs(t, err, ErrInboundTooLarge)
	assert.EqualValues(t, 1, eng.Stats().InboundTooLarge)
}

func TestWipeBuffers(t *testing.T) {
	for _, wipe := range []bool{false, true} {
		e := &engine{opts: defaultOptions()}
		WithWipeBuffers(wipe)(&e.opts)
		b := &bytebufferpool.ByteBuffer{B: []byte("secret")}
		b.B = b.B[:3]
		e.recycle(&e.inPool, b)
		assert.Equal(t, wipe, string(b.B[:6]) == "\x00\x00\x00\x00\x00\x00", "wipe %v: %q", wipe, b.B[:6])
	}
}

func TestTableCapacity(t *testing.T) {
	o := defaultOptions()
	WithMaxConnections(100)(&o)
	assert.Equal(t, 100, tableCapacity(&o))
	o = defaultOptions()
	n := tableCapacity(&o)
	assert.Positive(t, n)
	assert.LessOrEqual(t, n, maxTableSlots)
}
