package measure

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/certs"
	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/syscount"
)

// target starts an echo server in this process and aims conns connections at
// it, with this process as the server whose cost is read.
func target(t *testing.T, conns int) Target {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					c.Write(buf[:n])
				}
			}()
		}
	}()
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	return Target{Config: loadgen.Config{Addr: addr, Conns: conns, Size: 64, Workers: 1}, PID: os.Getpid()}
}

func TestModes(t *testing.T) {
	const warm, d = 50 * time.Millisecond, 100 * time.Millisecond
	for _, tc := range []struct {
		mode string
		run  func(Target) (Report, error)
	}{
		{"closed", func(tg Target) (Report, error) { return Closed(tg, warm, d) }},
		{"paced", func(tg Target) (Report, error) { return Paced(tg, 5000, warm, d) }},
		{"accepts", func(tg Target) (Report, error) { return Accepts(tg, warm, d) }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r, err := tc.run(target(t, 10))
			require.NoError(t, err)
			assert.Equal(t, tc.mode, r.Mode)
			assert.Zero(t, r.Errors.Total())
			assert.Positive(t, r.RoundTrips)
			assert.Greater(t, r.Total, r.RoundTrips, "the warm-up counts in the total")
			assert.Positive(t, r.Rate)
			assert.Positive(t, r.CPUPerRT)
			assert.LessOrEqual(t, r.P50, r.P99)
			assert.LessOrEqual(t, r.P99, r.P999)
		})
	}
}

// udpTarget starts a UDP echo server in this process and aims peers UDP
// peers at it, with this process as the server whose cost is read; every
// drop-th datagram it receives (none when 0) it drops.
func udpTarget(t *testing.T, peers, drop int) Target {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 4096)
		for k := 1; ; k++ {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if drop == 0 || k%drop != 0 {
				pc.WriteToUDPAddrPort(buf[:n], from)
			}
		}
	}()
	addr := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	return Target{Config: loadgen.Config{Addr: addr, Conns: peers, Size: 64, Workers: 1}, PID: os.Getpid(), UDP: true}
}

func TestUDPModes(t *testing.T) {
	const warm, d = 50 * time.Millisecond, 100 * time.Millisecond
	for _, tc := range []struct {
		mode string
		run  func(Target) (Report, error)
	}{
		{"closed", func(tg Target) (Report, error) { return Closed(tg, warm, d) }},
		{"paced", func(tg Target) (Report, error) { return Paced(tg, 5000, warm, d) }},
		{"loss", func(tg Target) (Report, error) { return Loss(tg, 0.5, warm, d) }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r, err := tc.run(udpTarget(t, 10, 0))
			require.NoError(t, err)
			assert.Equal(t, tc.mode, r.Mode)
			assert.Zero(t, r.Errors.Total())
			// Loopback UDP may drop a datagram when a busy machine
			// stalls the echo past its socket's buffer (seen once in
			// 4,000 under the race detector); a server that drops a
			// quarter reads 0.25 (TestUDPLossCounted).
			assert.Less(t, r.LossRate(), 0.01)
			assert.Positive(t, r.RoundTrips)
			assert.Positive(t, r.Rate)
			assert.Positive(t, r.CPUPerRT)
		})
	}
}

// Datagrams a server drops are the report's loss, not its errors.
func TestUDPLoss(t *testing.T) {
	old := loadgen.LossTimeout
	loadgen.LossTimeout = 20 * time.Millisecond
	t.Cleanup(func() { loadgen.LossTimeout = old })
	r, err := Paced(udpTarget(t, 10, 4), 2000, 20*time.Millisecond, 200*time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, r.Errors.Total())
	// An echo a busy machine delays past the short timeout counts lost,
	// and late when it comes: the datagrams the server dropped are the
	// lost ones never echoed.
	dropped := float64(r.Lost-r.Late) / float64(r.RoundTrips+r.Lost)
	assert.InDelta(t, 0.25, dropped, 0.05, "a quarter dropped: %d lost (%d late), %d echoed", r.Lost, r.Late, r.RoundTrips)
}

func TestMemory(t *testing.T) {
	r, err := Memory(target(t, 200), 0)
	require.NoError(t, err)
	assert.Equal(t, int64(200), r.RoundTrips, "one message per connection")
	assert.Positive(t, r.RSSBefore)
	assert.Positive(t, r.RSSAfter)
	assert.InDelta(t, float64(r.RSSAfter-r.RSSBefore)/200, r.PerConn, 1e-9)
}

