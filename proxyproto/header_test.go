package proxyproto_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/proxyproto"
)

const sig = "\r\n\r\n\x00\r\nQUIT\n"

// v2 builds a version 2 header by hand, independently of AppendV2: the
// signature, the version and command byte, the transport byte, the length,
// and the body.
func v2(verCmd, transport byte, body ...string) []byte {
	b := append([]byte(sig), verCmd, transport, 0, 0)
	for _, p := range body {
		b = append(b, p...)
	}
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-16))
	return b
}

// tlv encodes one TLV by hand.
func tlv(typ byte, value string) string {
	return string([]byte{typ, byte(len(value) >> 8), byte(len(value))}) + value
}

// crc32c is a bitwise CRC32C (reflected polynomial 0x82F63B78), an oracle
// independent of hash/crc32.
func crc32c(b []byte) uint32 {
	c := ^uint32(0)
	for _, x := range b {
		c ^= uint32(x)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0x82f63b78
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

// withCRC returns b, a version 2 header, with a CRC32C TLV appended and its
// value filled in by the oracle.
func withCRC(b []byte) []byte {
	b = append(b, 0x03, 0, 4, 0, 0, 0, 0)
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-16))
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32c(b))
	return b
}

var (
	ip4Addrs = "\xac\x13\x00\x01" + "\xac\x13\x00\x03" + "\xa6\x52" + "\x00\x50"
	ip6Addrs = "\x20\x01\x0d\xb8" + strings.Repeat("\x00", 11) + "\x01" +
		"\x20\x01\x0d\xb8" + strings.Repeat("\x00", 11) + "\x02" + "\x30\x39" + "\x01\xbb"
	unixAddrs = "/run/client.sock" + strings.Repeat("\x00", 108-16) +
		"\x00abstract" + strings.Repeat("\x00", 108-9)
	sslValue = "\x07" + "\x00\x00\x00\x00" + tlv(0x21, "TLSv1.3") + tlv(0x22, "client.example") +
		tlv(0x23, "TLS_AES_128_GCM_SHA256") + tlv(0x24, "RSA-SHA256") + tlv(0x25, "RSA2048")
	allTLVs = tlv(0x01, "h2") + tlv(0x02, "example.com") + tlv(0x04, "\x00\x00") +
		tlv(0x05, strings.Repeat("u", 128)) + tlv(0x20, sslValue) + tlv(0x30, "blue") +
		tlv(0xe0, "custom") + tlv(0x04, "")
)

