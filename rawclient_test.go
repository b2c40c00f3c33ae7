//go:build unix

package sluice

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// rawClient is a blocking socket driven by raw system calls, so that the
// client itself allocates nothing and the process's allocation count is
// the server's.
type rawClient struct {
	fd  int
	msg []byte
	got []byte
}

// skipUnderRace skips a test that counts allocations when the race
// detector runs (raceEnabled).
func skipUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what is put back; CI counts allocations without it")
	}
}

// dialRaw connects a raw client that sends 64-byte messages.
func dialRaw(t testing.TB, addr string) *rawClient {
	return dialRawSize(t, addr, 64)
}

func dialRawSize(t testing.TB, addr string, size int) *rawClient {
	t.Helper()
	fd, err := connectRaw(addr)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i)
	}
	return &rawClient{fd: fd, msg: msg, got: make([]byte, len(msg))}
}

// connectRaw returns a blocking socket connected to a tcp:// IPv4 address
// as serve returns it. The caller closes it.
func connectRaw(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(strings.TrimPrefix(addr, "tcp://"))
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	unix.CloseOnExec(fd)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// readTimeout makes the client's reads fail after d rather than wait for
// ever on an echo that does not come.
func (c *rawClient) readTimeout(t testing.TB, d time.Duration) {
	tv := unix.NsecToTimeval(int64(d))
	require.NoError(t, unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
}

// roundTrip sends 64 bytes and reads until all 64 have come back.
func (c *rawClient) roundTrip(t testing.TB) {
	c.send(t)
	c.receive(t)
}

// send sends the client's message.
func (c *rawClient) send(t testing.TB) {
	if err := writeAll(c.fd, c.msg); err != nil {
		t.Fatal(err)
	}
}

// writeAll writes all of p to the blocking socket fd. A write that a
// signal (the runtime's preemption) interrupts after sending some bytes
// returns their count and no error, so one call may send only part.
func writeAll(fd int, p []byte) error {
	for len(p) > 0 {
		n, err := unix.Write(fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// receive reads until the message has come back. A read interrupted by a
// signal (the runtime's preemption) is tried again: with a read timeout
// set (readTimeout), the kernel does not restart it.
func (c *rawClient) receive(t testing.TB) {
	for n := 0; n < len(c.got); {
		m, err := unix.Read(c.fd, c.got[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			t.Fatalf("read: %d, %v", m, err)
		}
		n += m
	}
}

func reportPercentiles(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[int(q*float64(len(samples)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
