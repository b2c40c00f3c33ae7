//go:build sluice_std

package socket

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A UDP socket's receive may fail for one datagram's sake and the next
// succeed: with IP_RECVERR an ICMP port unreachable about an earlier send
// fails the next receive with ECONNREFUSED. The reader reports the error
// in its turn and goes on receiving.
func TestPacketReaderGoesOnPastAnError(t *testing.T) {
	fd, addr, _, err := ListenPacket("udp4", "127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	raw, err := packetConn(fd).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(s uintptr) {
		serr = unix.SetsockoptInt(int(s), unix.IPPROTO_IP, unix.IP_RECVERR, 1)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}

	// A port nothing listens on.
	dead, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	to := dead.LocalAddr().(*net.UDPAddr).AddrPort()
	dead.Close()
	if _, err := SendTo(fd, []byte("to no one"), to, false); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_, _, _, err = recvWithin(t, fd, buf)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("receive after an ICMP port unreachable: %v, want ECONNREFUSED", err)
	}

	c, err := net.DialUDP("udp4", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	n, from, _, err := recvWithin(t, fd, buf)
	if err != nil || string(buf[:n]) != "after" || from != c.LocalAddr().(*net.UDPAddr).AddrPort() {
		t.Fatalf("after the error: %q from %v, %v", buf[:n], from, err)
	}
}

// recvWithin calls RecvFrom until it returns something other than EAGAIN,
// for at most 5 s.
func recvWithin(t *testing.T, fd int, p []byte) (int, netip.AddrPort, bool, error) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		n, from, truncated, err := RecvFrom(fd, p)
		if err != syscall.EAGAIN {
			return n, from, truncated, err
		}
	}
	t.Fatal("nothing received within 5 s")
	return 0, netip.AddrPort{}, false, nil
}
