// Package churntest checks a churn.Dialer against an echo server in the
// test's own process.
package churntest

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/churn"
	"github.com/sluicenet/sluice/benchmarks/internal/echotest"
	"github.com/sluicenet/sluice/benchmarks/measure"
)

// Echo starts an echo server on a free loopback port (echotest.Listen),
// whose replies pass through reply first; it returns the address. The
// server stops with the test.
func Echo(t testing.TB, reply func([]byte) []byte) string {
	t.Helper()
	return echotest.Listen(t, func(c net.Conn, in []byte) error {
		return echotest.Echo(c, reply(in))
	}).String()
}

// Same replies with what it was given.
func Same(b []byte) []byte { return b }

// Run runs d against reply's echo server, with a few dials in flight, for a
// short window, and returns the report.
func Run(t testing.TB, d churn.Dialer, reply func([]byte) []byte) measure.Report {
	t.Helper()
	addr := Echo(t, reply)
	cfg := churn.Config{Addrs: []string{addr, addr}, Conns: 4, Size: 64, Loops: 1}
	r, err := churn.Run(d, cfg, 20*time.Millisecond, 100*time.Millisecond)
	require.NoError(t, err)
	return r
}

// Check runs d against a correct echo server and checks that it dialed,
// counted its dials and CPU, and saw no errors.
func Check(t testing.TB, d churn.Dialer) {
	t.Helper()
	r := Run(t, d, Same)
	assert.Equal(t, "dials", r.Mode)
	assert.Zero(t, r.Errors.Total(), "%+v", r.Errors)
	assert.Positive(t, r.RoundTrips)
	assert.GreaterOrEqual(t, r.Total, r.RoundTrips)
	assert.GreaterOrEqual(t, r.Seconds, 0.1, "the window is at least as long as asked")
	assert.Positive(t, r.CPUPerRT)
}

// CheckMismatch runs d against a server that flips a byte of every echo
// and checks that d counted the mismatches.
func CheckMismatch(t testing.TB, d churn.Dialer) {
	t.Helper()
	r := Run(t, d, func(b []byte) []byte {
		b[len(b)-1] ^= 1
		return b
	})
	assert.Zero(t, r.RoundTrips)
	assert.Positive(t, r.Errors.Mismatch, "%+v", r.Errors)
}
