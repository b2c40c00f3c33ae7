package proxyproto

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"slices"
)

// v2FixedLen is the size of the fixed part of a version 2 header: the
// signature, the version and command, the transport, and the length of what
// follows.
const v2FixedLen = 16

var (
	errV2Version  = invalid("v2 bad version")
	errV2AddrLen  = invalid("v2 length shorter than address block")
	errV2TooLong  = invalid("v2 header longer than 65535 bytes after the fixed part")
	errV2Checksum = invalid("v2 CRC32C mismatch")
)

// castagnoli is the table of the CRC32C polynomial that the CRC32C TLV uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// zeroCRC stands in for the CRC32C value while the checksum is computed. It
// lives here because hash/crc32 lets its input escape.
var zeroCRC [4]byte

// parseV2 reads into h a version 2 header from b, which holds at least the
// fixed part and starts with sigV2.
func (h *Header) parseV2(b []byte) (int, error) {
	if b[12]>>4 != 2 {
		return 0, errV2Version
	}
	cmd := Command(b[12] & 0xf)
	if cmd != Local && cmd != Proxy {
		return 0, errCommand
	}
	tr := Transport(b[13])
	alen := tr.addrLen()
	if alen < 0 {
		return 0, errTransport
	}
	n := v2FixedLen + int(binary.BigEndian.Uint16(b[14:]))
	if n < v2FixedLen+alen {
		return 0, errV2AddrLen
	}
	if len(b) < n {
		return 0, ErrIncomplete
	}
	h.Version, h.Command, h.Transport = 2, cmd, tr
	addrs := b[v2FixedLen : v2FixedLen+alen]
	switch tr {
	case TCP4, UDP4:
		h.Source, h.Destination = ipPorts(addrs, 4)
	case TCP6, UDP6:
		h.Source, h.Destination = ipPorts(addrs, 16)
	case UnixStream, UnixDgram:
		h.SourceUnix = unixPath(addrs[:unixPathLen])
		h.DestinationUnix = unixPath(addrs[unixPathLen:])
	}
	h.TLVs = TLVs(b[v2FixedLen+alen : n : n])
	if len(h.TLVs) > 0 {
		crcAt, err := h.TLVs.check()
		if err != nil {
			return 0, err
		}
		if crcAt >= 0 && !checksumOK(b[:n], v2FixedLen+alen+crcAt) {
			return 0, errV2Checksum
		}
	}
	return n, nil
}

// ipPorts reads the source and destination endpoints from an address block
// of two IP addresses of the given size followed by two ports.
func ipPorts(b []byte, size int) (src, dst netip.AddrPort) {
	sport := binary.BigEndian.Uint16(b[2*size:])
	dport := binary.BigEndian.Uint16(b[2*size+2:])
	if size == 4 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), sport),
			netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), dport)
	}
	return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), sport),
		netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[16:32])), dport)
}

// unixPath returns a Unix socket address without the NUL bytes that pad it.
func unixPath(b []byte) []byte {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return b[:n:n]
}

// checksumOK reports whether the CRC32C value at offset at of the header
// hdr matches the checksum of hdr with that value taken as zero.
func checksumOK(hdr []byte, at int) bool {
	c := crc32.Update(0, castagnoli, hdr[:at])
	c = crc32.Update(c, castagnoli, zeroCRC[:])
	c = crc32.Update(c, castagnoli, hdr[at+4:])
	return c == binary.BigEndian.Uint32(hdr[at:])
}

// AppendV2 appends h to dst as a version 2 header and returns the extended
// slice. It writes h.TLVs as they are, except that it fills in the value of a
// CRC32C TLV, if there is one, with the header's checksum: to send a
// checksum, include a CRC32C TLV with any 4-byte value. A header Parse would
// reject is an error wrapping ErrInvalid, and dst comes back unchanged.
func (h *Header) AppendV2(dst []byte) ([]byte, error) {
	if h.Command != Local && h.Command != Proxy {
		return dst, errCommand
	}
	alen := h.Transport.addrLen()
	if alen < 0 {
		return dst, errTransport
	}
	if err := h.checkAddrs(); err != nil {
		return dst, err
	}
	crcAt, err := h.TLVs.check()
	if err != nil {
		return dst, err
	}
	n := alen + len(h.TLVs)
	if n > 0xffff {
		return dst, errV2TooLong
	}
	start := len(dst)
	dst = append(dst, sigV2...)
	dst = append(dst, 0x20|byte(h.Command), byte(h.Transport), byte(n>>8), byte(n))
	dst = h.appendAddrs(dst)
	dst = append(dst, h.TLVs...)
	if crcAt >= 0 {
		hdr := dst[start:]
		at := v2FixedLen + alen + crcAt
		clear(hdr[at : at+4])
		binary.BigEndian.PutUint32(hdr[at:], crc32.Checksum(hdr, castagnoli))
	}
	return dst, nil
}

// appendAddrs appends the address block of h's transport to dst.
func (h *Header) appendAddrs(dst []byte) []byte {
	switch h.Transport {
	case TCP4, UDP4:
		src, dstIP := h.Source.Addr().As4(), h.Destination.Addr().As4()
		dst = append(append(dst, src[:]...), dstIP[:]...)
	case TCP6, UDP6:
		src, dstIP := h.Source.Addr().As16(), h.Destination.Addr().As16()
		dst = append(append(dst, src[:]...), dstIP[:]...)
	case UnixStream, UnixDgram:
		return appendUnixPath(appendUnixPath(dst, h.SourceUnix), h.DestinationUnix)
	default:
		return dst
	}
	dst = binary.BigEndian.AppendUint16(dst, h.Source.Port())
	return binary.BigEndian.AppendUint16(dst, h.Destination.Port())
}

// appendUnixPath appends path to dst padded with NULs to unixPathLen bytes.
func appendUnixPath(dst, path []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, unixPathLen)[:n+unixPathLen]
	clear(dst[n+copy(dst[n:], path):])
	return dst
}
