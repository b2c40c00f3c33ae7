// Package proxyproto parses and encodes the PROXY protocol header that load
// balancers such as HAProxy put before a relayed connection's first byte, so
// that the server behind them learns the original client's address.
//
// Both versions of HAProxy's specification (proxy-protocol.txt) are handled:
// the text line of version 1 ("PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\n")
// and the binary header of version 2, with its TLVs and, when present, a
// verified CRC32C checksum.
//
// Parse works on whatever bytes a connection has buffered so far, as an event
// loop holds them, and tells its three outcomes apart with errors:
//
//   - ErrIncomplete: the bytes are a prefix of a header; wait for more.
//   - ErrNotProxy: the bytes cannot begin a header; they are plain traffic,
//     which a server that requires the protocol rejects.
//   - ErrInvalid (wrapped with the reason): a PROXY header that breaks the
//     specification; close the connection.
//
// On success Parse reports how many bytes the header occupies; the payload
// follows them. Parse allocates nothing, never reads past the slice it is
// given, and returns views into it (TLV values, Unix socket paths), so the
// caller must keep those bytes unchanged while it uses the Header.
//
// A version 1 line is at most 107 bytes; a version 2 header at most
// 16+65535 bytes. A server should bound how long it waits for either.
//
// Only trusted proxies may send this header: a server that accepts it from
// anyone lets any client claim any address.
package proxyproto
