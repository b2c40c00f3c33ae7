package proxyproto_test

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/proxyproto"
)

func TestParseV2Invalid(t *testing.T) {
	badCRC := withCRC(v2(0x21, 0x11, ip4Addrs))
	badCRC[len(badCRC)-1] ^= 1
	tamperedAddr := withCRC(v2(0x21, 0x11, ip4Addrs, tlv(0x01, "h2")))
	tamperedAddr[16] ^= 0x80
	shortLen := v2(0x21, 0x11, ip4Addrs)
	binary.BigEndian.PutUint16(shortLen[14:], 11)
	for _, tt := range []struct {
		name   string
		in     []byte
		reason string
	}{
		{"version 1", v2(0x11, 0x11, ip4Addrs), "v2 bad version"},
		{"version 3", v2(0x31, 0x11, ip4Addrs), "v2 bad version"},
		{"command 2", v2(0x22, 0x11, ip4Addrs), "bad command"},
		{"command 15", v2(0x2f, 0x00), "bad command"},
		{"family 4", v2(0x21, 0x41, ip4Addrs), "bad transport"},
		{"protocol 3", v2(0x21, 0x13, ip4Addrs), "bad transport"},
		{"AF_INET with UNSPEC protocol", v2(0x21, 0x10, ip4Addrs), "bad transport"},
		{"UNSPEC family with STREAM", v2(0x21, 0x01), "bad transport"},
		{"length short of IPv4 block", shortLen[:27], "shorter than address block"},
		{"length short of Unix block", v2(0x20, 0x31, strings.Repeat("\x00", 215)), "shorter than address block"},
		{"LOCAL still needs its address block", v2(0x20, 0x21, ip4Addrs), "shorter than address block"},
		{"TLV head cut", v2(0x21, 0x11, ip4Addrs, "\x01\x00"), "truncated TLV"},
		{"TLV value cut", v2(0x21, 0x11, ip4Addrs, "\x01\x00\x03ab"), "truncated TLV"},
		{"CRC32C mismatch", badCRC, "CRC32C mismatch"},
		{"CRC32C over a changed address", tamperedAddr, "CRC32C mismatch"},
		{"CRC32C of 3 bytes", v2(0x21, 0x11, ip4Addrs, tlv(0x03, "abc")), "CRC32C TLV not 4 bytes"},
		{"two CRC32C", withCRC(v2(0x21, 0x11, ip4Addrs, tlv(0x03, "abcd"))), "more than one CRC32C"},
		{"UNIQUE_ID of 129 bytes", v2(0x21, 0x11, ip4Addrs, tlv(0x05, strings.Repeat("u", 129))), "UNIQUE_ID"},
		{"SSL of 4 bytes", v2(0x21, 0x11, ip4Addrs, tlv(0x20, "\x01\x00\x00\x00")), "SSL TLV shorter"},
		{"SSL sub-TLV cut", v2(0x21, 0x11, ip4Addrs, tlv(0x20, "\x01\x00\x00\x00\x00\x21\x00\x05TLS")), "sub-TLV"},
	} {
		_, n, err := proxyproto.Parse(tt.in)
		require.ErrorIs(t, err, proxyproto.ErrInvalid, tt.name)
		require.ErrorContains(t, err, tt.reason, tt.name)
		require.Zero(t, n, tt.name)
	}
}

func TestParseV2InvalidBeforeWholeHeader(t *testing.T) {
	// A bad fixed part is rejected at once, not after waiting for the
	// length it announces.
	in := v2(0x31, 0x11, ip4Addrs)
	_, _, err := proxyproto.Parse(in[:16])
	require.ErrorIs(t, err, proxyproto.ErrInvalid)
}

