package proxyproto_test

import (
	"strings"
	"testing"

	"github.com/sluicenet/sluice/proxyproto"
)

func benchmarkParse(b *testing.B, in []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, _, err := proxyproto.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseV1TCP4(b *testing.B) {
	benchmarkParse(b, []byte("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"))
}

func BenchmarkParseV2IPv4(b *testing.B) {
	benchmarkParse(b, v2(0x21, 0x11, ip4Addrs))
}

// BenchmarkParseV2TLVs parses what HAProxy sends with most of its
// proxy-v2-options: five TLVs, the SSL one with sub-TLVs, and a CRC32C.
func BenchmarkParseV2TLVs(b *testing.B) {
	ssl := "\x05\x00\x00\x00\x00" + tlv(0x21, "TLSv1.3") + tlv(0x23, "TLS_AES_128_GCM_SHA256")
	benchmarkParse(b, withCRC(v2(0x21, 0x11, ip4Addrs,
		tlv(0x01, "h2"), tlv(0x02, "www.example.com"), tlv(0x05, strings.Repeat("7", 32)),
		tlv(0x20, ssl), tlv(0x30, "blue"))))
}
