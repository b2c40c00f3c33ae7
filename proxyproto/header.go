package proxyproto

import (
	"errors"
	"fmt"
	"net/netip"
)

var (
	// ErrIncomplete means the bytes given to Parse are the start of a PROXY
	// header that has not fully arrived: call Parse again with more.
	ErrIncomplete = errors.New("proxyproto: incomplete header")

	// ErrNotProxy means the bytes given to Parse cannot begin a PROXY
	// header, so the connection carries plain traffic.
	ErrNotProxy = errors.New("proxyproto: not a PROXY header")

	// ErrInvalid means a header breaks the specification, whether Parse
	// read it or an encoder was asked to write it. The error returned wraps
	// ErrInvalid with the reason.
	ErrInvalid = errors.New("proxyproto: invalid")
)

// invalid makes a reason for ErrInvalid. Every reason is made once, when the
// package starts, so that rejecting a header allocates nothing.
func invalid(reason string) error { return fmt.Errorf("%w: %s", ErrInvalid, reason) }

var (
	errCommand   = invalid("bad command")
	errTransport = invalid("bad transport")
	errFamily    = invalid("address family does not match transport")
	errUnixLen   = invalid("Unix socket path longer than 108 bytes")
)

// Command says whether a header relays a client's connection.
type Command uint8

const (
	// Local marks a connection the proxy opened itself, such as a health
	// check: the receiver must use the connection's real endpoints and
	// ignore any addresses in the header.
	Local Command = 0x0
	// Proxy marks a connection relayed on behalf of a client whose
	// endpoints the header carries. Every version 1 header is a Proxy one.
	Proxy Command = 0x1
)

// String returns the command's name in the specification: "LOCAL" or "PROXY".
func (c Command) String() string {
	switch c {
	case Local:
		return "LOCAL"
	case Proxy:
		return "PROXY"
	}
	return fmt.Sprintf("Command(%#x)", uint8(c))
}

// Transport is the relayed connection's address family and socket type. Its
// value is the family and protocol byte of a version 2 header.
type Transport uint8

const (
	// Unknown is version 1's "UNKNOWN" and version 2's AF_UNSPEC: the
	// header carries no addresses, and the receiver uses the real ones.
	Unknown    Transport = 0x00
	TCP4       Transport = 0x11 // TCP over IPv4
	UDP4       Transport = 0x12 // UDP over IPv4 (version 2 only)
	TCP6       Transport = 0x21 // TCP over IPv6
	UDP6       Transport = 0x22 // UDP over IPv6 (version 2 only)
	UnixStream Transport = 0x31 // stream over a Unix socket (version 2 only)
	UnixDgram  Transport = 0x32 // datagrams over a Unix socket (version 2 only)
)

// unixPathLen is the size of a Unix socket address in a version 2 header,
// that of sun_path in struct sockaddr_un.
const unixPathLen = 108

// addrLen returns the size of t's address block in a version 2 header, or -1
// if t is not a transport the specification lists.
func (t Transport) addrLen() int {
	switch t {
	case Unknown:
		return 0
	case TCP4, UDP4:
		return 2*4 + 2*2
	case TCP6, UDP6:
		return 2*16 + 2*2
	case UnixStream, UnixDgram:
		return 2 * unixPathLen
	}
	return -1
}

// String returns the transport's name: the version 1 keyword for Unknown,
// TCP4 and TCP6, and a name in the same style for the others.
func (t Transport) String() string {
	switch t {
	case Unknown:
		return "UNKNOWN"
	case TCP4:
		return "TCP4"
	case UDP4:
		return "UDP4"
	case TCP6:
		return "TCP6"
	case UDP6:
		return "UDP6"
	case UnixStream:
		return "UNIX-STREAM"
	case UnixDgram:
		return "UNIX-DGRAM"
	}
	return fmt.Sprintf("Transport(%#x)", uint8(t))
}

// Header is a PROXY protocol header. Parse fills it in; AppendV1 and
// AppendV2 write it out. Fields that the Transport does not use are zero
// after Parse and ignored by the encoders.
type Header struct {
	// Version is 1 for the text format and 2 for the binary one. Parse
	// sets it; the encoders ignore it.
	Version int

	Command   Command
	Transport Transport

	// Source and Destination are the relayed connection's endpoints for
	// the TCP and UDP transports: Source is the original client.
	Source, Destination netip.AddrPort

	// SourceUnix and DestinationUnix are the socket paths for the Unix
	// transports, without the NUL bytes that pad them to 108 bytes. An
	// abstract socket's path keeps its leading NUL.
	SourceUnix, DestinationUnix []byte

	// TLVs holds the extensions of a version 2 header, CRC32C included.
	TLVs TLVs
}

// checkAddrs reports whether h's addresses suit its transport, so that an
// encoder never writes a header Parse would read differently.
func (h *Header) checkAddrs() error {
	src, dst := h.Source.Addr(), h.Destination.Addr()
	switch h.Transport {
	case TCP4, UDP4:
		if !src.Is4() || !dst.Is4() {
			return errFamily
		}
	case TCP6, UDP6:
		if !src.Is6() || !dst.Is6() || src.Zone() != "" || dst.Zone() != "" {
			return errFamily
		}
	case UnixStream, UnixDgram:
		if len(h.SourceUnix) > unixPathLen || len(h.DestinationUnix) > unixPathLen {
			return errUnixLen
		}
	}
	return nil
}

// Signatures that open each version's header.
const (
	sigV1 = "PROXY "
	sigV2 = "\r\n\r\n\x00\r\nQUIT\n"
)

// Parse reads the PROXY header at the start of b, in either version. It
// returns the header and the number of bytes it occupies, which the caller
// discards before reading the payload. The error is ErrIncomplete, ErrNotProxy
// or one wrapping ErrInvalid, as the package documentation explains.
func Parse(b []byte) (h Header, n int, err error) {
	// The version parsers fill in h where it lies, rather than return a
	// Header to copy: on the hot path the copies cost more than the parsing.
	switch {
	case len(b) >= v2FixedLen && string(b[:len(sigV2)]) == sigV2:
		n, err = h.parseV2(b)
	case len(b) >= len(sigV1) && string(b[:len(sigV1)]) == sigV1:
		n, err = h.parseV1(b)
	case hasPrefix(sigV2, b) || hasPrefix(sigV1, b):
		err = ErrIncomplete
	default:
		err = ErrNotProxy
	}
	if err != nil {
		return Header{}, 0, err
	}
	return h, n, nil
}

// hasPrefix reports whether sig starts with b, or b with sig.
func hasPrefix(sig string, b []byte) bool {
	n := min(len(b), len(sig))
	return string(b[:n]) == sig[:n]
}
