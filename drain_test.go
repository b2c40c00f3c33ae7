//go:build unix

package sluice

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// shutdownCount is a lifetimes that records how many connections had
// closed when OnShutdown ran.
type shutdownCount struct {
	*lifetimes
	closedAtShutdown chan int
}

func (h shutdownCount) OnShutdown(Engine) { h.closedAtShutdown <- h.closedCount() }

func TestStopDrainsEverything(t *testing.T) {
	const busy, idle = 20, 20
	payload := randomBytes(rand.New(rand.NewPCG(10, 11)), 256<<10)
	h := shutdownCount{newLifetimes(), make(chan int, 1)}
	sent := make(chan struct{}, busy)
	h.traffic = (&bulk{payload: payload, sent: sent}).OnTraffic
	// Small socket buffers, so that the output waits in the engine.
	eng, addr := serve(t, h, WithNumEventLoop(2), WithSocketSendBuffer(32<<10))
	var clients []net.Conn
	for range busy {
		c := dial(t, addr)
		c.(*net.TCPConn).SetReadBuffer(32 << 10)
		_, err := c.Write([]byte("go"))
		require.NoError(t, err)
		clients = append(clients, c)
	}
	for range busy {
		<-sent
	}
	for range idle {
		clients = append(clients, dial(t, addr))
	}
	waitFor(t, 5*time.Second, func() bool { return eng.CountConnections() == busy+idle },
		func() string { return "connections not opened" })

	stopped := make(chan error, 1)
	go func() { stopped <- eng.Stop(context.Background()) }()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			got, err := io.ReadAll(c)
			assert.NoError(t, err)
			c.Close() // as a client does at the end of the stream, which ends the server's lingering close
			if i < busy {
				assert.True(t, bytes.Equal(payload, got), "client %d got %d of %d bytes", i, len(got), len(payload))
			} else {
				assert.Empty(t, got)
			}
		})
	}
	wg.Wait()
	require.NoError(t, <-stopped)
	assert.Equal(t, busy+idle, <-h.closedAtShutdown, "OnShutdown ran before every OnClose")
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, cl := range h.closed {
		assert.NoError(t, cl.err, "connection %#x", id)
	}
}

func TestStopDeadlineResetsWhatIsLeft(t *testing.T) {
	h := newLifetimes()
	b := &bulk{payload: make([]byte, 8<<20), sent: make(chan struct{}, 1)}
	h.traffic = b.OnTraffic
	eng, addr := serve(t, h, WithNumEventLoop(1), WithSocketSendBuffer(64<<10))
	client := dial(t, addr)
	client.(*net.TCPConn).SetReadBuffer(64 << 10)
	id := h.next(t)
	client.Write([]byte("go"))
	<-b.sent
	// The client reads nothing until the deadline passes, so the drain
	// cannot finish by itself.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, eng.Stop(ctx), context.DeadlineExceeded)
	require.Zero(t, eng.CountConnections())
	_, err := h.waitClosed(t, id)
	require.ErrorIs(t, err, ErrEngineStopped)
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(client)
	require.ErrorIs(t, err, syscall.ECONNRESET)
}

// BenchmarkDrain measures Stop on an engine holding idle connections, one
// loop per CPU. It holds 4,000 connections, not the 10,000 of the target:
// both ends live in this process, which may hold 20,000 descriptors.
func BenchmarkDrain(b *testing.B) {
	const conns = 4000
	for range b.N {
		b.StopTimer()
		eng, addr := serve(b, echoHandler{})
		fds := make([]int, conns)
		for i := range fds {
			fd, err := connectRaw(addr)
			require.NoError(b, err)
			fds[i] = fd
		}
		waitFor(b, 30*time.Second, func() bool { return eng.CountConnections() == conns },
			func() string { return "connections not opened" })
		b.StartTimer()
		require.NoError(b, eng.Stop(context.Background()))
		b.StopTimer()
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/conns, "ns/conn")
}

// A stopped engine lets go of its address at once, so a server restarted
// straight away can listen there. On io_uring an armed accept used to hold
// its listener bound until the kernel tore the ring down, after Run had
// returned, and about one restart in three failed with EADDRINUSE.
func TestRestartOnTheSameAddress(t *testing.T) {
	for _, m := range engineModes {
		t.Run(m.name, func(t *testing.T) {
			addr := modeAddr(t, m.addr)
			for i := range 5 {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					_, addr = serveAddr(t, addr, echoHandler{}, m.opts...)
					require.NoError(t, echoOnce(dial(t, addr), []byte("hello")))
				})
			}
		})
	}
}