func TestV2RoundTrip(t *testing.T) {
	ssl := proxyproto.SSL{
		Client: proxyproto.ClientSSL | proxyproto.ClientCertConn | proxyproto.ClientCertSess,
		Verify: 0xdeadbeef,
		TLVs:   proxyproto.TLVs(sslValue[5:]),
	}
	var tlvs proxyproto.TLVs
	var err error
	for _, v := range []struct {
		typ   proxyproto.TLVType
		value string
	}{
		{proxyproto.TypeALPN, "h2"},
		{proxyproto.TypeAuthority, "example.com"},
		{proxyproto.TypeCRC32C, "\x00\x00\x00\x00"},
		{proxyproto.TypeNoop, ""},
		{proxyproto.TypeUniqueID, strings.Repeat("u", 128)},
		{proxyproto.TypeNetNS, "blue"},
		{0xe7, "custom"},
	} {
		tlvs, err = tlvs.Append(v.typ, []byte(v.value))
		require.NoError(t, err)
	}
	tlvs, err = tlvs.AppendSSL(ssl)
	require.NoError(t, err)

	ip4a, ip4b := netip.MustParseAddrPort("192.0.2.1:65535"), netip.MustParseAddrPort("198.51.100.7:0")
	ip6a, ip6b := netip.MustParseAddrPort("[2001:db8::1]:1"), netip.MustParseAddrPort("[::ffff:192.0.2.1]:2")
	long := []byte(strings.Repeat("p", 108))
	for _, cmd := range []proxyproto.Command{proxyproto.Local, proxyproto.Proxy} {
		for _, h := range []proxyproto.Header{
			{Transport: proxyproto.Unknown},
			{Transport: proxyproto.TCP4, Source: ip4a, Destination: ip4b},
			{Transport: proxyproto.UDP4, Source: ip4b, Destination: ip4a},
			{Transport: proxyproto.TCP6, Source: ip6a, Destination: ip6b},
			{Transport: proxyproto.UDP6, Source: ip6b, Destination: ip6a},
			{Transport: proxyproto.UnixStream, SourceUnix: []byte("/a"), DestinationUnix: long},
			{Transport: proxyproto.UnixDgram, SourceUnix: []byte("\x00x"), DestinationUnix: nil},
		} {
			for _, tl := range []proxyproto.TLVs{nil, tlvs} {
				h.Version, h.Command, h.TLVs = 2, cmd, tl
				out, err := h.AppendV2([]byte("prefix"))
				require.NoError(t, err)
				require.Equal(t, "prefix", string(out[:6]))
				got, n, err := proxyproto.Parse(out[6:])
				require.NoError(t, err)
				require.Equal(t, len(out)-6, n)
				if len(tl) > 0 {
					// The CRC32C value was filled in, so compare it apart.
					crc, ok := got.TLVs.Lookup(proxyproto.TypeCRC32C)
					require.True(t, ok)
					require.NotEqual(t, "\x00\x00\x00\x00", string(crc))
					zeroed := append(slices.Clone(out[6:len(out)-len(tl)]), zeroedCRC(got.TLVs)...)
					require.Equal(t, crc32c(zeroed), binary.BigEndian.Uint32(crc))
					h.TLVs = got.TLVs
					gotSSL, ok := got.TLVs.SSL()
					require.True(t, ok)
					require.Equal(t, ssl, gotSSL)
				}
				requireSameHeader(t, h, got)
			}
		}
	}
}

// zeroedCRC returns a copy of t with its CRC32C value zeroed, as the checksum
// is computed.
func zeroedCRC(t proxyproto.TLVs) []byte {
	out := proxyproto.TLVs(nil)
	for typ, v := range t.All() {
		if typ == proxyproto.TypeCRC32C {
			v = make([]byte, 4)
		}
		out, _ = out.Append(typ, v)
	}
	return out
}

func TestAppendV2MatchesHandBuilt(t *testing.T) {
	for _, tt := range validHeaders {
		if tt.want.Version != 2 {
			continue
		}
		out, err := tt.want.AppendV2(nil)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.in, out, tt.name)
	}
}

func TestAppendV2Invalid(t *testing.T) {
	ip4 := netip.MustParseAddrPort("192.0.2.1:1")
	ip6 := netip.MustParseAddrPort("[2001:db8::1]:1")
	big := make([]byte, 0xffff-3-12)
	fits, err := proxyproto.TLVs(nil).Append(proxyproto.TypeNoop, big)
	require.NoError(t, err)
	tooBig, err := proxyproto.TLVs(nil).Append(proxyproto.TypeNoop, big[1:])
	require.NoError(t, err)
	tooBig, err = tooBig.Append(proxyproto.TypeNoop, []byte("xx"))
	require.NoError(t, err)

	h := proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.TCP4, Source: ip4, Destination: ip4, TLVs: fits}
	_, err = h.AppendV2(nil)
	require.NoError(t, err, "largest header")

	for _, tt := range []struct {
		h      proxyproto.Header
		reason string
	}{
		{proxyproto.Header{Command: 2}, "bad command"},
		{proxyproto.Header{Transport: 0x13}, "bad transport"},
		{proxyproto.Header{Transport: proxyproto.UDP4, Source: ip4, Destination: ip6}, "address family"},
		{proxyproto.Header{Transport: proxyproto.UDP6, Source: ip4, Destination: ip6}, "address family"},
		{proxyproto.Header{Transport: proxyproto.UnixDgram, SourceUnix: make([]byte, 109)}, "longer than 108"},
		{proxyproto.Header{Transport: proxyproto.UnixDgram, DestinationUnix: make([]byte, 109)}, "longer than 108"},
		{proxyproto.Header{TLVs: proxyproto.TLVs{0x01, 0x00}}, "truncated TLV"},
		{proxyproto.Header{TLVs: proxyproto.TLVs{0x03, 0x00, 0x01, 0x00}}, "CRC32C TLV not 4 bytes"},
		{proxyproto.Header{Transport: proxyproto.TCP4, Source: ip4, Destination: ip4, TLVs: tooBig}, "longer than 65535"},
	} {
		out, err := tt.h.AppendV2([]byte("x"))
		require.ErrorIs(t, err, proxyproto.ErrInvalid, tt.reason)
		require.ErrorContains(t, err, tt.reason)
		require.Equal(t, "x", string(out))
	}
}
