package measure

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/benchmarks/internal/echotest"
	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/syscount"
)

// target starts an echo server in this process and aims conns connections at
// it, with this process as the server whose cost is read.
func target(t *testing.T, conns int) Target {
	t.Helper()
	addr := echotest.Listen(t, echotest.Echo)
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
// drop-th datagram it receives (none when 0) it drops. drops reads how many
// datagrams the kernel dropped on the server's socket so far.
func udpTarget(t *testing.T, peers, drop int) (tg Target, drops func() int64) {
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
	tg = Target{Config: loadgen.Config{Addr: addr, Conns: peers, Size: 64, Workers: 1}, PID: os.Getpid(), UDP: true}
	return tg, func() int64 { return socketDrops(t, pc) }
}

// skMeminfoDrops is SK_MEMINFO_DROPS, the index in SO_MEMINFO's array of
// the datagrams a socket dropped for want of room in its receive buffer
// (linux/sock_diag.h).
const skMeminfoDrops = 8

// socketDrops reads the kernel's count of datagrams dropped on c.
func socketDrops(t *testing.T, c syscall.Conn) int64 {
	t.Helper()
	raw, err := c.SyscallConn()
	require.NoError(t, err)
	var info [skMeminfoDrops + 1]uint32
	var errno syscall.Errno
	require.NoError(t, raw.Control(func(fd uintptr) {
		size := unsafe.Sizeof(info)
		_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
	}))
	require.Zero(t, errno, "SO_MEMINFO: %v", errno)
	return int64(info[skMeminfoDrops])
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
			tg, socketDrops := udpTarget(t, 10, 0)
			r, err := tc.run(tg)
			require.NoError(t, err)
			assert.Equal(t, tc.mode, r.Mode)
			assert.Zero(t, r.Errors.Total())
			// Loopback UDP drops datagrams when a busy machine stalls
			// the echo server past its socket's buffer (a fifth of
			// them, seen with two busy loops beside the race
			// detector): the kernel counts those on the socket, and
			// they are loss the report rightly shows. What the kernel
			// does not explain (an echo that came back late aside) is
			// loss the load generator made up: a server that drops a
			// quarter reads 0.25 (TestUDPLoss).
			drops := socketDrops()
			unexplained := float64(r.Lost-r.Late-drops) / float64(max(r.RoundTrips+r.Lost, 1))
			assert.Less(t, unexplained, 0.01, "%d lost, %d late, %d dropped by the kernel, %d echoed", r.Lost, r.Late, drops, r.RoundTrips)
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
	tg, _ := udpTarget(t, 10, 4)
	r, err := Paced(tg, 2000, 20*time.Millisecond, 200*time.Millisecond)
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
	tg, _ := udpTarget(t, 4, 0)
	r, err := Syscalls(tg, 50*time.Millisecond, 2000)
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
	addr, cert := echotest.ListenTLS(t, echotest.Echo)
	cfg, err := loadgen.ClientTLS(cert, nil, resume)
	require.NoError(t, err)
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