// A stop the handler asks for, by returning Shutdown, is bounded by
// WithShutdownTimeout: a peer that never reads what it has queued is
// reset once the timeout passes, and the engine stops.
func TestShutdownActionTimeout(t *testing.T) {
	h := shutdownCount{newLifetimes(), make(chan int, 1)}
	asked := make(chan time.Time, 1)
	h.traffic = flood(Shutdown, asked)
	const timeout = 200 * time.Millisecond
	_, addr := serve(t, h, WithNumEventLoop(1), WithSocketSendBuffer(32<<10), WithShutdownTimeout(timeout))
	c := dial(t, addr)
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	id := h.next(t)
	_, err := c.Write([]byte("stop"))
	require.NoError(t, err)
	select {
	case <-h.closedAtShutdown:
	case <-time.After(10 * time.Second):
		t.Fatal("the engine did not stop: a peer that never reads held it")
	}
	_, err = h.waitClosed(t, id)
	require.ErrorIs(t, err, ErrEngineStopped)
	cl, _ := h.closing(id)
	assert.GreaterOrEqual(t, cl.at.Sub(<-asked), timeout, "reset before the timeout")
}

// flood is an OnTraffic that queues far more than any socket buffer takes,
// notes when the first time, and returns a.
func flood(a Action, at chan<- time.Time) func(Conn) Action {
	p := make([]byte, 32<<20)
	return func(c Conn) Action {
		c.Discard(-1)
		c.Write(p)
		select {
		case at <- time.Now():
		default:
		}
		return a
	}
}

// shutdownOnClose asks to stop the engine whenever a connection closes.
type shutdownOnClose struct{ *lifetimes }

func (h shutdownOnClose) OnClose(c Conn, err error) Action {
	h.lifetimes.OnClose(c, err)
	return Shutdown
}

// A stop begun by Engine.Stop keeps its context's bound when a callback
// returns Shutdown during it: WithShutdownTimeout bounds only a stop the
// handler begins.
func TestShutdownActionDuringStop(t *testing.T) {
	h := shutdownOnClose{newLifetimes()}
	flooding := make(chan time.Time, 1)
	h.traffic = flood(None, flooding)
	eng, addr := serve(t, h, WithNumEventLoop(1), WithSocketSendBuffer(32<<10), WithShutdownTimeout(50*time.Millisecond))
	flooded := dial(t, addr)
	flooded.(*net.TCPConn).SetReadBuffer(4 << 10)
	h.next(t)
	_, err := flooded.Write([]byte("flood me"))
	require.NoError(t, err)
	select { // the stop must find the flood's output queued
	case <-flooding:
	case <-time.After(5 * time.Second):
		t.Fatal("the flooded connection was not flooded")
	}
	dial(t, addr) // idle: it closes at once when the stop begins, and its OnClose returns Shutdown
	h.next(t)
	const bound = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, eng.Stop(ctx), context.DeadlineExceeded, "the stop ended before its context")
	assert.GreaterOrEqual(t, time.Since(start), bound)
}

// StopAccepting refuses new clients at once, leaves the ones it has to
// finish (they still echo), returns once the last has gone, and, when
// ctx ends first, returns its error and leaves the engine serving.
func TestStopAccepting(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serve(t, echoHandler{}, p, WithNumEventLoop(2))
		first, second := dial(t, addr), dial(t, addr)
		require.NoError(t, echoOnce(first, []byte("before")))

		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, eng.StopAccepting(short), context.DeadlineExceeded)
		_, err := net.DialTimeout("tcp", addr, time.Second)
		require.Error(t, err, "a client was accepted after StopAccepting")
		require.NoError(t, echoOnce(first, []byte("still served")))

		done := make(chan error, 1)
		go func() { done <- eng.StopAccepting(context.Background()) }()
		require.NoError(t, echoOnce(second, []byte("still served")))
		first.Close()
		second.Close()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("StopAccepting did not return once every client had gone")
		}
		assert.Zero(t, eng.CountConnections())
		return outcome{Stats: closedStats(t, eng)}
	})
}

// Once StopAccepting has begun, a connection the handler closes with
// nothing unread and nothing its peer has yet to acknowledge closes at
// once, with an end of stream, instead of lingering for the peer's: how a
// server going away closes its idle keep-alive clients, as Stop does.
// Before the stop the same close lingers while the peer stays.
func TestStopAcceptingClosesIdleAtOnce(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		eng, addr := serve(t, h, p, WithLingeringClose(time.Minute, DefaultLingerBytes))
		before := dial(t, addr)
		require.NoError(t, echoOnce(before, []byte("idle")))
		lingering := h.next(t)
		require.NoError(t, h.conn(lingering).Close())
		assert.True(t, holdsFor(300*time.Millisecond, func() bool {
			_, closed := h.closing(lingering)
			return !closed
		}), "an idle connection closed before any stop did not linger")

		idle := dial(t, addr)
		require.NoError(t, echoOnce(idle, []byte("idle")))
		id := h.next(t)
		now, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, eng.StopAccepting(now), context.Canceled)
		require.NoError(t, h.conn(id).Close())
		_, err := h.waitClosed(t, id)
		require.NoError(t, err)
		idle.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = idle.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF, "the idle client was not sent an end of stream")
		_, closed := h.closing(lingering)
		assert.False(t, closed, "the connection closed before the stop stopped lingering")
		before.Close()
		return outcome{}
	})
}
