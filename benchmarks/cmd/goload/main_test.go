package main

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/echotest"
)

// The client paces its round trips to the rate asked for, checks every
// echo, and reads the server's CPU (this process's, here) over them.
func TestPaced(t *testing.T) {
	r, err := run(config{addr: echotest.Listen(t, echotest.Echo).String(), pid: os.Getpid(), conns: 20, size: 64, rate: 2000,
		warm: 100 * time.Millisecond, window: 500 * time.Millisecond})
	require.NoError(t, err)
	assert.Zero(t, r.Errors.Total())
	assert.InDelta(t, 2000, r.Rate, 200, "round trips intended in the window, per second")
	assert.Greater(t, r.Total, r.RoundTrips, "the warm-up's count too")
	assert.Positive(t, r.P99)
	assert.Positive(t, r.CPUPerRT)
}

// A server that closes the connection is counted, not waited on.
func TestServerCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	r, err := run(config{addr: ln.Addr().String(), pid: os.Getpid(), conns: 3, size: 64, rate: 300,
		warm: 50 * time.Millisecond, window: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.Errors.Closed)
}
