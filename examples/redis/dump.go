package main

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// DUMP and RESTORE carry a value in Redis's RDB serialization: its type,
// its encoding, the RDB version (2 bytes) and a CRC-64 of all that (8
// bytes), little-endian. DUMP writes the plain types every Redis since
// 2.6 reads; RESTORE reads those and the compact ones Redis 7.0 writes
// (integers and LZF for strings, intsets, listpacks, quicklists), so a key
// moves between this server and a Redis either way.

var (
	errDumpPayload = errors.New("ERR DUMP payload version or checksum are wrong")
	errBadFormat   = errors.New("ERR Bad data format")
	//lint:ignore ST1005 Redis's wording, full stop included
	errBusyKey  = errors.New("BUSYKEY Target key name already exists.")
	errTTL      = errors.New("ERR Invalid TTL value, must be >= 0")
	errIdletime = errors.New("ERR Invalid IDLETIME value, must be >= 0")
	errFreq     = errors.New("ERR Invalid FREQ value, must be >= 0 and <= 255")
)

// rdbVersion is Redis 7.0's RDB version.
const rdbVersion = 10

// The RDB types.
const (
	rdbString          = 0
	rdbList            = 1
	rdbSet             = 2
	rdbHash            = 4
	rdbZset2           = 5
	rdbSetIntset       = 11
	rdbHashListpack    = 16
	rdbZsetListpack    = 17
	rdbListQuicklist2  = 18
	quicklistPlainNode = 1
	quicklistPacked    = 2
)

// crc64Table is for Redis's CRC-64, the "Jones" polynomial, reflected,
// with no initial or final inversion.
var crc64Table = func() (t [256]uint64) {
	const poly = 0x95ac9329ac4bc9b5
	for i := range t {
		crc := uint64(i)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ poly
			} else {
				crc >>= 1
			}
		}
		t[i] = crc
	}
	return t
}()

func crc64(b []byte) uint64 {
	var crc uint64
	for _, c := range b {
		crc = crc64Table[byte(crc)^c] ^ crc>>8
	}
	return crc
}

// appendRDBLen appends a length in RDB's encoding.
func appendRDBLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, 0x40|byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

func appendRDBString(b []byte, s string) []byte {
	return append(appendRDBLen(b, uint64(len(s))), s...)
}

// dumpValue serializes e's value, with the footer.
func dumpValue(e *entry) []byte {
	var b []byte
	switch v := e.obj.(type) {
	case nil:
		b = append(b, rdbString)
		b = appendRDBLen(b, uint64(len(e.str)))
		b = append(b, e.str...)
	case *list:
		b = appendRDBLen(append(b, rdbList), uint64(v.len()))
		for i := range v.len() {
			b = appendRDBString(b, v.at(i))
		}
	case *set:
		b = appendRDBLen(append(b, rdbSet), uint64(v.len()))
		for m := range v.m {
			b = appendRDBString(b, m)
		}
	case *hash:
		b = appendRDBLen(append(b, rdbHash), uint64(v.len()))
		v.each(func(f, val string) { b = appendRDBString(appendRDBString(b, f), val) })
	case *zset:
		b = appendRDBLen(append(b, rdbZset2), uint64(v.len()))
		for x := v.order.first(); x != nil; x = x.links[0].next {
			b = appendRDBString(b, x.member)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x.score))
		}
	}
	b = binary.LittleEndian.AppendUint16(b, rdbVersion)
	return binary.LittleEndian.AppendUint64(b, crc64(b))
}

// dump is DUMP key: the value, serialized, or a null.
func dump(c *call) {
	sh, _ := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.read(c.args[1], c.now)
	if e == nil {
		c.null()
		return
	}
	c.bulk(dumpValue(e))
}

