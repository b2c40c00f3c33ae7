package main

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const deadline = 10 * time.Second

// start runs a server with cfg on a free loopback port until ctx ends or
// the test does, and returns it and the address to dial.
func start(ctx context.Context, t testing.TB, cfg serverConfig) (*server, string) {
	t.Helper()
	addrs := make(chan net.Addr, 1)
	cfg.addr = "tcp://127.0.0.1:0"
	cfg.listening = func(a net.Addr) { addrs <- a }
	s, err := newServer(cfg)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(deadline):
			t.Error("the server did not stop")
		}
	})
	select {
	case a := <-addrs:
		return s, "tcp://" + a.String()
	case err := <-done:
		t.Fatalf("run: %v", err)
		return nil, ""
	}
}

func TestEveryRequestAnswered(t *testing.T) {
	tests := []struct {
		name string
		cfg  clientConfig
	}{
		{"small requests", clientConfig{requests: 1000, conns: 50, size: 64}},
		{"requests over many reads", clientConfig{requests: 20, conns: 4, size: 200 << 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := start(t.Context(), t, serverConfig{loops: 2, delay: 10 * time.Millisecond, maxFrame: 1 << 20})
			tc.cfg.addr = addr
			r, err := runClient(t.Context(), tc.cfg)
			require.NoError(t, err)
			assert.EqualValues(t, tc.cfg.requests, r.answered, "%v", r)
			assert.Zero(t, r.shed)
			t.Log(r)
		})
	}
}

func TestOverloadSheds(t *testing.T) {
	_, addr := start(t.Context(), t, serverConfig{loops: 2, workers: 1, delay: 500 * time.Millisecond, maxFrame: 1 << 20})
	r, err := runClient(t.Context(), clientConfig{addr: addr, requests: 4, conns: 4, size: 8})
	require.NoError(t, err)
	assert.EqualValues(t, 4, r.answered+r.shed)
	assert.Positive(t, r.answered, "the one worker answers")
	assert.Positive(t, r.shed, "requests beyond the one worker are shed: %v", r)
}

func TestOversizedRequestClosesConnection(t *testing.T) {
	_, addr := start(t.Context(), t, serverConfig{loops: 1, maxFrame: 64})
	r, err := runClient(t.Context(), clientConfig{addr: addr, requests: 1, conns: 1, size: 100})
	require.Error(t, err)
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "closed, not %v", err)
	assert.Zero(t, r.answered+r.shed)
}

func TestStopAnswersRunningRequests(t *testing.T) {
	ctx, stop := context.WithCancel(t.Context())
	s, addr := start(ctx, t, serverConfig{loops: 2, delay: 300 * time.Millisecond, maxFrame: 1 << 20})
	const n = 10
	reports := make(chan report, 1)
	go func() {
		r, err := runClient(t.Context(), clientConfig{addr: addr, requests: n, conns: n, size: 8})
		assert.NoError(t, err)
		reports <- r
	}()
	require.Eventually(t, func() bool { return s.workers.Running() == n }, deadline, time.Millisecond,
		"every request reaches a worker")
	stop()

	select {
	case r := <-reports:
		assert.EqualValues(t, n, r.answered, "%v", r)
	case <-time.After(deadline):
		t.Fatal("the client never finished")
	}
}

// BenchmarkOffloadRoundTrip measures the request rate with no backend
// delay: 50 connections, each with one 64-byte request in flight, to a
// server with two loops. The figure is in requests/s.
func BenchmarkOffloadRoundTrip(b *testing.B) {
	_, addr := start(b.Context(), b, serverConfig{loops: 2, maxFrame: 1 << 20})
	b.ResetTimer()
	r, err := runClient(b.Context(), clientConfig{addr: addr, requests: b.N, conns: 50, size: 64})
	require.NoError(b, err)
	require.EqualValues(b, b.N, r.answered)
	b.ReportMetric(float64(b.N)/r.elapsed.Seconds(), "requests/s")
}
