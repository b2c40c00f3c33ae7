//go:build unix

package main

import (
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
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
			// Each client connects and passes a byte each way, proving it
			// was relayed, then waits until the whole batch is open.
			var opened, closed sync.WaitGroup
			release := make(chan struct{})
			errs := make(chan error, batch)
			opened.Add(batch)
			for i := range batch {
				closed.Go(func() {
					c, err := net.DialTimeout("tcp", tp.addr(), deadline)
					if err == nil {
						defer c.Close()
						err = echo(c, []byte{byte(i)})
					}
					opened.Done()
					if err != nil {
						errs <- fmt.Errorf("connection %d: %w", done+i, err)
						return
					}
					<-release
				})
			}
			opened.Wait()
			peak = max(peak, openFDs(t))
			close(release)
			closed.Wait()
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

// A pair that moves nothing for -idle-timeout is closed, gracefully: the
// client reads the end of the stream.
func TestIdleTimeout(t *testing.T) {
	backend := startEcho(t, "")
	tp := startProxy(t, config{backends: []string{backend.addr}, idleTimeout: 100 * time.Millisecond})
	c := dial(t, tp.addr())
	require.NoError(t, echo(c, []byte("then nothing")))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n)
	require.ErrorIs(t, err, io.EOF)
	tp.settled(t)
	assert.Positive(t, tp.snapshot().Engine.IdleTimeouts)
	waitFor(t, func() bool { return len(backend.liveIDs()) == 0 }, func() string { return "the backend connection is still open" })
}

// A stop waits for pairs to finish for at most -grace, then resets those
// left: a client that neither reads nor ends cannot hold the proxy up.
func TestStopIsBounded(t *testing.T) {
	const (
		grace = 200 * time.Millisecond
		// Less than a lingering close reads before it gives up on the
		// client's end (sluice.DefaultLingerBytes), so that the client's
		// upload cannot end the close that way.
		size = 512 << 10
	)
	backend := startEcho(t, "")
	tp := startProxy(t, config{backends: []string{backend.addr}, grace: grace})
	// The client's receive buffer is small, so that the echo cannot all
	// reach it: the proxy holds some of it, in the engine or its socket,
	// which the client never acknowledges.
	stuck := dialSmall(t, tp.addr())
	_, err := stuck.Write(payload(9, size))
	require.NoError(t, err)
	waitFor(t, func() bool { return tp.snapshot().Up == size }, func() string { return "the upload was not relayed" })
	// The echo must have come back through the proxy, which the stop then
	// waits to deliver; on a busy machine the backend may not have echoed
	// anything yet when the upload is relayed.
	waitFor(t, func() bool { return tp.snapshot().Down == size }, func() string { return "the echo did not come back through the proxy" })

	start := time.Now()
	require.NoError(t, tp.stop())
	took := time.Since(start)
	assert.Less(t, took, grace+deadline/4, "the stop took too long")
	assert.GreaterOrEqual(t, took, grace-20*time.Millisecond, "the stop did not wait for the pair")
	_, err = io.Copy(io.Discard, stuck)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	require.Error(t, tp.stopErr, "the proxy records that it reset what was left, which the command reports")
	assert.Contains(t, tp.stopErr.Error(), "were reset")
}

// dialSmall connects to addr with a small receive buffer, set before the
// connect so that the window the client offers is small from the start.
func dialSmall(t *testing.T, addr string) net.Conn {
	d := net.Dialer{Timeout: deadline, Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		return err
	}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// A stop lets a pair finish for -drain: the proxy accepts no one from the
// start, and a reply the backend sends only after the stop began still
// reaches its client, which then ends the pair.
func TestStopDrainsPairs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	answer := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.ReadFull(c, make([]byte, 4))
		<-answer
		c.Write([]byte("pong"))
		c.Close()
		// The test's probes that the proxy took before it stopped
		// accepting, if any, end at once.
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tp := startProxy(t, config{backends: []string{ln.Addr().String()}, drain: deadline})
	c, err := net.Dial("tcp", tp.addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	waitFor(t, func() bool { return tp.snapshot().Pairs == 1 }, func() string { return "the pair did not form" })

	stopped := make(chan error, 1)
	go func() { stopped <- tp.stop() }()
	waitFor(t, func() bool {
		nc, err := net.Dial("tcp", tp.addr())
		if err == nil {
			nc.Close()
		}
		return err != nil
	}, func() string { return "the proxy still accepts" })
	close(answer)
	c.SetReadDeadline(time.Now().Add(deadline))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "pong", string(got))
	c.Close()
	require.NoError(t, <-stopped)
}
