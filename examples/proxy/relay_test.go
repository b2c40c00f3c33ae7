//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
)

// echoMany runs conns clients at once, each sending size bytes through
// the proxy to the echo server and checking the echo.
func echoMany(t *testing.T, addr string, conns, size int) {
	t.Helper()
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, deadline)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(deadline))
			if err := echo(c, payload(uint64(i), size)); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Every byte of many clients' streams, large and small, comes back whole
// and in order through the proxy and an echo server.
func TestEcho(t *testing.T) {
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		backend := startEcho(t, "")
		tp := startProxy(t, config{backends: []string{backend.addr}, poller: k})
		var clients, bytes int
		for _, tc := range []struct{ conns, size int }{{100, 1 << 20}, {1000, 64}} {
			t.Run(fmt.Sprintf("%dx%d", tc.conns, tc.size), func(t *testing.T) {
				echoMany(t, tp.addr(), tc.conns, tc.size)
				clients += tc.conns
				bytes += tc.conns * tc.size
			})
		}
		tp.settled(t)
		s := tp.snapshot()
		assert.Equal(t, uint64(bytes), s.Up, "bytes relayed to the backend")
		assert.Equal(t, s.Up, s.Down, "bytes relayed back")
		assert.Equal(t, int64(clients), backend.opened.Load(), "backend connections")
	})
}

// A client that shuts down its write side after an upload still reads the
// whole echo, then the end of the stream; and a backend that ends first
// still receives all the client sends after that.
func TestHalfClose(t *testing.T) {
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		t.Run("client ends first", func(t *testing.T) {
			backend := startEcho(t, "")
			tp := startProxy(t, config{backends: []string{backend.addr}, poller: k})
			c := dial(t, tp.addr())
			upload := payload(1, 4<<20)
			sent := make(chan error, 1)
			go func() {
				_, err := c.Write(upload)
				if err == nil {
					err = c.CloseWrite()
				}
				sent <- err
			}()
			got, err := io.ReadAll(c)
			require.NoError(t, err, "after %d bytes", len(got))
			require.NoError(t, <-sent)
			require.Equal(t, -1, firstDiff(got, upload), "%d of %d bytes came back", len(got), len(upload))
			tp.settled(t)
		})
		t.Run("backend ends first", func(t *testing.T) {
			backend := startGreeter(t)
			tp := startProxy(t, config{backends: []string{backend.addr}, poller: k})
			c := dial(t, tp.addr())
			got, err := io.ReadAll(c) // the greeting, then the backend's end
			require.NoError(t, err)
			require.Equal(t, greeting, string(got))
			upload := payload(2, 1<<20)
			_, err = c.Write(upload)
			require.NoError(t, err)
			require.NoError(t, c.CloseWrite())
			waitFor(t, func() bool { return backend.received.Load() == int64(len(upload)) },
				func() string {
					return fmt.Sprintf("the backend received %d of %d bytes", backend.received.Load(), len(upload))
				})
			tp.settled(t)
		})
	})
}

// greeting is what a greeter sends before it ends its side.
const greeting = "hello, then nothing more from me\r\n"

// greeter is a backend that greets each client, shuts down its write
// side, and counts what the client sends until it ends.
type greeter struct {
	sluice.BuiltinEventEngine
	addr     string
	received atomic.Int64
}

// startGreeter runs a greeter on a free port of 127.0.0.1 until the test
// ends.
func startGreeter(t *testing.T) *greeter {
	g := &greeter{}
	booted := make(chan sluice.Engine, 1)
	done := make(chan error, 1)
	go func() {
		done <- sluice.Run(&greeterBooter{g, booted}, "tcp://127.0.0.1:0", sluice.WithNumEventLoop(1), sluice.WithHalfClose(true))
	}()
	var eng sluice.Engine
	select {
	case eng = <-booted:
	case err := <-done:
		t.Fatalf("the greeter did not start: %v", err)
	}
	g.addr = eng.Addrs()[0].String()
	t.Cleanup(func() { stopEngine(t, eng, done) })
	return g
}

// greeterBooter hands a greeter's engine over as it boots.
type greeterBooter struct {
	*greeter
	booted chan sluice.Engine
}