// validHeaders are complete, valid headers of every kind, each with the
// header it parses to.
var validHeaders = []struct {
	name string
	in   []byte
	want proxyproto.Header
}{{
	name: "v1 spec example",
	in:   []byte("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"),
	want: proxyproto.Header{Version: 1, Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
		Source:      netip.MustParseAddrPort("192.168.0.1:56324"),
		Destination: netip.MustParseAddrPort("192.168.0.11:443")},
}, {
	name: "v1 TCP4 longest",
	in:   []byte("PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n"),
	want: proxyproto.Header{Version: 1, Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
		Source:      netip.MustParseAddrPort("255.255.255.255:65535"),
		Destination: netip.MustParseAddrPort("255.255.255.255:65535")},
}, {
	name: "v1 TCP6 longest",
	in: []byte("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff " +
		"FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF 65535 0\r\n"),
	want: proxyproto.Header{Version: 1, Command: proxyproto.Proxy, Transport: proxyproto.TCP6,
		Source:      netip.MustParseAddrPort("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"),
		Destination: netip.MustParseAddrPort("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:0")},
}, {
	name: "v1 TCP6 compressed and mapped",
	in:   []byte("PROXY TCP6 2001:db8::1 ::ffff:192.0.2.1 0 80\r\n"),
	want: proxyproto.Header{Version: 1, Command: proxyproto.Proxy, Transport: proxyproto.TCP6,
		Source:      netip.MustParseAddrPort("[2001:db8::1]:0"),
		Destination: netip.MustParseAddrPort("[::ffff:192.0.2.1]:80")},
}, {
	name: "v1 UNKNOWN short",
	in:   []byte("PROXY UNKNOWN\r\n"),
	want: proxyproto.Header{Version: 1, Command: proxyproto.Proxy, Transport: proxyproto.Unknown},
}, {
	name: "v1 UNKNOWN longest",
	in: []byte("PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff " +
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n"),
	want: proxyproto.Header{Version: 1, Command: proxyproto.Proxy, Transport: proxyproto.Unknown},
}, {
	name: "v2 TCP4",
	in:   v2(0x21, 0x11, ip4Addrs),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
		Source:      netip.MustParseAddrPort("172.19.0.1:42578"),
		Destination: netip.MustParseAddrPort("172.19.0.3:80")},
}, {
	name: "v2 UDP4",
	in:   v2(0x21, 0x12, ip4Addrs),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.UDP4,
		Source:      netip.MustParseAddrPort("172.19.0.1:42578"),
		Destination: netip.MustParseAddrPort("172.19.0.3:80")},
}, {
	name: "v2 TCP6",
	in:   v2(0x21, 0x21, ip6Addrs),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.TCP6,
		Source:      netip.MustParseAddrPort("[2001:db8::1]:12345"),
		Destination: netip.MustParseAddrPort("[2001:db8::2]:443")},
}, {
	name: "v2 UDP6",
	in:   v2(0x21, 0x22, ip6Addrs),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.UDP6,
		Source:      netip.MustParseAddrPort("[2001:db8::1]:12345"),
		Destination: netip.MustParseAddrPort("[2001:db8::2]:443")},
}, {
	name: "v2 Unix stream",
	in:   v2(0x21, 0x31, unixAddrs),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.UnixStream,
		SourceUnix: []byte("/run/client.sock"), DestinationUnix: []byte("\x00abstract")},
}, {
	name: "v2 Unix datagram",
	in:   v2(0x21, 0x32, unixAddrs),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.UnixDgram,
		SourceUnix: []byte("/run/client.sock"), DestinationUnix: []byte("\x00abstract")},
}, {
	name: "v2 LOCAL",
	in:   v2(0x20, 0x00),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Local, Transport: proxyproto.Unknown},
}, {
	name: "v2 LOCAL with TLVs and CRC32C",
	in:   withCRC(v2(0x20, 0x00, tlv(0x05, "id-1"))),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Local, Transport: proxyproto.Unknown,
		TLVs: proxyproto.TLVs(withCRC(v2(0x20, 0x00, tlv(0x05, "id-1")))[16:])},
}, {
	name: "v2 PROXY over AF_UNSPEC",
	in:   v2(0x21, 0x00),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.Unknown},
}, {
	name: "v2 TCP4 every TLV and CRC32C",
	in:   withCRC(v2(0x21, 0x11, ip4Addrs, allTLVs)),
	want: proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Transport: proxyproto.TCP4,
		Source:      netip.MustParseAddrPort("172.19.0.1:42578"),
		Destination: netip.MustParseAddrPort("172.19.0.3:80"),
		TLVs:        proxyproto.TLVs(withCRC(v2(0x21, 0x11, ip4Addrs, allTLVs))[16+12:])},
}}

// normalized returns h with its empty slices made nil, so that headers
// compare by content.
func normalized(h proxyproto.Header) proxyproto.Header {
	for _, s := range []*[]byte{&h.SourceUnix, &h.DestinationUnix, (*[]byte)(&h.TLVs)} {
		if len(*s) == 0 {
			*s = nil
		}
	}
	return h
}

func requireSameHeader(t testing.TB, want, got proxyproto.Header) {
	t.Helper()
	require.Equal(t, normalized(want), normalized(got))
}

