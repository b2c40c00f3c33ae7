//go:build unix

package main

import (
	"net"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/proxyproto"
)

// With -send-proxy, a backend that requires the PROXY header learns the
// address of the client, not the proxy's.
func TestSendProxy(t *testing.T) {
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		for _, v := range []sendProxy{sendProxyV1, sendProxyV2} {
			t.Run(v.String(), func(t *testing.T) {
				backend := startEcho(t, "", sluice.WithProxyProtocol(sluice.ProxyRequired, 0))
				tp := startProxy(t, config{backends: []string{backend.addr}, poller: k, sendProxy: v})
				c := dial(t, tp.addr())
				require.NoError(t, echo(c, []byte("who am I?")))
				assert.Equal(t, []string{c.LocalAddr().String()}, backend.remoteAddrs())
				c.Close()
				tp.settled(t)
			})
		}
	})
}

// Behind a balancer that sends a PROXY header (-proxy-protocol required),
// the proxy passes the original client on to its backend (-send-proxy),
// and turns away a client that sends no header.
func TestProxyProtocolPassedOn(t *testing.T) {
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		backend := startEcho(t, "", sluice.WithProxyProtocol(sluice.ProxyRequired, 0))
		tp := startProxy(t, config{
			backends:      []string{backend.addr},
			poller:        k,
			proxyProtocol: sluice.ProxyRequired,
			sendProxy:     sendProxyV2,
		})
		for _, header := range []string{
			"PROXY TCP4 203.0.113.7 192.0.2.1 4242 7000\r\n",
			"PROXY TCP6 2001:db8::7 2001:db8::1 4243 7000\r\n",
		} {
			c := dial(t, tp.addr())
			_, err := c.Write([]byte(header))
			require.NoError(t, err)
			require.NoError(t, echo(c, []byte("relayed for a client far away")))
			c.Close()
		}
		assert.Equal(t, []string{"203.0.113.7:4242", "[2001:db8::7]:4243"}, backend.remoteAddrs())

		c := dial(t, tp.addr())
		_, err := c.Write([]byte("no header\r\n"))
		require.NoError(t, err)
		_, err = c.Read(make([]byte, 1))
		require.Error(t, err, "a client without a header was served")
		tp.settled(t)
		assert.Equal(t, uint64(1), tp.snapshot().Engine.ProxyMissing)
		assert.Equal(t, int64(2), backend.opened.Load())
	})
}

// The proxy listens on several addresses, TCP and unix, and relays to a
// backend on a unix socket.
func TestUnixAndSeveralListeners(t *testing.T) {
	dir := t.TempDir()
	backend := startEcho(t, "unix://"+filepath.Join(dir, "echo.sock"))
	tp := startProxy(t, config{
		addrs:    []string{"tcp://127.0.0.1:0", "tcp://127.0.0.1:0", "unix://" + filepath.Join(dir, "proxy.sock")},
		backends: []string{backend.addr},
	})
	require.Len(t, tp.addrs, 3)
	for i, a := range tp.addrs {
		network := "tcp"
		if i == 2 {
			network = "unix"
		}
		c, err := net.DialTimeout(network, a, deadline)
		require.NoError(t, err)
		require.NoError(t, echo(c, payload(uint64(i), 256<<10)), "through %s", a)
		c.Close()
	}
	tp.settled(t)
	assert.Equal(t, int64(3), backend.opened.Load())
}

// fakeConn is the little of a Conn that appendHeader asks.
type fakeConn struct {
	sluice.Conn
	remote, local net.Addr
	header        *proxyproto.Header
}

// RemoteAddr, LocalAddr and ProxyHeader return what the test set.
func (c fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c fakeConn) LocalAddr() net.Addr  { return c.local }
func (c fakeConn) ProxyHeader() (proxyproto.Header, bool) {
	if c.header == nil {
		return proxyproto.Header{}, false
	}
	return *c.header, true
}

// tcpAddr parses "ip:port" as a *net.TCPAddr.
func tcpAddr(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }

// The header sent names the client and the address it reached, in one
// family, and says UNKNOWN or LOCAL where it cannot.
func TestHeaderSent(t *testing.T) {
	relayed := &proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
		Source: netip.MustParseAddrPort("203.0.113.7:4242"), Destination: netip.MustParseAddrPort("192.0.2.1:443")}
	local := &proxyproto.Header{Command: proxyproto.Local}
	unixPeer := &net.UnixAddr{Name: "@", Net: "unix"}
	for _, tc := range []struct {
		name   string
		conn   fakeConn
		v1, v2 string // the header Parse reads back: command, transport, source, destination
	}{
		{"ipv4", fakeConn{remote: tcpAddr("192.0.2.9:5000"), local: tcpAddr("192.0.2.1:7000")},
			"PROXY TCP4 192.0.2.9:5000 192.0.2.1:7000", "PROXY TCP4 192.0.2.9:5000 192.0.2.1:7000"},
		{"ipv6", fakeConn{remote: tcpAddr("[2001:db8::9]:5000"), local: tcpAddr("[2001:db8::1]:7000")},
			"PROXY TCP6 [2001:db8::9]:5000 [2001:db8::1]:7000", "PROXY TCP6 [2001:db8::9]:5000 [2001:db8::1]:7000"},
		{"ipv4 mapped", fakeConn{remote: tcpAddr("[::ffff:192.0.2.9]:5000"), local: tcpAddr("[::ffff:192.0.2.1]:7000")},
			"PROXY TCP4 192.0.2.9:5000 192.0.2.1:7000", "PROXY TCP4 192.0.2.9:5000 192.0.2.1:7000"},
		{"mixed", fakeConn{remote: tcpAddr("192.0.2.9:5000"), local: tcpAddr("[2001:db8::1]:7000")},
			"PROXY TCP6 [::ffff:192.0.2.9]:5000 [2001:db8::1]:7000", "PROXY TCP6 [::ffff:192.0.2.9]:5000 [2001:db8::1]:7000"},
		{"relayed", fakeConn{remote: tcpAddr("203.0.113.7:4242"), local: tcpAddr("10.0.0.2:7000"), header: relayed},
			"PROXY TCP4 203.0.113.7:4242 192.0.2.1:443", "PROXY TCP4 203.0.113.7:4242 192.0.2.1:443"},
		{"balancer's own", fakeConn{remote: tcpAddr("10.0.0.1:6000"), local: tcpAddr("10.0.0.2:7000"), header: local},
			"PROXY UNKNOWN invalid AddrPort invalid AddrPort", "LOCAL UNKNOWN invalid AddrPort invalid AddrPort"},
		{"unix", fakeConn{remote: unixPeer, local: &net.UnixAddr{Name: "/run/proxy.sock", Net: "unix"}},
			"PROXY UNKNOWN invalid AddrPort invalid AddrPort", "PROXY UNKNOWN invalid AddrPort invalid AddrPort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for v, want := range map[sendProxy]string{sendProxyV1: tc.v1, sendProxyV2: tc.v2} {
				b := appendHeader([]byte("kept"), v, tc.conn)
				require.Equal(t, "kept", string(b[:4]), "what was there before")
				h, n, err := proxyproto.Parse(b[4:])
				require.NoError(t, err, "%s: %q", v, b[4:])
				require.Equal(t, len(b)-4, n, "%s: the header is all that was appended", v)
				assert.Equal(t, v == sendProxyV1, h.Version == 1, "%s: version", v)
				assert.Equal(t, want, h.Command.String()+" "+h.Transport.String()+" "+h.Source.String()+" "+h.Destination.String(), "%s", v)
			}
		})
	}
}
