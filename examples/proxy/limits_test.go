package main

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/poller"
)

// Ten thousand proxied connections, opened and closed in batches, leave
// no descriptor behind in the proxy (nor in the echo server and the
// clients, which share its process).
func TestNoDescriptorLeft(t *testing.T) {
	const (
		total = 10_000
		// Each proxied connection holds four descriptors in this process
		// while open: the client's, the proxy's two and the echo
		// server's. 1,000 at once stay well under a limit of 20,000.
		batch = 1_000
	)
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		backend := startEcho(t, "")
		tp := startProxy(t, config{backends: []string{backend.addr}, poller: k})
		before := openFDs(t)
		peak := 0
		for done := 0; done < total; done += batch {
			conns := make([]net.Conn, batch)
			for i := range conns {
				c, err := net.DialTimeout("tcp", tp.addr(), deadline)
				require.NoError(t, err, "connection %d", done+i)
				conns[i] = c
			}
			// One byte each way proves every connection was relayed.
			var wg sync.WaitGroup
			errs := make(chan error, batch)
			for i, c := range conns {
				wg.Go(func() {
					defer c.Close()
					c.SetDeadline(time.Now().Add(deadline))
					if err := echo(c, []byte{byte(i)}); err != nil {
						errs <- fmt.Errorf("connection %d: %w", done+i, err)
					}
				})
			}
			peak = max(peak, openFDs(t))
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		}
		tp.settled(t)
		waitFor(t, func() bool { return openFDs(t) <= before }, func() string {
			return fmt.Sprintf("descriptors: %d before, %d after", before, openFDs(t))
		})
		assert.Greater(t, peak, before+batch, "the batches were not open at once: the test proves little")
		assert.Less(t, peak, 20_000, "descriptors held at once")
		s := tp.snapshot()
		assert.Equal(t, uint64(total), s.Engine.Accepted)
		assert.Equal(t, uint64(total), s.Engine.Dialed)
	})
}

// A client that sends without reading cannot grow the proxy's memory:
// with the echo server's replies piling up for it, the proxy stops reading
// the backend, the echo server stops reading the proxy, and the proxy
// stops reading the client, holding about a high-water mark and a read in
// each direction. Once the client reads, every byte arrives.
func TestClientThatNeverReads(t *testing.T) {
	const (
		size = 64 << 20
		mark = defaultBuffer
		// Each side of the pair may hold a mark and a read past it (one
		// read of 64 KiB, the engine's default); on io_uring a paused
		// connection may have received up to two read buffers besides.
		bound = 2*mark + 2*3*(64<<10)
	)
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		backend := startEcho(t, "")
		tp := startProxy(t, config{backends: []string{backend.addr}, poller: k})
		c := dial(t, tp.addr())
		upload := payload(7, size)
		sent := make(chan error, 1)
		go func() {
			_, err := c.Write(upload)
			sent <- err
		}()

		// Wait until both sides of the pair are held back: the whole
		// path has stopped.
		var s snapshot
		waitFor(t, func() bool { s = tp.snapshot(); return s.Held == 2 }, func() string {
			return fmt.Sprintf("%d sides held; buffered %d, relayed %d up and %d down", s.Held, s.Buffered, s.Up, s.Down)
		})
		held := s.Buffered
		require.LessOrEqual(t, held, bound, "bytes the proxy holds while the client does not read")
		require.Less(t, s.Up, uint64(size), "all was relayed: kernel buffers took it, and the test proves nothing")
		select {
		case err := <-sent:
			t.Fatalf("the client sent it all, without reading: %v", err)
		default:
		}

		got := make([]byte, size)
		n, err := io.ReadFull(c, got)
		require.NoError(t, err, "read %d of %d bytes", n, size)
		require.NoError(t, <-sent)
		require.Equal(t, -1, firstDiff(got, upload))
		s = tp.snapshot()
		assert.LessOrEqual(t, s.Peak, mark+64<<10, "the most one side held after a write")
		t.Logf("held back with %d bytes buffered; peak %d", held, s.Peak)
	})
}
