//go:build linux

package sluice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syncbuf"
	"github.com/sluicenet/sluice/internal/udptest"
)

// The bytes of datagrams count in BytesIn and BytesOut, as a stream's do.
func TestUDPBytesCounted(t *testing.T) {
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", &udpEcho{}, WithNumEventLoop(1))
	c := udpDial(t, addr)
	p := make([]byte, 100)
	for range 3 {
		require.Len(t, udptest.RoundTrip(t, c, p), 100)
	}
	// The answer may arrive before its bytes are counted; udptest.RoundTrip
	// sends again when an answer is lost: a multiple of 100.
	waitFor(t, 5*time.Second, func() bool {
		st := eng.Stats()
		return st.BytesIn >= 300 && st.BytesIn%100 == 0 && st.BytesOut == st.BytesIn
	}, func() string { return fmt.Sprintf("in %d, out %d", eng.Stats().BytesIn, eng.Stats().BytesOut) })
}

// Connected UDP sockets count in ClosedBy* as connections do: closed by
// the handler, by an error (the peer unreachable), by a stop.
func TestUDPConnectedClosesCounted(t *testing.T) {
	h := &udpPeerGone{opened: make(chan Conn, 3), closed: make(chan error, 3)}
	eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	peer := udpPeer(t)

	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	require.NoError(t, (<-h.opened).Close())
	assert.NoError(t, <-h.closed)

	gone := udpPeer(t)
	require.NoError(t, eng.Dial("udp://"+gone.LocalAddr().String(), nil))
	c := <-h.opened
	gone.Close()
	for refused := false; !refused; {
		c.AsyncWrite([]byte("anyone?"), nil)
		select {
		case err := <-h.closed:
			assert.ErrorIs(t, err, syscall.ECONNREFUSED)
			refused = true
		case <-time.After(10 * time.Millisecond):
		}
	}

	require.NoError(t, eng.Dial("udp://"+peer.LocalAddr().String(), nil))
	<-h.opened
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, eng.Stop(ctx))
	st := eng.Stats()
	assert.Equal(t, [3]uint64{1, 1, 1}, [3]uint64{st.ClosedByHandler, st.ClosedByError, st.ClosedByStop}, "by handler, error, stop")
	assert.Zero(t, st.ClosedByPeer)
}

// A receive that fails for one datagram's sake (with IP_RECVERR, the ICMP
// port unreachable an earlier send met) does not stop a listener's
// socket: the next datagram is served. The development backend's reader
// is held to the same in package socket, where its socket is reached.
func TestUDPListenerGoesOnPastAReceiveError(t *testing.T) {
	if stdBackend {
		t.Skip("a descriptor is a handle here; see TestPacketReaderGoesOnPastAnError")
	}
	dead := udpPeer(t)
	deadAddr := dead.LocalAddr()
	dead.Close()
	h := &udpRecvErr{to: deadAddr, sent: make(chan error, 1)}
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithLogger(logger))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("arm"))
	require.NoError(t, err)
	require.NoError(t, <-h.sent)
	waitFor(t, 5*time.Second, func() bool { return strings.Contains(log.String(), "connection refused") }, func() string {
		return "no receive failed: " + log.String()
	})
	assert.Equal(t, "after", string(udptest.RoundTrip(t, c, []byte("after"))))
}

// udpRecvErr, on "arm", has its socket report ICMP errors and sends to a
// port no one listens on; it echoes anything else.
type udpRecvErr struct {
	udpEcho
	to   net.Addr
	sent chan error
}

func (h *udpRecvErr) OnTraffic(c Conn) Action {
	if b, _ := c.Peek(-1); string(b) == "arm" {
		c.Discard(-1)
		if err := unix.SetsockoptInt(c.Fd(), unix.IPPROTO_IP, unix.IP_RECVERR, 1); err != nil {
			h.sent <- err
			return None
		}
		c.(PacketConn).AsyncWriteTo([]byte("to no one"), h.to, func(_ Conn, err error) { h.sent <- err })
		return None
	}
	return h.udpEcho.OnTraffic(c)
}

