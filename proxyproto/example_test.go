package proxyproto_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/sluicenet/sluice/proxyproto"
)

// Parse the header at the start of a connection's buffered bytes, then hand
// the rest to the application.
func Example() {
	buffered := []byte("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET / HTTP/1.1\r\n\r\n")

	h, n, err := proxyproto.Parse(buffered)
	switch {
	case errors.Is(err, proxyproto.ErrIncomplete):
		return // wait for more bytes
	case err != nil:
		fmt.Println("close:", err)
		return
	}
	fmt.Println(h.Transport, "client", h.Source, "server", h.Destination)
	fmt.Printf("payload %q\n", buffered[n:])
	// Output:
	// TCP4 client 192.168.0.1:56324 server 192.168.0.11:443
	// payload "GET / HTTP/1.1\r\n\r\n"
}

// Build a version 2 header with TLVs and a CRC32C checksum, as a proxy
// sends it, and read the TLVs back.
func ExampleHeader_AppendV2() {
	tlvs, _ := proxyproto.TLVs(nil).Append(proxyproto.TypeAuthority, []byte("example.com"))
	tlvs, _ = tlvs.Append(proxyproto.TypeCRC32C, make([]byte, 4)) // filled in by AppendV2
	h := proxyproto.Header{
		Command:     proxyproto.Proxy,
		Transport:   proxyproto.TCP6,
		Source:      netip.MustParseAddrPort("[2001:db8::1]:51000"),
		Destination: netip.MustParseAddrPort("[2001:db8::2]:443"),
		TLVs:        tlvs,
	}
	out, err := h.AppendV2(nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	got, n, err := proxyproto.Parse(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	authority, _ := got.TLVs.Lookup(proxyproto.TypeAuthority)
	fmt.Println(n, got.Command, got.Source, string(authority))
	// Output:
	// 73 PROXY [2001:db8::1]:51000 example.com
}
