//go:build unix

package sluice

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/leakcheck"
)

// booter captures the Engine handle as the engine boots.
type booter struct {
	EventHandler
	booted chan Engine
}

func (b *booter) OnBoot(eng Engine) Action {
	a := b.EventHandler.OnBoot(eng)
	b.booted <- eng
	return a
}

// The booter passes on the events of the optional handler interfaces, to
// the handler it wraps if that listens for them.

func (b *booter) OnDialFailed(addr string, ctx any, err error) {
	if h, ok := b.EventHandler.(DialFailedHandler); ok {
		h.OnDialFailed(addr, ctx, err)
	}
}

func (b *booter) OnHalfClose(c Conn) Action {
	if h, ok := b.EventHandler.(HalfCloseHandler); ok {
		return h.OnHalfClose(c)
	}
	return None
}

func (b *booter) OnDrain(c Conn) Action {
	if h, ok := b.EventHandler.(DrainHandler); ok {
		return h.OnDrain(c)
	}
	return None
}

func (b *booter) OnRefuse(remote net.Addr, reason error) []byte {
	if h, ok := b.EventHandler.(RefusalHandler); ok {
		return h.OnRefuse(remote, reason)
	}
	return nil
}

func (b *booter) OnDatagramError(c Conn, err error) Action {
	if h, ok := b.EventHandler.(DatagramErrorHandler); ok {
		return h.OnDatagramError(c, err)
	}
	return None
}

func (b *booter) OnTLSFailed(remote net.Addr, err error) {
	if h, ok := b.EventHandler.(TLSFailedHandler); ok {
		h.OnTLSFailed(remote, err)
	}
}

// serve starts an engine with h on a free loopback port and returns it and
// the address to dial. Stopping it, and checking that it leaked no
// goroutine and no descriptor, is registered as cleanup.
func serve(t testing.TB, h EventHandler, opts ...Option) (Engine, string) {
	return serveAddr(t, "tcp://127.0.0.1:0", h, opts...)
}

func serveAddr(t testing.TB, addr string, h EventHandler, opts ...Option) (Engine, string) {
	t.Helper()
	opts = append([]Option{WithPoller(testPoller)}, opts...)
	leaks := leakCheck(t)
	b := &booter{EventHandler: h, booted: make(chan Engine, 1)}
	done := make(chan error, 1)
	go func() { done <- Run(b, addr, opts...) }()
	var eng Engine
	select {
	case eng = <-b.booted:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, eng.Stop(ctx))
		require.NoError(t, <-done)
		// Every connection has let go of its inbound buffer, and the
		// count of what they hold (WithInboundBudget) agrees.
		require.Zero(t, eng.Stats().InboundHeld, "inbound bytes held once every connection closed")
		require.Zero(t, eng.Stats().OutboundHeld, "unsent output held once every connection closed")
		leaks()
	})
	a := eng.Addrs()[0]
	return eng, a.Network() + "://" + a.String()
}

// leakCheck counts the goroutines and descriptors open now, and returns a
// function that waits for the counts to fall back to these, failing the
// test if they do not, with what was left named. It skips the test where
// the system does not list its descriptors.
func leakCheck(t testing.TB) func() {
	t.Helper()
	if !leakcheck.Descriptors() {
		t.Skip("no /proc/self/fd")
	}
	return leakcheck.Start(t, 5*time.Second)
}

// waitFor polls cond on the calling goroutine until it holds, or fails the
// test with what describe says once the deadline passes.
func waitFor(t testing.TB, d time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(describe())
		}
		time.Sleep(time.Millisecond)
	}
}

// holdsFor reports whether cond stays true for d, checking every
// millisecond. It is for what must not happen, such as a callback while
// reading is paused, which no condition can wait for: a broken engine
// fails it at once, a working one passes however slow the machine.
func holdsFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if !cond() {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return cond()
}

// dial connects to an address as serve returns it.
func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	network, address, _ := strings.Cut(addr, "://")
	c, err := net.DialTimeout(network, address, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

type echoHandler struct{ BuiltinEventEngine }

func (echoHandler) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return None
}

func TestEchoSmoke(t *testing.T) {
	_, addr := serve(t, echoHandler{}, WithNumEventLoop(2))
	c := dial(t, addr)
	_, err := c.Write([]byte("hello"))
	require.NoError(t, err)
	buf := make([]byte, 5)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf))
}

func discardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// needsKernelSockets skips a test that reaches under the engine to the
// kernel's sockets (a Conn's Fd with getsockopt, socket pairs, exact
// system call counts), which the standard library's backend does not
// expose: it says why.
func needsKernelSockets(t testing.TB, why string) {
	t.Helper()
	if stdBackend {
		t.Skip("the standard library's backend: " + why)
	}
}