func TestParseValid(t *testing.T) {
	const payload = "GET / HTTP/1.1\r\nHost: 192.168.0.11\r\n\r\n"
	for _, tt := range validHeaders {
		t.Run(tt.name, func(t *testing.T) {
			in := append(append([]byte(nil), tt.in...), payload...)
			h, n, err := proxyproto.Parse(in)
			require.NoError(t, err)
			require.Equal(t, len(tt.in), n)
			require.Equal(t, payload, string(in[n:]))
			requireSameHeader(t, tt.want, h)
		})
	}
}

func TestParseTruncated(t *testing.T) {
	for _, tt := range validHeaders {
		t.Run(tt.name, func(t *testing.T) {
			for k := range len(tt.in) {
				_, n, err := proxyproto.Parse(tt.in[:k])
				require.ErrorIs(t, err, proxyproto.ErrIncomplete, "prefix of %d bytes", k)
				require.Zero(t, n)
			}
		})
	}
}

func TestParseNotProxy(t *testing.T) {
	for _, in := range []string{
		"GET / HTTP/1.1\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
		"SSH-2.0-OpenSSH_9.6\r\n",
		"proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
		"PROXZ",
		"PROXYTCP4",
		"\r\n\r\n\x00\r\nQUIX",
		"\r\n\r\n\x01",
		"\n",
		"\x00",
	} {
		_, n, err := proxyproto.Parse([]byte(in))
		require.ErrorIs(t, err, proxyproto.ErrNotProxy, "%q", in)
		require.Zero(t, n)
	}
}

func TestParseErrorsAreDistinct(t *testing.T) {
	errs := []error{proxyproto.ErrIncomplete, proxyproto.ErrNotProxy, proxyproto.ErrInvalid}
	for i, a := range errs {
		for j, b := range errs {
			require.Equal(t, i == j, errors.Is(a, b), "%v, %v", a, b)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	inputs := [][]byte{
		[]byte("PROXY TCP6 2001:db8::1 ::ffff:192.0.2.1 0 80\r\n"),
		[]byte("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"),
		[]byte("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443"),
		[]byte("PROXY TCP4 192.168.0.01 192.168.0.11 56324 443\r\n"),
		[]byte("GET / HTTP/1.1\r\n"),
		v2(0x21, 0x11, ip4Addrs),
		v2(0x21, 0x31, unixAddrs),
		v2(0x31, 0x11, ip4Addrs),
		withCRC(v2(0x21, 0x21, ip6Addrs, allTLVs)),
	}
	for _, in := range inputs {
		allocs := testing.AllocsPerRun(100, func() {
			h, _, _ := proxyproto.Parse(in)
			h.TLVs.Lookup(proxyproto.TypeNetNS)
			ssl, _ := h.TLVs.SSL()
			ssl.TLVs.Lookup(proxyproto.SubtypeSSLCN)
			for range h.TLVs.All() {
			}
		})
		require.Zero(t, allocs, "%q", in)
	}
}

func TestAppendAllocs(t *testing.T) {
	dst := make([]byte, 0, 512)
	for _, tt := range validHeaders {
		h, _, err := proxyproto.Parse(tt.in)
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(100, func() {
			if h.Version == 1 {
				_, err = h.AppendV1(dst)
			} else {
				_, err = h.AppendV2(dst)
			}
		})
		require.NoError(t, err)
		require.Zero(t, allocs, tt.name)
	}
}

func TestStrings(t *testing.T) {
	require.Equal(t, "LOCAL", proxyproto.Local.String())
	require.Equal(t, "PROXY", proxyproto.Proxy.String())
	require.Equal(t, "Command(0x7)", proxyproto.Command(7).String())
	for tr, want := range map[proxyproto.Transport]string{
		proxyproto.Unknown: "UNKNOWN", proxyproto.TCP4: "TCP4", proxyproto.UDP4: "UDP4",
		proxyproto.TCP6: "TCP6", proxyproto.UDP6: "UDP6", proxyproto.UnixStream: "UNIX-STREAM",
		proxyproto.UnixDgram: "UNIX-DGRAM", proxyproto.Transport(0x13): "Transport(0x13)",
	} {
		require.Equal(t, want, tr.String())
	}
}
