package sluice

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// rawClient is a blocking socket driven by raw system calls, so that the
// client itself allocates nothing and the process's allocation count is
// the server's.
type rawClient struct {
	fd  int
	msg []byte
	got []byte
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	ap, err := netip.ParseAddrPort(strings.TrimPrefix(addr, "tcp://"))
	require.NoError(t, err)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.Connect(fd, &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}))
	msg := make([]byte, 64)
	for i := range msg {
		msg[i] = byte(i)
	}
	return &rawClient{fd: fd, msg: msg, got: make([]byte, len(msg))}
}

// roundTrip sends 64 bytes and reads until all 64 have come back.
func (c *rawClient) roundTrip(t testing.TB) {
	if _, err := unix.Write(c.fd, c.msg); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(c.got); {
		m, err := unix.Read(c.fd, c.got[n:])
		if err != nil || m <= 0 {
			t.Fatalf("read: %d, %v", m, err)
		}
		n += m
	}
}

func TestEchoRoundTripAllocatesNothing(t *testing.T) {
	_, addr := serve(t, echoHandler{}, WithNumEventLoop(1))
	c := dialRaw(t, addr)
	for range 100 {
		c.roundTrip(t) // warm up: pools, buffers, the conns table
	}
	allocs := testing.AllocsPerRun(1000, func() { c.roundTrip(t) })
	require.Zero(t, allocs, "heap allocations per 64-byte echo round trip")
}

func TestEchoRoundTripSystemCalls(t *testing.T) {
	// Counting is switched on before the engine starts and off by a cleanup
	// that runs after serve's has stopped it, which orders both writes
	// against the loops' reads of the flag.
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	_, addr := serve(t, echoHandler{}, WithNumEventLoop(1))
	c := dialRaw(t, addr)
	for range 100 {
		c.roundTrip(t)
	}
	const trips = 1000
	before := syscount.Load()
	for range trips {
		c.roundTrip(t)
	}
	perTrip := float64(syscount.Load()-before) / trips
	t.Logf("%.2f system calls per 64-byte echo round trip", perTrip)
	require.LessOrEqual(t, perTrip, 3.0)
}

// BenchmarkEchoRoundTrip is one 64-byte echo on one connection, client and
// server in one process: a check on the hot path's cost, not a figure to
// compare with other servers (benchmarks/ does that, in separate processes).
func BenchmarkEchoRoundTrip(b *testing.B) {
	_, addr := serve(b, echoHandler{}, WithNumEventLoop(1))
	c := dialRaw(b, addr)
	b.ReportAllocs()
	for b.Loop() {
		c.roundTrip(b)
	}
}
