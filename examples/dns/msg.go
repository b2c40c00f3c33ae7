package main

import (
	"encoding/binary"
	"errors"
)

// The parts of a DNS message (RFC 1035, section 4) this server reads and
// writes.
const (
	headerLen = 12

	flagQR      = 1 << 15 // a response
	flagAA      = 1 << 10 // an authoritative answer
	flagTC      = 1 << 9  // truncated
	flagRD      = 1 << 8  // recursion desired, copied into the answer
	opcodeShift = 11

	rcodeNoError  = 0
	rcodeFormErr  = 1
	rcodeNXDomain = 3
	rcodeNotImp   = 4
	rcodeRefused  = 5
	rcodeBadVers  = 16 // EDNS (RFC 6891): 4 bits in the header, the rest in the OPT record

	typeA    = 1
	typeAAAA = 28
	typeOPT  = 41
	classIN  = 1

	maxName    = 255  // the longest name in wire form
	maxLabel   = 63   // the longest label
	plainUDP   = 512  // what a UDP answer may take without EDNS
	ednsUDP    = 1232 // what this server offers and takes with EDNS: a common safe size
	rrFixedLen = 10   // type, class, TTL and data length
)

var (
	// errNoAnswer is for a message not to answer at all: shorter than a
	// header, so with no ID to answer to, or a response, which answering
	// could bounce between two servers forever.
	errNoAnswer = errors.New("dns: not a query to answer")
	// errFormat is a query that breaks the format: FORMERR.
	errFormat = errors.New("dns: malformed query")
)

// query is what a DNS query asks, its slices viewing the message.
type query struct {
	id       uint16
	opcode   uint8
	rd       bool
	question []byte // the question as it came: name, type and class
	name     []byte // its name in wire form: length-prefixed labels, then 0
	qtype    uint16
	qclass   uint16

	edns        bool   // the query has an OPT record (RFC 6891)
	ednsVersion uint8  // its version
	udpSize     uint16 // the answer size it takes over UDP
}

// parseQuery reads a query from m. It returns errNoAnswer for a message
// not to answer and errFormat for a query to answer with FORMERR: not
// exactly one question, a name that breaks the format (a compression
// pointer in the question among them, which no client sends), a record
// cut short, bytes past the last record, or an OPT record that is not the
// only one or not at the root. The records of the answer and authority
// sections, which a query does not have, are passed over; so are those of
// the additional section but its OPT record. It allocates nothing.
func parseQuery(m []byte) (q query, err error) {
	if len(m) < headerLen {
		return q, errNoAnswer
	}
	flags := binary.BigEndian.Uint16(m[2:])
	if flags&flagQR != 0 {
		return q, errNoAnswer
	}
	q.id = binary.BigEndian.Uint16(m)
	q.opcode = uint8(flags>>opcodeShift) & 0xf
	q.rd = flags&flagRD != 0
	qd, an, ns, ar := count(m, 4), count(m, 6), count(m, 8), count(m, 10)
	if qd != 1 {
		return q, errFormat
	}
	off := headerLen
	n := nameLen(m[off:])
	if n < 0 || len(m) < off+n+4 {
		return q, errFormat
	}
	q.name = m[off : off+n]
	q.qtype = binary.BigEndian.Uint16(m[off+n:])
	q.qclass = binary.BigEndian.Uint16(m[off+n+2:])
	q.question = m[off : off+n+4]
	off += n + 4
	for i := range an + ns + ar {
		end, rr, ok := record(m, off)
		if !ok {
			return q, errFormat
		}
		if i >= an+ns && rr.typ == typeOPT {
			if q.edns || !rr.root {
				return q, errFormat
			}
			q.edns, q.udpSize, q.ednsVersion = true, rr.class, uint8(rr.ttl>>16)
		}
		off = end
	}
	if off != len(m) {
		return q, errFormat
	}
	return q, nil
}

// count reads the 16-bit count at off in the header.
func count(m []byte, off int) int { return int(binary.BigEndian.Uint16(m[off:])) }

// nameLen returns the length of the uncompressed name at the start of b,
// its final 0 included, or -1 if it is malformed, compressed or longer
// than maxName.
func nameLen(b []byte) int {
	n := 0
	for {
		if n >= len(b) || n >= maxName {
			return -1
		}
		l := int(b[n])
		switch {
		case l == 0:
			return n + 1
		case l > maxLabel: // a pointer (0xc0) or a reserved label type
			return -1
		}
		n += 1 + l
	}
}

