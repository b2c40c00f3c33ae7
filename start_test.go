//go:build unix

package sluice

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// start starts an engine with Start, with h as it is (serve wraps it), and
// registers its stop, a check that Wait returns nil after it, and the
// check for leaked goroutines and descriptors as cleanup.
func start(t testing.TB, h EventHandler, addr string, opts ...Option) Engine {
	t.Helper()
	opts = append([]Option{WithPoller(testPoller)}, opts...)
	leaks := leakCheck(t)
	eng, err := Start(h, addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, eng.Stop(ctx))
		require.NoError(t, eng.Wait())
		leaks()
	})
	return eng
}

// bootRecorder records the engine's boot and shutdown, and answers OnBoot
// with boot.
type bootRecorder struct {
	BuiltinEventEngine
	boot     Action
	booted   atomic.Int64
	shutdown atomic.Int64
}

func (h *bootRecorder) OnBoot(Engine) Action {
	h.booted.Add(1)
	return h.boot
}

func (h *bootRecorder) OnShutdown(Engine) { h.shutdown.Add(1) }

// pinger sends "ping" on each connection it opens and passes on the
// answer.
type pinger struct {
	bootRecorder
	answers chan string
}

func (h *pinger) OnOpen(Conn) ([]byte, Action) { return []byte("ping"), None }

func (h *pinger) OnTraffic(c Conn) Action {
	b, err := c.Next(len("ping"))
	if err != nil {
		return None
	}
	h.answers <- string(b)
	return Close
}

// A program that only dials gets its engine from Start, booted, and dials
// with it at once.
func TestStartClientDials(t *testing.T) {
	_, echoAddr := serve(t, echoHandler{}, WithNumEventLoop(1))
	h := &pinger{answers: make(chan string, 1)}
	eng := start(t, h, "", WithNumEventLoop(1))
	assert.EqualValues(t, 1, h.booted.Load(), "OnBoot calls before Start returned")
	assert.Empty(t, eng.Addrs())
	require.NoError(t, eng.Dial(echoAddr, nil))
	select {
	case got := <-h.answers:
		assert.Equal(t, "ping", got)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to the dialed connection")
	}
	assert.EqualValues(t, 1, eng.Stats().Dialed)
}

// An address Start cannot listen on is its error, returned at once; OnBoot
// never runs, and nothing is left open.
func TestStartFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	tests := []struct {
		name, addr string
		want       error
	}{
		{"a scheme it does not know", "sctp://127.0.0.1:0", ErrInvalidAddr},
		{"a port in use", "tcp://" + taken.Addr().String(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaks := leakCheck(t)
			h := &bootRecorder{}
			eng, err := Start(h, tt.addr, WithPoller(testPoller))
			require.Error(t, err)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
			} else {
				assert.True(t, strings.Contains(err.Error(), "listen"), "%v", err)
			}
			assert.Zero(t, h.booted.Load(), "OnBoot calls")
			assert.ErrorIs(t, eng.Wait(), ErrEngineStopped, "the zero Engine's Wait")
			leaks()
		})
	}
}

// Wait and Done tell when the engine has stopped: not before Stop, and
// only once OnShutdown has returned.
func TestStartWaitReturnsAfterStop(t *testing.T) {
	leaks := leakCheck(t)
	h := &bootRecorder{}
	eng, err := Start(h, "tcp://127.0.0.1:0", WithPoller(testPoller), WithNumEventLoop(2))
	require.NoError(t, err)
	c := dial(t, "tcp://"+eng.Addrs()[0].String()) // open while the engine stops
	waitFor(t, 5*time.Second, func() bool { return eng.CountConnections() == 1 },
		func() string { return "the connection did not open" })

	waited := make(chan error, 1)
	go func() { waited <- eng.Wait() }()
	select {
	case <-eng.Done():
		t.Fatal("Done before Stop")
	case err := <-waited:
		t.Fatalf("Wait returned %v before Stop", err)
	case <-time.After(100 * time.Millisecond): // for what must not happen
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, eng.Stop(ctx))
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after Stop")
	}
	assert.EqualValues(t, 1, h.shutdown.Load(), "OnShutdown calls when Wait returned")
	select {
	case <-eng.Done():
	default:
		t.Fatal("Done is not closed after Wait returned")
	}
	require.NoError(t, eng.Wait(), "Wait again")
	c.Close()
	leaks()
}

// An OnBoot that returns Shutdown still gets its engine from Start, which
// stops by itself: Wait returns once OnShutdown has run, and nothing is
// listening by then.
func TestStartOnBootShutdown(t *testing.T) {
	leaks := leakCheck(t)
	h := &bootRecorder{boot: Shutdown}
	eng, err := Start(h, "tcp://127.0.0.1:0", WithPoller(testPoller))
	require.NoError(t, err)
	addr := eng.Addrs()[0].String()
	waited := make(chan error, 1)
	go func() { waited <- eng.Wait() }()
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("an engine whose OnBoot returned Shutdown did not stop")
	}
	assert.EqualValues(t, 1, h.booted.Load(), "OnBoot calls")
	assert.EqualValues(t, 1, h.shutdown.Load(), "OnShutdown calls")
	_, err = net.DialTimeout("tcp", addr, 5*time.Second)
	assert.Error(t, err, "dialing an engine that stopped")
	assert.NoError(t, eng.Stop(context.Background()), "Stop after the engine stopped")
	leaks()
}

// The zero Engine names no engine: Wait fails at once and Done is closed.
func TestZeroEngineWait(t *testing.T) {
	var eng Engine
	assert.ErrorIs(t, eng.Wait(), ErrEngineStopped)
	select {
	case <-eng.Done():
	default:
		t.Fatal("the zero Engine's Done is not closed")
	}
}
