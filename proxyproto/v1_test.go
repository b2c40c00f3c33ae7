package proxyproto_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/proxyproto"
)

func TestParseV1Invalid(t *testing.T) {
	for _, tt := range []struct{ in, reason string }{
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1 2" + strings.Repeat(" ", 80), "line longer than 107"},
		{"PROXY UNKNOWN " + strings.Repeat("x", 92) + "\r\n", "line longer than 107"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "line ends in LF without CR"},
		{"PROXY UNKNOWN\n\r\n", "line ends in LF without CR"},
		{"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", "unknown protocol"},
		{"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n", "unknown protocol"},
		{"PROXY UNKNOWNX\r\n", "unknown protocol"},
		{"PROXY \r\n", "unknown protocol"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", "bad port"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", "bad port"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", "bad port"},
		{"PROXY TCP4\r\n", "bad address"},
		{"PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", "bad address"},
		{"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n", "bad address"},
		{"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n", "bad address"},
		{"PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n", "bad address"},
		{"PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n", "bad address"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8\r 1 2\r\n", "bad address"},
		{"PROXY TCP4 ::1 5.6.7.8 1 2\r\n", "bad address"},
		{"PROXY TCP6 1.2.3.4 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 1:2:3:4:5:6:7 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 1:2:3:4:5:6:7::8 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 1::2::3 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 :1::2 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 1::2: ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 ::: ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 12345::1 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 ::g ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 1:2:3:4:5:6:7:1.2.3.4 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 ::ffff:1.2.3.04 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP6 ::1.2.3.4:5 ::1 1 2\r\n", "bad address"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n", "bad port"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n", "bad port"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1 100000\r\n", "bad port"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n", "bad port"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1a 2\r\n", "bad port"},
		{"PROXY TCP6 ::1 ::2 1 2 \r\n", "bad port"},
		{"PROXY TCP6 ::1\r\n", "bad address"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8x 1 2\r\n", "bad address"},
		{"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n", "bad port"},
	} {
		_, n, err := proxyproto.Parse([]byte(tt.in))
		require.ErrorIs(t, err, proxyproto.ErrInvalid, "%q", tt.in)
		require.ErrorContains(t, err, "proxyproto: invalid: v1 "+tt.reason, "%q", tt.in)
		require.Zero(t, n)
	}
}

func TestParseV1IPv6Forms(t *testing.T) {
	for _, s := range []string{
		"::", "::1", "1::", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:0:0:0:0:0:0:8",
		"0001:0DB8:aBcD::", "2001:db8::192.0.2.1", "::ffff:0.0.0.0", "1:2:3:4:5:6:1.2.3.4",
	} {
		in := "PROXY TCP6 " + s + " ::1 1 2\r\n"
		h, _, err := proxyproto.Parse([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, netip.MustParseAddr(s), h.Source.Addr(), in)
	}
}

func TestAppendV1(t *testing.T) {
	for _, tt := range []struct {
		h    proxyproto.Header
		want string
	}{{
		h: proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
			Source:      netip.MustParseAddrPort("192.168.0.1:56324"),
			Destination: netip.MustParseAddrPort("192.168.0.11:443")},
		want: "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n",
	}, {
		h: proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP6,
			Source:      netip.MustParseAddrPort("[2001:db8::1]:0"),
			Destination: netip.MustParseAddrPort("[::ffff:192.0.2.1]:65535")},
		want: "PROXY TCP6 2001:db8::1 ::ffff:192.0.2.1 0 65535\r\n",
	}, {
		h: proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.Unknown,
			Source: netip.MustParseAddrPort("192.168.0.1:56324")},
		want: "PROXY UNKNOWN\r\n",
	}} {
		out, err := tt.h.AppendV1([]byte("x"))
		require.NoError(t, err)
		require.Equal(t, "x"+tt.want, string(out))
	}
}

func TestAppendV1Invalid(t *testing.T) {
	ip4 := netip.MustParseAddrPort("192.0.2.1:1")
	ip6 := netip.MustParseAddrPort("[2001:db8::1]:1")
	for _, tt := range []struct {
		h      proxyproto.Header
		reason string
	}{
		{proxyproto.Header{Command: proxyproto.Local, Transport: proxyproto.Unknown}, "v1 cannot carry LOCAL"},
		{proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.Unknown,
			TLVs: proxyproto.TLVs{0x04, 0, 0}}, "v1 cannot carry TLVs"},
		{proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.UDP4,
			Source: ip4, Destination: ip4}, "v1 carries only TCP4, TCP6 and UNKNOWN"},
		{proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.UnixStream}, "v1 carries only TCP4, TCP6 and UNKNOWN"},
		{proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
			Source: ip4, Destination: ip6}, "address family"},
		{proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
			Source: ip4}, "address family"},
		{proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP6,
			Source: ip4, Destination: ip6}, "address family"},
		{proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP6,
			Source: netip.MustParseAddrPort("[fe80::1%eth0]:1"), Destination: ip6}, "address family"},
	} {
		out, err := tt.h.AppendV1([]byte("x"))
		require.ErrorIs(t, err, proxyproto.ErrInvalid)
		require.ErrorContains(t, err, tt.reason)
		require.Equal(t, "x", string(out))
	}
}