// rrHead is what parseQuery reads of a record: whether its name is the
// root, and its fixed fields.
type rrHead struct {
	root  bool
	typ   uint16
	class uint16
	ttl   uint32
}

// record reads the record at off in m, whose name may end in a
// compression pointer, and returns where it ends.
func record(m []byte, off int) (end int, rr rrHead, ok bool) {
	start := off
	for {
		if off >= len(m) || off-start >= maxName {
			return 0, rr, false
		}
		l := int(m[off])
		if l == 0 {
			off++
			break
		}
		if l&0xc0 == 0xc0 { // a pointer ends the name
			off += 2
			break
		}
		if l > maxLabel {
			return 0, rr, false
		}
		off += 1 + l
	}
	rr.root = off == start+1
	if off+rrFixedLen > len(m) {
		return 0, rr, false
	}
	rr.typ = binary.BigEndian.Uint16(m[off:])
	rr.class = binary.BigEndian.Uint16(m[off+2:])
	rr.ttl = binary.BigEndian.Uint32(m[off+4:])
	end = off + rrFixedLen + int(binary.BigEndian.Uint16(m[off+8:]))
	if end > len(m) {
		return 0, rr, false
	}
	return end, rr, true
}

// appendFormErr appends to dst the FORMERR answer to m, a message that
// holds at least a header but no query parseQuery could read: the ID and
// opcode it came with, and no question.
func appendFormErr(dst, m []byte) []byte {
	flags := flagQR | binary.BigEndian.Uint16(m[2:])&(0xf<<opcodeShift|flagRD) | rcodeFormErr
	dst = binary.BigEndian.AppendUint16(dst, binary.BigEndian.Uint16(m))
	dst = binary.BigEndian.AppendUint16(dst, flags)
	return append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
}

// appendAnswer appends to dst the answer to q with rcode and the records
// of addrs (each 4 or 16 bytes: A or AAAA records) under q's name, with
// ttl, and an OPT record if q had one. An answer larger than q may take
// over UDP keeps its question alone and says it is truncated (TC), so
// that the client asks again over TCP.
func appendAnswer(dst []byte, q *query, rcode int, addrs [][]byte, ttl uint32) []byte {
	start := len(dst)
	flags := uint16(flagQR|flagAA) | uint16(q.opcode)<<opcodeShift | uint16(rcode&0xf)
	if q.rd {
		flags |= flagRD
	}
	arcount := 0
	if q.edns {
		arcount = 1
	}
	dst = binary.BigEndian.AppendUint16(dst, q.id)
	dst = binary.BigEndian.AppendUint16(dst, flags)
	dst = binary.BigEndian.AppendUint16(dst, 1)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(addrs)))
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(arcount))
	dst = append(dst, q.question...)
	withQuestion := len(dst)
	for _, a := range addrs {
		typ := uint16(typeA)
		if len(a) == 16 {
			typ = typeAAAA
		}
		dst = append(dst, 0xc0, headerLen) // the question's name
		dst = binary.BigEndian.AppendUint16(dst, typ)
		dst = binary.BigEndian.AppendUint16(dst, classIN)
		dst = binary.BigEndian.AppendUint32(dst, ttl)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(a)))
		dst = append(dst, a...)
	}
	limit := plainUDP
	if q.edns {
		limit = min(max(int(q.udpSize), plainUDP), ednsUDP)
		dst = appendOPT(dst, rcode)
	}
	if len(dst)-start > limit {
		dst = dst[:withQuestion]
		binary.BigEndian.PutUint16(dst[start+2:], flags|flagTC)
		binary.BigEndian.PutUint16(dst[start+6:], 0)
		if q.edns {
			dst = appendOPT(dst, rcode)
		}
	}
	return dst
}

// appendOPT appends the OPT record of an answer: the size this server
// takes, version 0, and the upper bits of rcode.
func appendOPT(dst []byte, rcode int) []byte {
	dst = append(dst, 0) // the root
	dst = binary.BigEndian.AppendUint16(dst, typeOPT)
	dst = binary.BigEndian.AppendUint16(dst, ednsUDP)
	dst = binary.BigEndian.AppendUint32(dst, uint32(rcode>>4)<<24)
	return binary.BigEndian.AppendUint16(dst, 0)
}
