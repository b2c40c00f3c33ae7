// Package echotest runs the echo servers the load generator's tests and
// its clients' tests aim at: in the test's own process, on a free
// loopback port, a goroutine per connection, stopped when the test ends.
// Each answers every read through a Reply, so that a test can also serve
// a broken echo (a flipped byte, a close, silence) and see it counted.
package echotest

import (
	"crypto/tls"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/certs"
)

// A Reply answers the bytes of one read, in, on c; an error closes c.
type Reply func(c net.Conn, in []byte) error

// Echo is the correct Reply: in, back as it came.
func Echo(c net.Conn, in []byte) error {
	_, err := c.Write(in)
	return err
}

// serve answers every connection ln accepts with reply until the test
// ends, when it closes ln, and returns ln's address.
func serve(t testing.TB, ln net.Listener, reply Reply) netip.AddrPort {
	t.Helper()
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go answer(c, reply)
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// answer replies to each read on c until either fails, then closes c.
func answer(c net.Conn, reply Reply) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil || reply(c, buf[:n]) != nil {
			return
		}
	}
}

// Listen serves reply over plain TCP on a free loopback port.
func Listen(t testing.TB, reply Reply) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serve(t, ln, reply)
}

// ListenTLS serves reply over crypto/tls on a free loopback port, with a
// certificate of its own (certs.Write, into the test's temporary
// directory); it returns the address and the certificate's file, for the
// client to trust.
func ListenTLS(t testing.TB, reply Reply) (addr netip.AddrPort, certFile string) {
	t.Helper()
	f, err := certs.Write(t.TempDir())
	require.NoError(t, err)
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	return serve(t, ln, reply), f.Cert
}
