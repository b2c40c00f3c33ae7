// Package udptest is the UDP client of the tests of servers on loopback,
// the engine's and the examples': a socket connected to the server, and a
// round trip that sends again when a datagram goes unanswered, since
// loopback may drop one when a loaded machine leaves a socket's buffer
// full.
package udptest

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tries is how many times RoundTrip sends a datagram, a second apart,
// before it fails the test: long enough for a loaded machine.
const tries = 20

// Dial opens a UDP socket on network ("udp", "udp4" or "udp6") connected
// to address; it closes when the test ends.
func Dial(t testing.TB, network, address string) *net.UDPConn {
	t.Helper()
	ra, err := net.ResolveUDPAddr(network, address)
	require.NoError(t, err)
	c, err := net.DialUDP(network, nil, ra)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// RoundTrip sends p on c and returns the datagram that comes back,
// sending p again when none comes within a second, up to 20 times.
func RoundTrip(t testing.TB, c *net.UDPConn, p []byte) []byte {
	t.Helper()
	buf := make([]byte, 1<<16)
	for range tries {
		_, err := c.Write(p)
		require.NoError(t, err)
		c.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		require.NoError(t, err)
		return buf[:n]
	}
	t.Fatalf("no answer to a datagram of %d bytes in %d tries", len(p), tries)
	return nil
}