// TestIdle has the opener hold memory as connections would (4 MiB
// mapped and touched, so that no heap the process had already counts)
// and report an error it counted.
func TestIdle(t *testing.T) {
	var held []byte
	r, err := Idle(os.Getpid(), 100, func() (int, loadgen.Errors) {
		var err error
		held, err = syscall.Mmap(-1, 0, 4<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		require.NoError(t, err)
		for i := 0; i < len(held); i += 4096 {
			held[i] = 1
		}
		return 99, loadgen.Errors{Closed: 1}
	})
	require.NoError(t, err)
	defer syscall.Munmap(held)
	assert.Equal(t, "memory", r.Mode)
	assert.Equal(t, int64(99), r.RoundTrips, "one exchange per connection held")
	assert.Equal(t, loadgen.Errors{Closed: 1}, r.Errors)
	assert.InDelta(t, float64(r.RSSAfter-r.RSSBefore)/100, r.PerConn, 1e-9)
	assert.Greater(t, r.PerConn, 30000.0, "most of the 4 MiB is counted")
	assert.Equal(t, byte(1), held[0])

	_, err = Idle(1<<30, 1, func() (int, loadgen.Errors) { return 1, loadgen.Errors{} })
	assert.ErrorIs(t, err, os.ErrNotExist, "no such process")
}

func TestSyscalls(t *testing.T) {
	if err := syscount.Available(); err != nil {
		t.Skip(err)
	}
	r, err := Syscalls(target(t, 4), 50*time.Millisecond, 2000)
	require.NoError(t, err)
	assert.Equal(t, int64(2000), r.RoundTrips)
	// This process is both ends here: at least a read and a write each side.
	assert.Greater(t, r.PerRT, 4.0)
}

func TestUDPSyscalls(t *testing.T) {
	if err := syscount.Available(); err != nil {
		t.Skip(err)
	}
	r, err := Syscalls(udpTarget(t, 4, 0), 50*time.Millisecond, 2000)
	require.NoError(t, err)
	assert.Equal(t, int64(2000), r.RoundTrips)
	// Both ends here again: a send and a receive each side, at least.
	assert.Greater(t, r.PerRT, 4.0)
}

func TestServerGone(t *testing.T) {
	tg := target(t, 1)
	tg.PID = 1 << 30 // no such process
	_, err := Closed(tg, 0, 10*time.Millisecond)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestMemoryThenLarger(t *testing.T) {
	r, err := Memory(target(t, 50), 16<<10)
	require.NoError(t, err)
	assert.Equal(t, int64(50), r.RoundTrips, "the first message's round trips")
	assert.Equal(t, int64(100), r.Total, "and the second's")
	assert.Equal(t, 16<<10, r.ThenSize)
	assert.NotZero(t, r.ThenPerConn)
}

// tlsTarget starts a crypto/tls echo server in this process and aims conns
// connections at it.
func tlsTarget(t *testing.T, conns int, resume bool) Target {
	t.Helper()
	f, err := certs.Write(t.TempDir())
	require.NoError(t, err)
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	cfg, err := loadgen.ClientTLS(f.Cert, nil, resume)
	require.NoError(t, err)
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	return Target{Config: loadgen.Config{Addr: addr, Conns: conns, Size: 64, Workers: 1, TLS: cfg}, PID: os.Getpid()}
}

func TestTLS(t *testing.T) {
	const warm, d = 50 * time.Millisecond, 100 * time.Millisecond
	r, err := Paced(tlsTarget(t, 10, false), 2000, warm, d)
	require.NoError(t, err)
	assert.Zero(t, r.Errors.Total())
	assert.Positive(t, r.CPUPerRT)
	assert.Contains(t, r.TLS, "TLS 1.3")

	r, err = Handshakes(tlsTarget(t, 4, true), warm, d)
	require.NoError(t, err)
	assert.Equal(t, "handshakes", r.Mode)
	assert.Zero(t, r.Errors.Total())
	assert.Positive(t, r.RoundTrips)
	assert.Equal(t, r.RoundTrips, r.Resumed, "the warm-up gave them tickets")
	assert.Positive(t, r.CPUPerRT)

	r, err = Memory(tlsTarget(t, 20, false), 16<<10)
	require.NoError(t, err)
	assert.Zero(t, r.Errors.Total())
	assert.Equal(t, int64(40), r.Total)
	assert.Contains(t, r.TLS, "TLS 1.3")
}