// An answer the kernel refuses inside a receive batch (to a sender whose
// port is 0: EINVAL) is dropped and counted in DatagramsSendFailed, and
// not in BytesOut; the answers after it in the same batch still go out.
// The sender of port 0 is a raw socket, as an unkind peer's would be.
func TestUDPAnswerRefusedInABatch(t *testing.T) {
	raw, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		t.Skipf("a raw socket, to send from port 0: %v", err)
	}
	defer unix.Close(raw)
	eng, addr := serveAddr(t, "udp4://127.0.0.1:0", echoHandler{}, WithNumEventLoop(1))
	port := eng.Addrs()[0].(*net.UDPAddr).Port
	c := udpDial(t, addr)
	fromPortZero := []byte{0, 0, byte(port >> 8), byte(port), 0, 8 + 3, 0, 0, 'b', 'a', 'd'} // no checksum

	release, held := make(chan struct{}), make(chan struct{})
	require.NoError(t, Loop{eng.e.loops[0]}.Execute(func() { close(held); <-release }))
	<-held
	_, err = c.Write([]byte("1"))
	require.NoError(t, err)
	require.NoError(t, unix.Sendto(raw, fromPortZero, 0, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	_, err = c.Write([]byte("2"))
	require.NoError(t, err)
	close(release)

	got := make([]byte, 16)
	for _, want := range []string{"1", "2"} {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, err := c.Read(got)
		require.NoError(t, err, "the answer after the refused one")
		assert.Equal(t, want, string(got[:n]))
	}
	// An answer may arrive before the loop has counted it.
	waitFor(t, 5*time.Second, func() bool {
		st := eng.Stats()
		return st.DatagramsSendFailed == 1 && st.BytesOut >= 2
	}, func() string {
		return fmt.Sprintf("%d sends failed, %d bytes out", eng.Stats().DatagramsSendFailed, eng.Stats().BytesOut)
	})
	st := eng.Stats()
	assert.Equal(t, uint64(5), st.BytesIn)
	assert.Equal(t, uint64(2), st.BytesOut, "the refused answer's bytes")
}

// Every datagram a UDP socket fails to send counts once in
// DatagramsSendFailed, on every poller, whoever refused it: Sluice on the
// kernel's behalf (Write and Writev larger than IPv4 carries, an IPv6
// address for an IPv4 socket), the kernel at once or in the ring's turn
// (a posted datagram to port 0: EINVAL), or the kernel when a batch of
// answers goes out (each to a sender of port 0). None counts in BytesOut.
func TestUDPEveryFailedSendCounted(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		raw, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			t.Skipf("a raw socket, to send from port 0: %v", err)
		}
		defer unix.Close(raw)
		h := &udpRefusals{errs: make(chan string, 8)}
		eng, addr := serveAddr(t, "udp4://127.0.0.1:0", h, p, WithNumEventLoop(1))
		c := udpDial(t, addr)
		assert.Equal(t, "refused", string(udptest.RoundTrip(t, c, []byte("refuse"))))
		failed := func(n uint64) func() bool { return func() bool { return eng.Stats().DatagramsSendFailed == n } }
		told := func(n uint64) func() string {
			return func() string { return fmt.Sprintf("%d sends failed, want %d", eng.Stats().DatagramsSendFailed, n) }
		}
		waitFor(t, 5*time.Second, failed(4), told(4))
		for _, want := range []string{"Write: message too long", "Writev: message too long"} {
			assert.Equal(t, want, <-h.errs)
		}

		// Three answers the kernel refuses, gathered in one batch.
		port := eng.Addrs()[0].(*net.UDPAddr).Port
		fromPortZero := []byte{0, 0, byte(port >> 8), byte(port), 0, 8 + 1, 0, 0, 'z'}
		release, held := make(chan struct{}), make(chan struct{})
		require.NoError(t, Loop{eng.e.loops[0]}.Execute(func() { close(held); <-release }))
		<-held
		for range 3 {
			require.NoError(t, unix.Sendto(raw, fromPortZero, 0, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
		}
		close(release)
		waitFor(t, 5*time.Second, failed(7), told(7))
		assert.True(t, holdsFor(100*time.Millisecond, failed(7)), "a failed datagram counted twice: %s", told(7)())
		st := eng.Stats()
		assert.Zero(t, st.BytesOut%uint64(len("refused")), "the bytes of datagrams that never left: %d", st.BytesOut)
		return outcome{Stats: Stats{DatagramsSendFailed: st.DatagramsSendFailed}}
	})
}

// udpRefusals answers the first "refuse" with four datagrams no network
// carries, and every one with "refused" (the client may send it again
// when a busy machine delays the answer); it echoes anything else.
type udpRefusals struct {
	BuiltinEventEngine
	errs    chan string
	refused bool
}

func (h *udpRefusals) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	if string(b) != "refuse" || h.refused {
		if string(b) == "refuse" {
			b = []byte("refused")
		}
		c.Write(b)
		return None
	}
	h.refused = true
	tell := func(what string, err error) {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			h.errs <- what + ": " + errno.Error()
		} else {
			h.errs <- fmt.Sprintf("%s: %v", what, err)
		}
	}
	_, err := c.Write(make([]byte, maxDatagram4+1))
	tell("Write", err)
	_, err = c.Writev([][]byte{make([]byte, 40000), make([]byte, 40000)})
	tell("Writev", err)
	pc := c.(PacketConn)
	for _, to := range []string{"[::1]:9", "127.0.0.1:0"} {
		if err := pc.AsyncWriteTo([]byte("x"), net.UDPAddrFromAddrPort(netip.MustParseAddrPort(to)), nil); err != nil {
			tell("AsyncWriteTo "+to, err)
		}
	}
	c.Write([]byte("refused"))
	return None
}

// A datagram a connected socket's last callback sent, which the kernel
// refuses once the socket is closing (on io_uring, after the callback has
// returned Close), counts in DatagramsSendFailed all the same. The socket
// is shut for writing before it is enrolled: every send fails with EPIPE.
func TestUDPClosingSocketsFailedSendCounted(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &udpSayByeAndGo{closed: make(chan error, 1)}
		eng, _ := serveAddr(t, "udp://127.0.0.1:0", h, p, WithNumEventLoop(1))
		peer := udpPeer(t)
		nc, err := net.DialUDP("udp4", nil, peer.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		rc, err := nc.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) { err = unix.Shutdown(int(fd), unix.SHUT_WR) }))
		require.NoError(t, err)
		require.NoError(t, eng.Enroll(nc, nil))
		<-h.closed
		waitFor(t, 5*time.Second, func() bool { return eng.Stats().DatagramsSendFailed == 1 }, func() string {
			return fmt.Sprintf("%d sends failed, want 1", eng.Stats().DatagramsSendFailed)
		})
		st := eng.Stats()
		assert.Zero(t, st.BytesOut)
		return outcome{Stats: Stats{DatagramsSendFailed: st.DatagramsSendFailed, BytesOut: st.BytesOut}}
	})
}

// udpSayByeAndGo sends "bye" from OnOpen and closes at once.
type udpSayByeAndGo struct {
	BuiltinEventEngine
	closed chan error
}

func (h *udpSayByeAndGo) OnOpen(c Conn) ([]byte, Action) { return []byte("bye"), Close }

func (h *udpSayByeAndGo) OnClose(c Conn, err error) Action {
	h.closed <- err
	return None
}
