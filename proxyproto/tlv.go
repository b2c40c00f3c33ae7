package proxyproto

import (
	"encoding/binary"
	"iter"
)

// TLVType is the type of a TLV (type-length-value) extension in a version 2
// header, or of a sub-TLV inside the SSL one.
type TLVType uint8

// TLV types registered by the specification. Other types, such as the
// custom range 0xE0-0xEF, pass through untouched.
const (
	TypeALPN      TLVType = 0x01 // application protocol, as in TLS ALPN
	TypeAuthority TLVType = 0x02 // host name the client asked for, as in TLS SNI
	TypeCRC32C    TLVType = 0x03 // CRC32C checksum of the header, 4 bytes
	TypeNoop      TLVType = 0x04 // padding, to be ignored
	TypeUniqueID  TLVType = 0x05 // opaque connection ID, at most 128 bytes
	TypeSSL       TLVType = 0x20 // TLS details, read with TLVs.SSL
	TypeNetNS     TLVType = 0x30 // network namespace name

	SubtypeSSLVersion TLVType = 0x21 // TLS version, such as "TLSv1.3"
	SubtypeSSLCN      TLVType = 0x22 // client certificate's Common Name
	SubtypeSSLCipher  TLVType = 0x23 // cipher, such as "ECDHE-RSA-AES128-GCM-SHA256"
	SubtypeSSLSigAlg  TLVType = 0x24 // signature algorithm of the server certificate
	SubtypeSSLKeyAlg  TLVType = 0x25 // key algorithm of the server certificate
)

// Bits of SSL.Client.
const (
	ClientSSL      = 0x01 // the client connected over TLS
	ClientCertConn = 0x02 // it sent a certificate on this connection
	ClientCertSess = 0x04 // it sent one at least once in this TLS session
)

// maxUniqueID is the longest value of a UNIQUE_ID TLV.
const maxUniqueID = 128

var (
	errTLVTruncated = invalid("v2 truncated TLV")
	errTLVTooLong   = invalid("TLV value longer than 65535 bytes")
	errCRCLen       = invalid("v2 CRC32C TLV not 4 bytes")
	errCRCDup       = invalid("v2 more than one CRC32C TLV")
	errUniqueIDLen  = invalid("v2 UNIQUE_ID TLV longer than 128 bytes")
	errSSLShort     = invalid("v2 SSL TLV shorter than 5 bytes")
	errSSLSub       = invalid("v2 SSL TLV with a truncated sub-TLV")
)

// TLVs is a sequence of encoded TLVs: the tail of a version 2 header, or the
// sub-TLVs of the SSL one. After Parse it is a view into the parsed bytes.
type TLVs []byte

// next splits the first TLV off t. ok is false when t is empty or its first
// TLV runs past its end.
func (t TLVs) next() (typ TLVType, value []byte, rest TLVs, ok bool) {
	if len(t) < 3 {
		return 0, nil, t, false
	}
	end := 3 + int(binary.BigEndian.Uint16(t[1:]))
	if end > len(t) {
		return 0, nil, t, false
	}
	return TLVType(t[0]), t[3:end:end], t[end:], true
}

// All returns an iterator over the type and value of each TLV in t, in
// order. It stops early at a TLV that runs past the end of t, which Parse
// never lets through.
func (t TLVs) All() iter.Seq2[TLVType, []byte] {
	return func(yield func(TLVType, []byte) bool) {
		for {
			typ, value, rest, ok := t.next()
			if !ok || !yield(typ, value) {
				return
			}
			t = rest
		}
	}
}

// Lookup returns the value of the first TLV of type typ in t.
func (t TLVs) Lookup(typ TLVType) (value []byte, ok bool) {
	for {
		var ty TLVType
		if ty, value, t, ok = t.next(); !ok || ty == typ {
			return value, ok
		}
	}
}

// SSL is the value of the SSL TLV: what the proxy learned from the client's
// TLS connection.
type SSL struct {
	// Client holds the ClientSSL, ClientCertConn and ClientCertSess bits.
	Client uint8
	// Verify is zero when the client's certificate was verified.
	Verify uint32
	// TLVs holds the sub-TLVs, of the SubtypeSSL types.
	TLVs TLVs
}

// SSL returns the value of the first SSL TLV in t.
func (t TLVs) SSL() (SSL, bool) {
	v, ok := t.Lookup(TypeSSL)
	if !ok || len(v) < 5 {
		return SSL{}, false
	}
	return SSL{Client: v[0], Verify: binary.BigEndian.Uint32(v[1:]), TLVs: TLVs(v[5:])}, true
}

// Append returns t with a TLV of type typ and the given value added at the
// end. A value longer than 65535 bytes is an error wrapping ErrInvalid.
func (t TLVs) Append(typ TLVType, value []byte) (TLVs, error) {
	t, err := t.appendHead(typ, len(value))
	if err != nil {
		return t, err
	}
	return append(t, value...), nil
}

// AppendSSL returns t with an SSL TLV holding s added at the end.
func (t TLVs) AppendSSL(s SSL) (TLVs, error) {
	t, err := t.appendHead(TypeSSL, 5+len(s.TLVs))
	if err != nil {
		return t, err
	}
	t = append(t, s.Client)
	t = binary.BigEndian.AppendUint32(t, s.Verify)
	return append(t, s.TLVs...), nil
}

// appendHead appends the type and length of a TLV whose value is n bytes.
func (t TLVs) appendHead(typ TLVType, n int) (TLVs, error) {
	if n > 0xffff {
		return t, errTLVTooLong
	}
	return append(t, byte(typ), byte(n>>8), byte(n)), nil
}

// check verifies that t is a sequence of whole TLVs that obey the limits the
// specification sets on their types, and returns the offset in t of the
// CRC32C value, or -1 when there is none.
func (t TLVs) check() (crcAt int, err error) {
	crcAt = -1
	for rest := t; len(rest) > 0; {
		off := len(t) - len(rest)
		typ, v, r, ok := rest.next()
		if !ok {
			return -1, errTLVTruncated
		}
		switch typ {
		case TypeCRC32C:
			if len(v) != 4 {
				return -1, errCRCLen
			}
			if crcAt >= 0 {
				return -1, errCRCDup
			}
			crcAt = off + 3
		case TypeUniqueID:
			if len(v) > maxUniqueID {
				return -1, errUniqueIDLen
			}
		case TypeSSL:
			if len(v) < 5 {
				return -1, errSSLShort
			}
			if !TLVs(v[5:]).whole() {
				return -1, errSSLSub
			}
		}
		rest = r
	}
	return crcAt, nil
}

// whole reports whether t is a sequence of whole TLVs.
func (t TLVs) whole() bool {
	for len(t) > 0 {
		var ok bool
		if _, _, t, ok = t.next(); !ok {
			return false
		}
	}
	return true
}
