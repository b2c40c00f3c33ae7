package main

import (
	"errors"
	"math/bits"
)

var (
	errBitOffset    = errors.New("ERR bit offset is not an integer or out of range")
	errBitValue     = errors.New("ERR bit is not an integer or out of range")
	errBitArg       = errors.New("ERR The bit argument must be 1 or 0.")
	errBitopNot     = errors.New("ERR BITOP NOT must be called with a single source key.")
	errLCSBothLen   = errors.New("ERR If you want both the length and indexes, please just use IDX.")
	errLCSNotString = errors.New("ERR The specified keys must contain string values")
	errLCSMemory    = errors.New("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
)

// Bits are numbered as Redis numbers them: bit 0 is the most significant
// of the first byte.

// parseBitOffset parses a bit offset within a string of at most max
// bytes.
func parseBitOffset(b []byte, max int64) (int64, error) {
	n, err := parseInt(b)
	if err != nil || n < 0 || n>>3 >= max {
		return 0, errBitOffset
	}
	return n, nil
}

// getbit is GETBIT key offset.
func getbit(c *call) {
	off, err := parseBitOffset(c.args[2], c.maxString())
	if err != nil {
		c.error(err)
		return
	}
	sh, e, ok := openString(c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if e == nil || off>>3 >= int64(len(e.str)) {
		c.integer(0)
		return
	}
	c.integer(int64(e.str[off>>3]>>(7-off&7)) & 1)
}

// setbit is SETBIT key offset value: it replies the bit's old value.
func setbit(c *call) {
	off, err := parseBitOffset(c.args[2], c.maxString())
	if err != nil {
		c.error(err)
		return
	}
	v := c.args[3]
	if len(v) != 1 || (v[0] != '0' && v[0] != '1') {
		c.error(errBitValue)
		return
	}
	sh, h := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	switch {
	case e == nil:
		e = sh.add(c.args[1], h)
	case e.obj != nil:
		c.error(errWrongType)
		return
	}
	i := int(off >> 3)
	if i >= len(e.str) {
		e.str = append(e.str, make([]byte, i+1-len(e.str))...)
	}
	mask := byte(1) << (7 - off&7)
	old := e.str[i]&mask != 0
	if v[0] == '1' {
		e.str[i] |= mask
	} else {
		e.str[i] &^= mask
	}
	sh.touch(e.key)
	c.boolean(old)
}

// bitRange parses the optional start end [BYTE|BIT] of BITCOUNT and
// BITPOS, for a string of n bytes, into a range of bits, [lo, hi], and
// reports whether it is empty. Negative indexes count from the end.
func bitRange(args [][]byte, n int64) (lo, hi int64, empty bool, err error) {
	unit := int64(8) // bits per index: BYTE
	switch len(args) {
	case 0:
		return 0, n*8 - 1, n == 0, nil
	case 3:
		switch {
		case eqFold(args[2], "bit"):
			unit = 1
		case !eqFold(args[2], "byte"):
			return 0, 0, false, errSyntax
		}
	case 2:
	default:
		return 0, 0, false, errSyntax
	}
	start, end, err := parseRange(args[0], args[1])
	if err != nil {
		return 0, 0, false, err
	}
	total := n * 8 / unit
	if start < 0 {
		start = max(start+total, 0)
	}
	if end < 0 {
		end = max(end+total, 0)
	}
	end = min(end, total-1)
	if start > end {
		return 0, 0, true, nil
	}
	if unit == 8 {
		return start * 8, end*8 + 7, false, nil
	}
	return start, end, false, nil
}

// bitcount is BITCOUNT key [start end [BYTE|BIT]]. As in Redis, a
// missing key counts 0 before the range is read.
func bitcount(c *call) {
	sh, e, ok := openString(c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if e == nil {
		c.integer(0)
		return
	}
	if len(c.args) == 3 || len(c.args) > 5 {
		c.error(errSyntax)
		return
	}
	lo, hi, empty, err := bitRange(c.args[2:], int64(len(e.str)))
	switch {
	case err != nil:
		c.error(err)
	case empty:
		c.integer(0)
	default:
		n := int64(0)
		for i := lo; i <= hi; {
			if i&7 == 0 && i+7 <= hi {
				n += int64(bits.OnesCount8(e.str[i>>3]))
				i += 8
				continue
			}
			n += int64(e.str[i>>3]>>(7-i&7)) & 1
			i++
		}
		c.integer(n)
	}
}

// bitpos is BITPOS key bit [start [end [BYTE|BIT]]]: the first bit set to
// bit in the range, or -1. Looking for a clear bit with no end given, the
// string counts as followed by clear bits, as in Redis; a missing key is
// all clear bits.
func bitpos(c *call) {
	b := c.args[2]
	if len(b) != 1 || (b[0] != '0' && b[0] != '1') {
		c.error(errBitArg)
		return
	}
	want := b[0] == '1'
	sh, e, ok := openString(c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if e == nil {
		if want {
			c.integer(-1)
		} else {
			c.integer(0)
		}
		return
	}
	if len(c.args) > 6 {
		c.error(errSyntax)
		return
	}
	args := c.args[3:]
	if len(args) == 1 {
		args = append(args[:1:1], []byte("-1"))
	}
	lo, hi, empty, err := bitRange(args, int64(len(e.str)))
	switch {
	case err != nil:
		c.error(err)
		return
	case empty:
		c.integer(-1)
		return
	}
	for i := lo; i <= hi; i++ {
		if (e.str[i>>3]>>(7-i&7))&1 == 1 == want {
			c.integer(i)
			return
		}
	}
	if !want && len(c.args) < 5 {
		c.integer(hi + 1)
		return
	}
	c.integer(-1)
}

// bitop is BITOP AND|OR|XOR|NOT destkey key [key ...]: the result, as long
// as the longest source, the shorter ones padded with zero bytes, is
// stored in destkey, or destkey deleted when it is empty.
func bitop(c *call) {
	op := c.args[1]
	not := eqFold(op, "not")
	if !not && !eqFold(op, "and") && !eqFold(op, "or") && !eqFold(op, "xor") {
		c.error(errSyntax)
		return
	}
	if not && len(c.args) != 4 {
		c.error(errBitopNot)
		return
	}
	db := &c.srv.db
	defer c.unlockKeys(c.lockKeys(c.args[2:], 1))
	srcs := make([][]byte, 0, len(c.args)-3)
	longest := 0
	for _, k := range c.args[3:] {
		sh, _ := db.shardOf(k)
		e, err := sh.lookupString(k, c.now)
		if err != nil {
			c.error(err)
			return
		}
		var v []byte
		if e != nil {
			v = e.str
		}
		srcs = append(srcs, v)
		longest = max(longest, len(v))
	}
	out := make([]byte, longest)
	for i := range out {
		var r byte
		for j, s := range srcs {
			var x byte
			if i < len(s) {
				x = s[i]
			}
			switch {
			case not:
				r = ^x
			case j == 0:
				r = x
			case eqFold(op, "and"):
				r &= x
			case eqFold(op, "or"):
				r |= x
			default:
				r ^= x
			}
		}
		out[i] = r
	}
	sh, h := db.shardOf(c.args[2])
	e := sh.find(c.args[2], c.now)
	switch {
	case longest == 0 && e != nil:
		sh.remove(e)
	case longest > 0:
		if e == nil {
			e = sh.add(c.args[2], h)
		} else {
			sh.setExpire(e, 0)
		}
		e.str, e.obj = out, nil
		sh.touch(e.key)
	}
	c.integer(int64(longest))
}

// lcs is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the
// longest common subsequence of two strings, its length, or the ranges
// of it in each, longest first. Its table takes (len1+1)*(len2+1) words,
// so it refuses strings whose table would pass -max-request, as Redis
// refuses one past proto-max-bulk-len.
func lcs(c *call) {
	var wantLen, wantIdx, withLen bool
	minLen := int64(0)
	for i := 3; i < len(c.args); i++ {
		switch a := c.args[i]; {
		case eqFold(a, "len"):
			wantLen = true
		case eqFold(a, "idx"):
			wantIdx = true
		case eqFold(a, "withmatchlen"):
			withLen = true
		case eqFold(a, "minmatchlen") && i+1 < len(c.args):
			i++
			n, err := parseInt(c.args[i])
			if err != nil {
				c.error(err)
				return
			}
			minLen = max(n, 0)
		default:
			c.error(errSyntax)
			return
		}
	}
	var a, b []byte
	db := &c.srv.db
	m := c.lockKeys(c.args[1:3], 1)
	for i, k := range c.args[1:3] {
		sh, _ := db.shardOf(k)
		e := sh.read(k, c.now)
		if e != nil && e.obj != nil {
			c.unlockKeys(m)
			c.error(errLCSNotString)
			return
		}
		if e != nil {
			if i == 0 {
				a = append([]byte(nil), e.str...)
			} else {
				b = append([]byte(nil), e.str...)
			}
		}
	}
	c.unlockKeys(m)
	if wantLen && wantIdx {
		c.error(errLCSBothLen)
		return
	}
	if int64(len(a)+1)*int64(len(b)+1)*4 > c.maxString() {
		c.error(errLCSMemory)
		return
	}
	// table[i][j] is the length of the LCS of a[:i] and b[:j].
	w := len(b) + 1
	table := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				table[i*w+j] = table[(i-1)*w+j-1] + 1
			} else {
				table[i*w+j] = max(table[(i-1)*w+j], table[i*w+j-1])
			}
		}
	}
	n := int(table[len(a)*w+len(b)])
	if wantLen {
		c.integer(int64(n))
		return
	}
	// Walk back from the end, gathering the subsequence and, for IDX, the
	// ranges where it runs in both strings.
	type match struct{ a0, a1, b0, b1 int }
	var matches []match
	seq := make([]byte, n)
	idx := n
	cur := match{-1, -1, -1, -1}
	flush := func() {
		if cur.a0 >= 0 && int64(cur.a1-cur.a0+1) >= minLen {
			matches = append(matches, cur)
		}
		cur = match{-1, -1, -1, -1}
	}
	for i, j := len(a), len(b); i > 0 && j > 0; {
		switch {
		case a[i-1] == b[j-1]:
			idx--
			seq[idx] = a[i-1]
			if cur.a0 >= 0 && cur.a0 == i && cur.b0 == j {
				cur.a0, cur.b0 = i-1, j-1
			} else {
				flush()
				cur = match{i - 1, i - 1, j - 1, j - 1}
			}
			i--
			j--
		case table[(i-1)*w+j] > table[i*w+j-1]:
			i--
		default:
			j--
		}
	}
	flush()
	if !wantIdx {
		c.bulk(seq)
		return
	}
	c.mapOf(2)
	c.bulkString("matches")
	c.array(len(matches))
	for _, m := range matches {
		if withLen {
			c.array(3)
		} else {
			c.array(2)
		}
		c.array(2)
		c.integer(int64(m.a0))
		c.integer(int64(m.a1))
		c.array(2)
		c.integer(int64(m.b0))
		c.integer(int64(m.b1))
		if withLen {
			c.integer(int64(m.a1 - m.a0 + 1))
		}
	}
	c.bulkString("len")
	c.integer(int64(n))
}
