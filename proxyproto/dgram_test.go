package proxyproto_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/proxyproto"
)

func TestParseDatagram(t *testing.T) {
	const payload = "\x12\x34query"
	for _, tt := range []struct {
		name string
		in   []byte
		want proxyproto.Header
	}{
		{"UDP4", v2(0x21, 0x12, ip4Addrs), proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.UDP4,
			Source: netip.MustParseAddrPort("172.19.0.1:42578"), Destination: netip.MustParseAddrPort("172.19.0.3:80")}},
		{"UDP6", v2(0x21, 0x22, ip6Addrs), proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.UDP6,
			Source: netip.MustParseAddrPort("[2001:db8::1]:12345"), Destination: netip.MustParseAddrPort("[2001:db8::2]:443")}},
		{"LOCAL", v2(0x20, 0x00), proxyproto.Header{Version: 2, Command: proxyproto.Local}},
		{"LOCAL names a stream, which it ignores", v2(0x20, 0x11, ip4Addrs), proxyproto.Header{Version: 2, Command: proxyproto.Local,
			Transport: proxyproto.TCP4, Source: netip.MustParseAddrPort("172.19.0.1:42578"), Destination: netip.MustParseAddrPort("172.19.0.3:80")}},
		{"UNSPEC", v2(0x21, 0x00), proxyproto.Header{Version: 2, Command: proxyproto.Proxy}},
	} {
		in := append(tt.in, payload...)
		h, n, err := proxyproto.ParseDatagram(in)
		require.NoError(t, err, tt.name)
		require.Equal(t, payload, string(in[n:]), tt.name)
		requireSameHeader(t, tt.want, h)
	}
}

func TestParseDatagramRefuses(t *testing.T) {
	whole := v2(0x21, 0x12, ip4Addrs)
	for _, tt := range []struct {
		name string
		in   []byte
		want error
	}{
		{"plain traffic", []byte("\x12\x34\x01\x00\x00\x01"), proxyproto.ErrNotProxy},
		{"empty", nil, proxyproto.ErrNotProxy},
		{"part of the signature", whole[:11], proxyproto.ErrNotProxy},
		{"version 1", []byte("PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n"), proxyproto.ErrNotProxy},
		{"the signature alone", whole[:12], proxyproto.ErrInvalid},
		{"the fixed part cut", whole[:15], proxyproto.ErrInvalid},
		{"the addresses cut", whole[:20], proxyproto.ErrInvalid},
		{"TCP4", v2(0x21, 0x11, ip4Addrs), proxyproto.ErrInvalid},
		{"TCP6", v2(0x21, 0x21, ip6Addrs), proxyproto.ErrInvalid},
		{"Unix stream", v2(0x21, 0x31, unixAddrs), proxyproto.ErrInvalid},
		{"bad version", v2(0x11, 0x12, ip4Addrs), proxyproto.ErrInvalid},
	} {
		h, n, err := proxyproto.ParseDatagram(tt.in)
		require.ErrorIs(t, err, tt.want, tt.name)
		require.Zero(t, n, tt.name)
		require.Equal(t, proxyproto.Header{}, h, tt.name)
	}
}

func TestParseDatagramAllocatesNothing(t *testing.T) {
	in := append(withCRC(v2(0x21, 0x12, ip4Addrs)), "payload"...)
	bad := v2(0x21, 0x11, ip4Addrs)
	allocs := testing.AllocsPerRun(100, func() {
		proxyproto.ParseDatagram(in)
		proxyproto.ParseDatagram(bad)
	})
	require.Zero(t, allocs)
}

func FuzzParseDatagram(f *testing.F) {
	for _, tt := range validHeaders {
		f.Add(tt.in)
	}
	f.Add(append(v2(0x21, 0x12, ip4Addrs), "payload"...))
	f.Add(v2(0x21, 0x22, ip6Addrs, tlv(0x01, "dns")))
	f.Add([]byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := proxyproto.ParseDatagram(b)
		if err != nil {
			require.Zero(t, n)
			require.True(t, errors.Is(err, proxyproto.ErrNotProxy) || errors.Is(err, proxyproto.ErrInvalid), err)
			return
		}
		require.Equal(t, 2, h.Version)
		require.GreaterOrEqual(t, n, 16)
		require.LessOrEqual(t, n, len(b))
		if h.Command == proxyproto.Proxy {
			require.NotContains(t, []proxyproto.Transport{proxyproto.TCP4, proxyproto.TCP6, proxyproto.UnixStream}, h.Transport)
		}
		// What a datagram's header is, a stream's is too.
		got, m, err := proxyproto.Parse(b)
		require.NoError(t, err)
		require.Equal(t, n, m)
		requireSameHeader(t, h, got)
	})
}
