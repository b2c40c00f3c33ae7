package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
)

func get(c *call) { c.getString(false) }

func getdel(c *call) { c.getString(true) }

// getString replies the string at the command's key, and with remove
// deletes it.
func (c *call) getString(remove bool) {
	sh, e, ok := openString(c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	switch {
	case e == nil:
		c.null()
	case remove:
		c.bulk(e.str)
		sh.remove(e)
	default:
		c.bulk(e.str)
	}
}

// setOptions are SET's conditions and expiry.
type setOptions struct {
	nx, xx  bool  // set only if the key is absent, or present
	get     bool  // reply the old value
	keepTTL bool  // keep the key's time to live
	expire  int64 // Unix milliseconds; 0 for none
}

// setKey is SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
func setKey(c *call) {
	o, err := c.parseSetOptions(c.args[3:])
	if err != nil {
		c.error(err)
		return
	}
	c.setString(c.args[1], c.args[2], o)
}

func (c *call) parseSetOptions(args [][]byte) (setOptions, error) {
	var o setOptions
	var kind string // the expiry option seen, if any
	var n []byte    // its argument
	for i := 0; i < len(args); i++ {
		a := args[i]
		k := expiryKind(a)
		switch {
		case eqFold(a, "nx") && !o.xx:
			o.nx = true
		case eqFold(a, "xx") && !o.nx:
			o.xx = true
		case eqFold(a, "get"):
			o.get = true
		case eqFold(a, "keepttl") && kind == "":
			o.keepTTL = true
		case k != "" && (kind == "" || kind == k) && !o.keepTTL && i+1 < len(args):
			i++
			kind, n = k, args[i]
		default:
			return o, errSyntax
		}
	}
	if kind == "" {
		return o, nil
	}
	var err error
	o.expire, err = c.expiryOption(kind, n)
	return o, err
}

// expiryKind returns the expiry option a names, "ex", "px", "exat" or
// "pxat", or "" for none. As Redis does, SET and GETEX take one option
// more than once, the last one counting, but not two of them, and read
// its argument once every option has been read.
func expiryKind(a []byte) string {
	for _, k := range [...]string{"ex", "px", "exat", "pxat"} {
		if eqFold(a, k) {
			return k
		}
	}
	return ""
}

// expiryOption returns the Unix millisecond that an expiry option of
// expiryKind's and its argument n name.
func (c *call) expiryOption(kind string, n []byte) (int64, error) {
	v, err := parseInt(n)
	if err != nil {
		return 0, err
	}
	return c.expiry(v, kind == "ex" || kind == "exat", kind == "exat" || kind == "pxat")
}

// expiry returns the Unix millisecond that an expiry option names: n
// seconds or milliseconds from now, or since the epoch when absolute.
func (c *call) expiry(n int64, seconds, absolute bool) (int64, error) {
	base := c.now
	if absolute {
		base = 0
	}
	at, ok := expireAt(n, seconds, base)
	if n <= 0 || !ok {
		return 0, c.invalidExpire()
	}
	return at, nil
}

// invalidExpire is the error for an expiry out of range, which names the
// command.
func (c *call) invalidExpire() error {
	return fmt.Errorf("%w in '%s' command", errInvalidExpire, c.cmd.name)
}

// setString sets key to a copy of v, as o says, and replies.
func (c *call) setString(key, v []byte, o setOptions) {
	sh, h := c.lock(key)
	defer c.unlock(sh)
	e := sh.find(key, c.now)
	if o.get {
		switch {
		case e != nil && e.obj != nil:
			c.error(errWrongType)
			return
		case e == nil:
			c.null()
		default:
			c.bulk(e.str) // copied now, before v overwrites it
		}
	}
	if (o.nx && e != nil) || (o.xx && e == nil) {
		if !o.get {
			c.null()
		}
		return
	}
	if e == nil {
		e = sh.add(key, h)
	}
	e.setString(v)
	sh.touch(e.key)
	switch {
	case o.expire != 0 && o.expire <= c.now:
		sh.remove(e)
	case !o.keepTTL:
		sh.setExpire(e, o.expire)
	}
	if !o.get {
		c.ok()
	}
}

// setnx is SETNX key value: 1 if it set key, 0 if key existed.
func setnx(c *call) {
	sh, h := c.lock(c.args[1])
	defer c.unlock(sh)
	if sh.find(c.args[1], c.now) != nil {
		c.integer(0)
		return
	}
	sh.add(c.args[1], h).setString(c.args[2])
	c.integer(1)
}

// setex is SETEX key seconds value, and psetex PSETEX key milliseconds
// value.
func setex(c *call)  { c.setExpiring(true) }
func psetex(c *call) { c.setExpiring(false) }

func (c *call) setExpiring(seconds bool) {
	n, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	at, err := c.expiry(n, seconds, false)
	if err != nil {
		c.error(err)
		return
	}
	c.setString(c.args[1], c.args[3], setOptions{expire: at})
}

// mget is MGET key [key ...]: nulls for keys that are missing or do not
// hold strings. It reads every key at one instant.
func mget(c *call) {
	db := &c.srv.db
	keys := c.args[1:]
	defer c.unlockKeys(c.lockKeys(keys, 1))
	c.array(len(keys))
	for _, k := range keys {
		sh, _ := db.shardOf(k)
		if e, err := sh.lookupString(k, c.now); e != nil && err == nil {
			c.bulk(e.str)
		} else {
			c.null()
		}
	}
}

// mset is MSET key value [key value ...], and msetnx MSETNX, which sets
// them only if none exists and replies 1 if it did. Every key changes at
// one instant, and loses its time to live.
func mset(c *call)   { c.setPairs(false) }
func msetnx(c *call) { c.setPairs(true) }

func (c *call) setPairs(nx bool) {
	if len(c.args)%2 == 0 {
		c.errorText(c.cmd.arityErr)
		return
	}
	db := &c.srv.db
	pairs := c.args[1:]
	defer c.unlockKeys(c.lockKeys(pairs, 2))
	for i := 0; nx && i < len(pairs); i += 2 {
		sh, _ := db.shardOf(pairs[i])
		if sh.find(pairs[i], c.now) != nil {
			c.integer(0)
			return
		}
	}
	for i := 0; i < len(pairs); i += 2 {
		sh, h := db.shardOf(pairs[i])
		e := sh.find(pairs[i], c.now)
		if e == nil {
			e = sh.add(pairs[i], h)
		}
		e.setString(pairs[i+1])
		sh.setExpire(e, 0)
		sh.touch(e.key)
	}
	if nx {
		c.integer(1)
	} else {
		c.ok()
	}
}

func incr(c *call) { c.incrBy(1) }

func decr(c *call) { c.incrBy(-1) }

func incrby(c *call) {
	if n, err := parseInt(c.args[2]); err != nil {
		c.error(err)
	} else {
		c.incrBy(n)
	}
}

func decrby(c *call) {
	n, err := parseInt(c.args[2])
	switch {
	case err != nil:
		c.error(err)
	case n == math.MinInt64:
		c.errorText("ERR decrement would overflow")
	default:
		c.incrBy(-n)
	}
}

// incrBy adds by to the integer at key, 0 when key is absent, and replies
// the sum. The digits are rewritten in place: nobody reads them unlocked.
func (c *call) incrBy(by int64) {
	sh, h := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	n := int64(0)
	if e != nil {
		if e.obj != nil {
			c.error(errWrongType)
			return
		}
		var err error
		if n, err = parseInt(e.str); err != nil {
			c.error(err)
			return
		}
	}
	sum, ok := addInt(n, by)
	if !ok {
		c.error(errOverflow)
		return
	}
	if e == nil {
		e = sh.add(c.args[1], h)
	}
	e.str = strconv.AppendInt(e.str[:0], sum, 10)
	sh.touch(e.key)
	c.integer(sum)
}

// appendString is APPEND key value: it replies the new length.
func appendString(c *call) {
	sh, h := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	switch {
	case e == nil:
		e = sh.add(c.args[1], h)
		e.setString(c.args[2])
	case e.obj != nil:
		c.error(errWrongType)
		return
	default:
		e.str = append(e.str, c.args[2]...)
		sh.touch(e.key)
	}
	c.integer(int64(len(e.str)))
}

func strlen(c *call) {
	sh, e, ok := openString(c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if e == nil {
		c.integer(0)
	} else {
		c.integer(int64(len(e.str)))
	}
}

// getrange is GETRANGE key start end, with Redis's rules for indexes out
// of range: negative ones count from the end, and the range is clamped.
func getrange(c *call) {
	start, end, err := parseRange(c.args[2], c.args[3])
	if err != nil {
		c.error(err)
		return
	}
	sh, e, ok := openString(c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if e == nil || (start < 0 && end < 0 && start > end) {
		c.bulk(nil)
		return
	}
	n := int64(len(e.str))
	if end < 0 {
		end = max(n+end, 0) // unlike a list's range, which is then empty
	}
	lo, hi, ok := clampRange(start, end, n)
	if !ok {
		c.bulk(nil)
		return
	}
	c.bulk(e.str[lo : hi+1])
}

// clampRange applies Redis's rules for LRANGE to an inclusive range of
// indexes into n items: negative indexes count from the end, and the
// range is cut to fit. It reports false when nothing is left.
func clampRange(start, end, n int64) (lo, hi int64, ok bool) {
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = n + end
	}
	end = min(end, n-1)
	if start > end || start >= n {
		return 0, 0, false
	}
	return start, end, true
}

// getset is GETSET key value: SET key value GET.
func getset(c *call) { c.setString(c.args[1], c.args[2], setOptions{get: true}) }

// getex is GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]: the value, and
// a new time to live, or none.
func getex(c *call) {
	var kind string // the expiry option seen, if any
	var n []byte    // its argument
	persist := false
	for i := 2; i < len(c.args); i++ {
		a := c.args[i]
		k := expiryKind(a)
		switch {
		case eqFold(a, "persist") && kind == "":
			persist = true
		case k != "" && (kind == "" || kind == k) && !persist && i+1 < len(c.args):
			i++
			kind, n = k, c.args[i]
		default:
			c.error(errSyntax)
			return
		}
	}
	sh, e, ok := openString(c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if e == nil {
		c.null()
		return
	}
	at := int64(0)
	if kind != "" {
		var err error
		if at, err = c.expiryOption(kind, n); err != nil {
			c.error(err)
			return
		}
	}
	c.bulk(e.str)
	switch {
	case at != 0 && at <= c.now:
		sh.remove(e)
	case at != 0:
		sh.setExpire(e, at)
		sh.touch(e.key)
	case persist && e.expire != 0:
		sh.setExpire(e, 0)
		sh.touch(e.key)
	}
}

var (
	errOffset    = errors.New("ERR offset is out of range")
	errStringMax = errors.New("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
)

// maxString returns the longest string a command may make: -max-request,
// which plays Redis's proto-max-bulk-len here.
func (c *call) maxString() int64 { return int64(c.srv.cfg.requestLimit()) }

// setrange is SETRANGE key offset value: it overwrites the string from
// offset, padding it with zero bytes, and replies its length.
func setrange(c *call) {
	offset, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	if offset < 0 {
		c.error(errOffset)
		return
	}
	v := c.args[3]
	sh, h := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	switch {
	case e != nil && e.obj != nil:
		c.error(errWrongType)
		return
	case len(v) == 0 && e == nil:
		c.integer(0)
		return
	case len(v) == 0:
		c.integer(int64(len(e.str)))
		return
	case offset+int64(len(v)) > c.maxString():
		c.error(errStringMax)
		return
	case e == nil:
		e = sh.add(c.args[1], h)
	}
	end := int(offset) + len(v)
	if end > len(e.str) {
		e.str = append(e.str, make([]byte, end-len(e.str))...)
	}
	copy(e.str[offset:], v)
	sh.touch(e.key)
	c.integer(int64(len(e.str)))
}

var errNaNOrInf = errors.New("ERR increment would produce NaN or Infinity")

// incrbyfloat is INCRBYFLOAT key increment.
func incrbyfloat(c *call) {
	by, err := parseLongDouble(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	sh, h := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	if e != nil && e.obj != nil {
		c.error(errWrongType)
		return
	}
	var sum []byte
	if e == nil {
		sum, err = addLongDouble(nil, by)
	} else {
		sum, err = addLongDouble(e.str, by)
	}
	if err != nil {
		c.error(err)
		return
	}
	if e == nil {
		e = sh.add(c.args[1], h)
	}
	e.setString(sum)
	sh.touch(e.key)
	c.bulk(sum)
}

// Redis adds floats in C's long double, which on x86-64 has a 64-bit
// mantissa and an exponent of 15 bits, and writes the sum with 17
// decimals, trailing zeros dropped. A big.Float of 64 bits rounding to
// nearest even adds as the x87 unit does; maxLongDoubleExp and
// minLongDoubleExp bound its exponent as the long double's range does.
const (
	longDoublePrec   = 64
	maxLongDoubleExp = 16384
	minLongDoubleExp = -16444
)

// parseLongDouble parses a float as Redis's string2ld does with C's
// strtold (cFloat), into a long double's precision and range: no NaN,
// nothing past the largest long double or below its least subnormal,
// 2**-16445, which strtold reads as zero.
func parseLongDouble(b []byte) (*big.Float, error) {
	s, hex, ok := cFloat(b)
	if !ok {
		return nil, errNotFloat
	}
	base := 10
	if hex {
		base = 0
	}
	f, _, err := new(big.Float).SetPrec(longDoublePrec).Parse(s, base)
	if err != nil {
		return nil, errNotFloat
	}
	if exp := f.MantExp(nil); !f.IsInf() && f.Sign() != 0 && (exp > maxLongDoubleExp || exp < minLongDoubleExp) {
		return nil, errNotFloat
	}
	return f, nil
}

// addLongDouble adds by to the float written in v, nil for zero, and
// returns the sum as Redis writes it.
func addLongDouble(v []byte, by *big.Float) ([]byte, error) {
	sum := new(big.Float).SetPrec(longDoublePrec)
	if v != nil {
		old, err := parseLongDouble(v)
		if err != nil {
			return nil, err
		}
		sum.Set(old)
	}
	if (sum.IsInf() || by.IsInf()) || sum.Add(sum, by).MantExp(nil) > maxLongDoubleExp {
		return nil, errNaNOrInf
	}
	return formatLongDouble(sum), nil
}

// formatLongDouble writes f as Redis's ld2string does for people: with
// 17 decimals, then without the trailing zeros, and "0" for minus zero.
func formatLongDouble(f *big.Float) []byte {
	b := f.Append(nil, 'f', 17)
	if bytes.IndexByte(b, '.') >= 0 {
		b = bytes.TrimRight(b, "0")
		b = bytes.TrimSuffix(b, []byte("."))
	}
	if string(b) == "-0" {
		b = b[1:]
	}
	return b
}