// restore is RESTORE key ttl serialized-value [REPLACE] [ABSTTL]
// [IDLETIME seconds] [FREQ frequency]. There is no eviction, so IDLETIME
// and FREQ are checked and kept nowhere.
func restore(c *call) {
	var replace, absTTL bool
	var idle, freq bool
	for i := 4; i < len(c.args); i++ {
		left := len(c.args) - i - 1
		switch a := c.args[i]; {
		case eqFold(a, "replace"):
			replace = true
		case eqFold(a, "absttl"):
			absTTL = true
		case eqFold(a, "idletime") && left >= 1 && !freq:
			n, err := parseInt(c.args[i+1])
			if err != nil {
				c.error(err)
				return
			}
			if n < 0 {
				c.error(errIdletime)
				return
			}
			idle = true
			i++
		case eqFold(a, "freq") && left >= 1 && !idle:
			n, err := parseInt(c.args[i+1])
			if err != nil {
				c.error(err)
				return
			}
			if n < 0 || n > 255 {
				c.error(errFreq)
				return
			}
			freq = true
			i++
		default:
			c.error(errSyntax)
			return
		}
	}
	sh, h := c.lock(c.args[1])
	defer c.unlock(sh)
	old := sh.find(c.args[1], c.now)
	if old != nil && !replace {
		c.error(errBusyKey)
		return
	}
	ttl, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	if ttl < 0 {
		c.error(errTTL)
		return
	}
	payload := c.args[3]
	n := len(payload)
	if n < 10 || binary.LittleEndian.Uint16(payload[n-10:]) > rdbVersion ||
		binary.LittleEndian.Uint64(payload[n-8:]) != crc64(payload[:n-8]) {
		c.error(errDumpPayload)
		return
	}
	r := rdbReader{b: payload[:n-10], lim: c.limits()}
	str, obj, ok := r.value()
	if !ok || len(r.b) != 0 {
		c.error(errBadFormat)
		return
	}
	if old != nil {
		sh.remove(old)
	}
	at := int64(0)
	if ttl > 0 {
		at = ttl
		if !absTTL {
			at, _ = addInt(c.now, ttl)
		}
		if at <= c.now {
			c.ok()
			return
		}
	}
	e := sh.add(c.args[1], h)
	e.str, e.obj = str, obj
	sh.setExpire(e, at)
	c.ready(sh, c.args[1])
	c.ok()
}

// rdbReader reads an RDB value from a buffer; every read reports false
// once the input is not what it should be. A collection it reads is held
// by lim, as Redis holds one it loads.
type rdbReader struct {
	b   []byte
	lim limits
}

func (r *rdbReader) byte() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

func (r *rdbReader) take(n uint64) ([]byte, bool) {
	if n > uint64(len(r.b)) {
		return nil, false
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, true
}

// length reads a length, or, for a string of a special encoding, its
// encoding with enc true.
func (r *rdbReader) length() (n uint64, enc bool, ok bool) {
	c, ok := r.byte()
	if !ok {
		return 0, false, false
	}
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3f), false, true
	case 1:
		d, ok := r.byte()
		return uint64(c&0x3f)<<8 | uint64(d), false, ok
	case 3:
		return uint64(c & 0x3f), true, true
	}
	switch c {
	case 0x80:
		b, ok := r.take(4)
		if !ok {
			return 0, false, false
		}
		return uint64(binary.BigEndian.Uint32(b)), false, true
	case 0x81:
		b, ok := r.take(8)
		if !ok {
			return 0, false, false
		}
		return binary.BigEndian.Uint64(b), false, true
	}
	return 0, false, false
}

// count reads a length of elements; each takes a byte at least, which
// bounds what a bad one can make us allocate.
func (r *rdbReader) count() (int, bool) {
	n, enc, ok := r.length()
	if !ok || enc || n > uint64(len(r.b)) {
		return 0, false
	}
	return int(n), true
}

