//go:build linux

package sluice

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
)

// TestUDPRateLimitSources checks what WithDatagramRateLimit counts as one
// source, with clients a PROXY header names so that any address can be
// one: an IPv6 /64 is one source, whatever the rest of its addresses (a
// sender cannot escape its rate by hopping within it); the next /64 is
// another; an IPv4 address is one, whether its header names it as IPv4
// or IPv4-mapped IPv6; and a burst of zero or less is one datagram at
// once, not none.
func TestUDPRateLimitSources(t *testing.T) {
	h := &udpProxied{}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1),
		WithProxyProtocol(ProxyRequired, 0), WithDatagramRateLimit(1, 0))
	proxy := udpDial(t, addr)
	dst6 := netip.MustParseAddrPort("[2001:db8:ffff::1]:53")
	dst4 := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	from := func(client string) []byte {
		ap := netip.MustParseAddrPort(client)
		if ap.Addr().Is4() {
			return append(dgramHeader(1, 0x12, ap, dst4), "hi"...)
		}
		return append(dgramHeader(1, 0x22, ap, dst6), "hi"...)
	}
	limited := func(n uint64, client string) {
		t.Helper()
		_, err := proxy.Write(from(client))
		require.NoError(t, err)
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().DatagramsRateLimited == n }, func() string {
			return fmt.Sprintf("%s's datagram not limited: %d limited", client, eng.Stats().DatagramsRateLimited)
		})
	}
	passes := func(client string) {
		t.Helper()
		assert.Equal(t, "hi", string(udptest.RoundTrip(t, proxy, from(client))), "%s has a rate of its own", client)
	}

	passes("[2001:db8:1:2::1]:1000")
	limited(1, "[2001:db8:1:2:ffff:ffff:ffff:ffff]:2000")
	passes("[2001:db8:1:3::1]:1000")
	passes("198.51.100.7:1000")
	limited(2, "[::ffff:198.51.100.7]:1001")
	passes("198.51.100.8:1000")
	limited(3, "198.51.100.8:1000")
	assert.Equal(t, uint64(3), eng.Stats().DatagramsRateLimited)
}