// OnBoot passes the engine on.
func (b *greeterBooter) OnBoot(eng sluice.Engine) sluice.Action {
	b.booted <- eng
	return sluice.None
}

// OnOpen greets the client and shuts down the greeter's side.
func (g *greeter) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	c.Write([]byte(greeting))
	c.CloseWrite()
	return nil, sluice.None
}

// OnTraffic counts and drops what the client sends.
func (g *greeter) OnTraffic(c sluice.Conn) sluice.Action {
	n, _ := c.Discard(-1)
	g.received.Add(int64(n))
	return sluice.None
}

// A backend that resets mid-stream resets its clients, and leaves those
// of the other backend alone; new clients go to the other backend once
// the first refuses them, and it is marked down.
func TestBackendKilled(t *testing.T) {
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		required := sluice.WithProxyProtocol(sluice.ProxyRequired, 0)
		doomed, healthy := startEcho(t, "", required), startEcho(t, "", required)
		tp := startProxy(t, config{
			backends:  []string{doomed.addr, healthy.addr},
			poller:    k,
			sendProxy: sendProxyV2, // so that a backend's RemoteAddr names the client
			maxFails:  2,
			downTime:  time.Hour,
		})

		// Clients stream to both backends, each checking its echo.
		const clients = 8
		type result struct {
			local string
			err   error
		}
		results := make(chan result, clients)
		stop := make(chan struct{})
		var started sync.WaitGroup
		conns := make([]net.Conn, clients)
		for i := range clients {
			c := dial(t, tp.addr())
			conns[i] = c
			started.Add(1)
			go func() {
				chunk := payload(uint64(i), 32<<10)
				first := true
				var err error
				for err == nil {
					err = echo(c, chunk)
					if first {
						started.Done()
						first = false
					}
					select {
					case <-stop:
						results <- result{c.LocalAddr().String(), err}
						return
					default:
					}
				}
				if first {
					started.Done()
				}
				results <- result{c.LocalAddr().String(), err}
			}()
		}
		started.Wait()
		require.Equal(t, int64(clients/2), doomed.opened.Load(), "round robin: half the clients on each backend")

		// The doomed backend resets every connection and stops listening.
		onDoomed := map[string]bool{}
		for _, a := range doomed.remoteAddrs() {
			onDoomed[a] = true
		}
		for _, id := range doomed.liveIDs() {
			require.NoError(t, doomed.eng.Kill(id))
		}
		doomed.stop(t, nil)

		// Its clients are reset; the others stream on.
		for range clients / 2 {
			r := <-results
			require.True(t, onDoomed[r.local], "client %s, on the healthy backend, ended: %v", r.local, r.err)
			require.ErrorIs(t, r.err, syscall.ECONNRESET, "client %s", r.local)
		}
		close(stop)
		for range clients / 2 {
			r := <-results
			require.False(t, onDoomed[r.local])
			require.NoError(t, r.err, "client %s, on the healthy backend", r.local)
		}
		for _, c := range conns {
			c.Close()
		}

		// New clients all reach the healthy backend; the doomed one
		// refuses twice and is marked down, and then not tried again.
		for i := range 6 {
			c := dial(t, tp.addr())
			require.NoError(t, echo(c, payload(uint64(100+i), 1000)), "new client %d", i)
			c.Close()
		}
		s := tp.snapshot()
		assert.Equal(t, uint64(2), s.Backends[0].Failed, "connects to the doomed backend")
		assert.True(t, s.Backends[0].Down, "the doomed backend is down")
		assert.Equal(t, uint64(clients/2), s.Backends[0].Errors, "pairs its resets ended")
		assert.Equal(t, uint64(clients/2+6), s.Backends[1].Connected)
		assert.True(t, tp.log.Contains("is down"), "the proxy logs that the backend is down")
		tp.settled(t)
	})
}

// stopEngine stops eng gracefully and waits for Run to return.
func stopEngine(t testing.TB, eng sluice.Engine, done chan error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := eng.Stop(ctx); err != nil && !errors.Is(err, sluice.ErrEngineStopped) {
		t.Errorf("stop: %v", err)
	}
	<-done
}