// str reads a string in any of its encodings.
func (r *rdbReader) str() ([]byte, bool) {
	n, enc, ok := r.length()
	if !ok {
		return nil, false
	}
	if !enc {
		b, ok := r.take(n)
		return append([]byte(nil), b...), ok
	}
	switch n {
	case 0, 1, 2: // integers of 1, 2 and 4 bytes
		b, ok := r.take(1 << n)
		if !ok {
			return nil, false
		}
		var v int64
		switch n {
		case 0:
			v = int64(int8(b[0]))
		case 1:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		}
		return strconv.AppendInt(nil, v, 10), true
	case 3: // LZF
		clen, _, ok1 := r.length()
		ulen, _, ok2 := r.length()
		data, ok3 := r.take(clen)
		if !ok1 || !ok2 || !ok3 || ulen > 1<<32 {
			return nil, false
		}
		return lzfDecompress(data, int(ulen))
	}
	return nil, false
}

// lzfDecompress undoes LZF compression into n bytes.
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a run of ctrl+1 literal bytes
			if i+ctrl+1 > len(in) || len(out)+ctrl+1 > n {
				return nil, false
			}
			out = append(out, in[i:i+ctrl+1]...)
			i += ctrl + 1
			continue
		}
		l := ctrl >> 5 // a back reference of l+2 bytes
		if l == 7 {
			if i >= len(in) {
				return nil, false
			}
			l += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1f)<<8 - 1 - int(in[i])
		i++
		if ref < 0 || len(out)+l+2 > n {
			return nil, false
		}
		for j := range l + 2 {
			out = append(out, out[ref+j])
		}
	}
	return out, len(out) == n
}

// value reads a value of any type this server has: a string's bytes, or
// a collection.
func (r *rdbReader) value() ([]byte, any, bool) {
	typ, ok := r.byte()
	if !ok {
		return nil, nil, false
	}
	switch typ {
	case rdbString:
		s, ok := r.str()
		return s, nil, ok
	case rdbList:
		n, ok := r.count()
		l := newList()
		for i := 0; ok && i < n; i++ {
			var s []byte
			s, ok = r.str()
			l.pushBack(string(s))
		}
		return nil, l, ok && n > 0
	case rdbListQuicklist2:
		return r.quicklist()
	case rdbSet:
		n, ok := r.count()
		s := newSet()
		for i := 0; ok && i < n; i++ {
			var m []byte
			m, ok = r.str()
			s.add(string(m), r.lim)
		}
		return nil, s, ok && n > 0
	case rdbSetIntset:
		b, ok := r.str()
		if !ok {
			return nil, nil, false
		}
		s, ok := readIntset(b, r.lim)
		return nil, s, ok && s.len() > 0
	case rdbHash:
		n, ok := r.count()
		h := newHash()
		for i := 0; ok && i < n; i++ {
			var f, v []byte
			f, ok = r.str()
			if ok {
				v, ok = r.str()
			}
			h.set(f, v, r.lim)
		}
		return nil, h, ok && n > 0
	case rdbHashListpack:
		entries, ok := r.listpack()
		if !ok || len(entries)%2 != 0 || len(entries) == 0 {
			return nil, nil, false
		}
		h := newHash()
		for i := 0; i < len(entries); i += 2 {
			h.set([]byte(entries[i]), []byte(entries[i+1]), r.lim)
		}
		return nil, h, true
	case rdbZset2:
		n, ok := r.count()
		z := newZset()
		for i := 0; ok && i < n; i++ {
			var m, f []byte
			m, ok = r.str()
			if ok {
				f, ok = r.take(8)
			}
			if ok {
				score := math.Float64frombits(binary.LittleEndian.Uint64(f))
				ok = !math.IsNaN(score)
				z.set(m, score, r.lim)
			}
		}
		return nil, z, ok && n > 0
	case rdbZsetListpack:
		entries, ok := r.listpack()
		if !ok || len(entries)%2 != 0 || len(entries) == 0 {
			return nil, nil, false
		}
		z := newZset()
		for i := 0; i < len(entries); i += 2 {
			score, err := parseFloat([]byte(entries[i+1]))
			if err != nil {
				return nil, nil, false
			}
			z.set([]byte(entries[i]), score, r.lim)
		}
		return nil, z, true
	}
	return nil, nil, false
}

