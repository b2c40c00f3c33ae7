package proxyproto

import (
	"bytes"
	"net/netip"
	"strconv"
)

// v1MaxLen is the longest version 1 line, CRLF included: "UNKNOWN" with two
// full IPv6 addresses and two five-digit ports.
const v1MaxLen = 107

var (
	errV1TooLong   = invalid("v1 line longer than 107 bytes")
	errV1BareLF    = invalid("v1 line ends in LF without CR")
	errV1Protocol  = invalid("v1 unknown protocol")
	errV1Addr      = invalid("v1 bad address")
	errV1Port      = invalid("v1 bad port")
	errV1Local     = invalid("v1 cannot carry LOCAL")
	errV1TLVs      = invalid("v1 cannot carry TLVs")
	errV1Transport = invalid("v1 carries only TCP4, TCP6 and UNKNOWN")
)

// parseV1 reads into h a version 1 line from b, which starts with sigV1.
func (h *Header) parseV1(b []byte) (int, error) {
	end := bytes.IndexByte(b[:min(len(b), v1MaxLen)], '\n')
	if end < 0 {
		if len(b) >= v1MaxLen {
			return 0, errV1TooLong
		}
		return 0, ErrIncomplete
	}
	if b[end-1] != '\r' {
		return 0, errV1BareLF
	}
	return end + 1, h.parseV1Line(b[len(sigV1) : end-1])
}

// parseV1Line reads into h the fields of a version 1 line that follow
// "PROXY ", without its CRLF.
func (h *Header) parseV1Line(line []byte) error {
	h.Version, h.Command = 1, Proxy
	proto, line := field(line)
	switch string(proto) {
	case "UNKNOWN":
		// The specification has the receiver ignore the rest of the line.
		h.Transport = Unknown
		return nil
	case "TCP4":
		h.Transport = TCP4
	case "TCP6":
		h.Transport = TCP6
	default:
		return errV1Protocol
	}
	src, line, ok1 := cutAddr(h.Transport, line)
	dst, line, ok2 := cutAddr(h.Transport, line)
	if !ok1 || !ok2 {
		return errV1Addr
	}
	sport, line, ok1 := cutPort(line)
	dport, line, ok2 := cutPort(line)
	if !ok1 || !ok2 || line != nil {
		return errV1Port
	}
	h.Source = netip.AddrPortFrom(src, sport)
	h.Destination = netip.AddrPortFrom(dst, dport)
	return nil
}

// The cut functions below read the field at the start of s, which ends at a
// space or at the end of s, and return what follows: the rest after the
// space, or nil at the end. Reading IPv4 addresses and ports as they are
// found, rather than splitting the line first, passes over each byte once.

// field cuts the field at the start of s, whatever it holds.
func field(s []byte) (f, rest []byte) {
	// Fields are short: a loop beats the setup of bytes.IndexByte.
	for i, c := range s {
		if c == ' ' {
			return s[:i], s[i+1:]
		}
	}
	return s, nil
}

// cutAddr cuts an address of the family that t names.
func cutAddr(t Transport, s []byte) (ip netip.Addr, rest []byte, ok bool) {
	if t == TCP6 {
		f, rest := field(s)
		ip, ok = parseIPv6(f)
		return ip, rest, ok
	}
	ip4, n := parseIPv4(s)
	rest, ok = fieldEnd(s, n)
	return netip.AddrFrom4(ip4), rest, ok && n > 0
}

// cutPort cuts a port number.
func cutPort(s []byte) (port uint16, rest []byte, ok bool) {
	v, n := decimal(s, 5)
	rest, ok = fieldEnd(s, n)
	return uint16(v), rest, ok && n > 0 && v <= 0xffff
}

// fieldEnd returns what follows a field of n bytes at the start of s, and
// whether the field ends there.
func fieldEnd(s []byte, n int) (rest []byte, ok bool) {
	switch {
	case n == len(s):
		return nil, true
	case s[n] == ' ':
		return s[n+1:], true
	}
	return nil, false
}

// AppendV1 appends h to dst as a version 1 line and returns the extended
// slice. Version 1 carries only the Proxy command, no TLVs, and the TCP4,
// TCP6 and Unknown transports; anything else is an error wrapping ErrInvalid,
// and dst comes back unchanged.
func (h *Header) AppendV1(dst []byte) ([]byte, error) {
	switch {
	case h.Command != Proxy:
		return dst, errV1Local
	case len(h.TLVs) > 0:
		return dst, errV1TLVs
	case h.Transport == Unknown:
		return append(dst, "PROXY UNKNOWN\r\n"...), nil
	case h.Transport != TCP4 && h.Transport != TCP6:
		return dst, errV1Transport
	}
	if err := h.checkAddrs(); err != nil {
		return dst, err
	}
	dst = append(dst, sigV1...)
	dst = append(dst, h.Transport.String()...)
	dst = append(dst, ' ')
	dst = h.Source.Addr().AppendTo(dst)
	dst = append(dst, ' ')
	dst = h.Destination.Addr().AppendTo(dst)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(h.Source.Port()), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(h.Destination.Port()), 10)
	return append(dst, "\r\n"...), nil
}
