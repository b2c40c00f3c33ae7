package measure

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

func TestMemory(t *testing.T) {
	r, err := Memory(target(t, 200))
	require.NoError(t, err)
	assert.Equal(t, int64(200), r.RoundTrips, "one message per connection")
	assert.Positive(t, r.RSSBefore)
	assert.Positive(t, r.RSSAfter)
	assert.InDelta(t, float64(r.RSSAfter-r.RSSBefore)/200, r.PerConn, 1e-9)
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

func TestServerGone(t *testing.T) {
	tg := target(t, 1)
	tg.PID = 1 << 30 // no such process
	_, err := Closed(tg, 0, 10*time.Millisecond)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