// quicklist reads Redis 7.0's list: nodes, each a listpack of elements
// or, for a large element, the element alone.
func (r *rdbReader) quicklist() ([]byte, any, bool) {
	n, ok := r.count()
	l := newList()
	for i := 0; ok && i < n; i++ {
		var container uint64
		container, _, ok = r.length()
		if !ok {
			break
		}
		switch container {
		case quicklistPlainNode:
			var s []byte
			s, ok = r.str()
			l.pushBack(string(s))
		case quicklistPacked:
			var entries []string
			entries, ok = r.listpack()
			for _, e := range entries {
				l.pushBack(e)
			}
		default:
			ok = false
		}
	}
	return nil, l, ok && l.len() > 0
}

// listpack reads a listpack, a string holding entries of strings and
// integers, into its entries as strings.
func (r *rdbReader) listpack() ([]string, bool) {
	b, ok := r.str()
	if !ok || len(b) < 7 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != 0xff {
		return nil, false
	}
	b = b[6 : len(b)-1]
	var out []string
	for len(b) > 0 {
		v, size, ok := listpackEntry(b)
		if !ok {
			return nil, false
		}
		// Each entry is followed by its length, backwards, in 1 to 5
		// bytes.
		back := 5
		for i, limit := range []int{128, 16383, 2097151, 268435455} {
			if size < limit {
				back = i + 1
				break
			}
		}
		if size+back > len(b) {
			return nil, false
		}
		out = append(out, v)
		b = b[size+back:]
	}
	return out, true
}

// listpackEntry decodes the entry b starts with, and returns it as a
// string and its size without the length after it.
func listpackEntry(b []byte) (string, int, bool) {
	c := b[0]
	str := func(hdr, n int) (string, int, bool) {
		if hdr+n > len(b) {
			return "", 0, false
		}
		return string(b[hdr : hdr+n]), hdr + n, true
	}
	integer := func(n int) (string, int, bool) {
		if 1+n > len(b) {
			return "", 0, false
		}
		var u uint64
		for i := n; i >= 1; i-- {
			u = u<<8 | uint64(b[i])
		}
		v := int64(u<<(64-8*n)) >> (64 - 8*n) // sign-extended
		return strconv.FormatInt(v, 10), 1 + n, true
	}
	switch {
	case c&0x80 == 0:
		return strconv.Itoa(int(c)), 1, true
	case c&0xc0 == 0x80:
		return str(1, int(c&0x3f))
	case c&0xe0 == 0xc0:
		if len(b) < 2 {
			return "", 0, false
		}
		v := int(c&0x1f)<<8 | int(b[1])
		if v >= 1<<12 {
			v -= 1 << 13
		}
		return strconv.Itoa(v), 2, true
	case c&0xf0 == 0xe0:
		if len(b) < 2 {
			return "", 0, false
		}
		return str(2, int(c&0x0f)<<8|int(b[1]))
	}
	switch c {
	case 0xf0:
		if len(b) < 5 {
			return "", 0, false
		}
		return str(5, int(binary.LittleEndian.Uint32(b[1:])))
	case 0xf1:
		return integer(2)
	case 0xf2:
		return integer(3)
	case 0xf3:
		return integer(4)
	case 0xf4:
		return integer(8)
	}
	return "", 0, false
}

// readIntset reads an intset: the size of its integers, their count, and
// them, little-endian.
func readIntset(b []byte, lim limits) (*set, bool) {
	if len(b) < 8 {
		return nil, false
	}
	size := int(binary.LittleEndian.Uint32(b))
	n := int(binary.LittleEndian.Uint32(b[4:]))
	b = b[8:]
	if (size != 2 && size != 4 && size != 8) || n*size != len(b) {
		return nil, false
	}
	s := newSet()
	for i := range n {
		var v int64
		switch size {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(b[i*2:])))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(b[i*4:])))
		default:
			v = int64(binary.LittleEndian.Uint64(b[i*8:]))
		}
		s.add(strconv.FormatInt(v, 10), lim)
	}
	return s, true
}
