package main

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
)

// Errors replied to clients, worded as Redis words them so that client
// libraries recognise them.
var (
	errSyntax      = errors.New("ERR syntax error")
	errWrongType   = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	errNotInteger  = errors.New("ERR value is not an integer or out of range")
	errNotFloat    = errors.New("ERR value is not a valid float")
	errOverflow    = errors.New("ERR increment or decrement would overflow")
	errNotPositive = errors.New("ERR value is out of range, must be positive")
	errNoSuchKey   = errors.New("ERR no such key")

	errInvalidExpire = errors.New("ERR invalid expire time")
)

// parseInt parses an integer argument as strictly as Redis: an optional
// minus sign and decimal digits, without a plus sign, spaces or leading
// zeros, in the range of an int64.
func parseInt(b []byte) (int64, error) {
	if len(b) == 1 && b[0] == '0' {
		return 0, nil
	}
	digits := b
	if len(b) > 0 && b[0] == '-' {
		digits = b[1:]
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, errNotInteger
	}
	var n uint64
	for _, d := range digits {
		if d < '0' || d > '9' || n > (1<<63)/10 {
			return 0, errNotInteger
		}
		n = n*10 + uint64(d-'0')
	}
	switch {
	case len(digits) < len(b) && n <= 1<<63:
		return -int64(n), nil
	case len(digits) == len(b) && n <= math.MaxInt64:
		return int64(n), nil
	}
	return 0, errNotInteger
}

// parseRange parses the start and stop of a range of indexes.
func parseRange(start, stop []byte) (int64, int64, error) {
	lo, err1 := parseInt(start)
	hi, err2 := parseInt(stop)
	if err1 != nil || err2 != nil {
		return 0, 0, errNotInteger
	}
	return lo, hi, nil
}

// parseCount parses a count that must not be negative, such as LPOP's.
// Redis words its error the same for a count that is not a number.
func parseCount(b []byte) (int, error) {
	n, err := parseInt(b)
	if err != nil || n < 0 {
		return 0, errNotPositive
	}
	return int(min(n, math.MaxInt)), nil
}

// parseFloat parses a floating-point argument as Redis does with C's
// strtod: a decimal, a hexadecimal ("0x1.8p3", "0x10") or an infinity,
// whole, never NaN, and refused where strtod reports a range error: past
// the largest double, or so small it would read as zero.
func parseFloat(b []byte) (float64, error) {
	s, hex, ok := cFloat(b)
	if !ok {
		return 0, errNotFloat
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || (f == 0 && nonzeroMantissa(s, hex)) {
		return 0, errNotFloat
	}
	return f, nil
}

// cFloat rewrites b, a number as C's strtod and strtold read it, in the
// syntax Go's parsers read, and reports whether it is hexadecimal, or
// false for what C would not read whole: a leading space, an underscore
// (which Go allows between digits) or "0x" alone. C reads "INF" and
// "infinity" in any case, and a hexadecimal mantissa without an exponent;
// Go reads neither.
func cFloat(b []byte) (s string, hex, ok bool) {
	if len(b) == 0 || isSpace(b[0]) || bytes.IndexByte(b, '_') >= 0 {
		return "", false, false
	}
	s = string(b)
	sign, body := "", s
	if body[0] == '+' || body[0] == '-' {
		sign, body = body[:1], body[1:]
	}
	if strings.EqualFold(body, "inf") || strings.EqualFold(body, "infinity") {
		return sign + "inf", false, true
	}
	if len(body) < 2 || body[0] != '0' || (body[1] != 'x' && body[1] != 'X') {
		return s, false, true
	}
	if len(body) == 2 {
		return "", false, false
	}
	if !strings.ContainsAny(body, "pP") {
		s += "p0"
	}
	return s, true, true
}

// nonzeroMantissa reports whether s, as cFloat wrote it, has a digit
// other than zero before its exponent: if it parsed as zero, it
// underflowed.
func nonzeroMantissa(s string, hex bool) bool {
	exp := "eE"
	if hex {
		s, exp = s[strings.IndexAny(s, "xX")+1:], "pP"
	}
	if i := strings.IndexAny(s, exp); i >= 0 {
		s = s[:i]
	}
	return strings.ContainsAny(s, "123456789abcdefABCDEF")
}

// addInt adds without overflowing, reporting whether it could.
func addInt(a, b int64) (int64, bool) {
	sum := a + b
	return sum, (b >= 0) == (sum >= a)
}

// eqFold reports whether b, in any case, is lower, an ASCII word in lower
// case. Option names are compared this way without allocating.
func eqFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if toLower(c) != lower[i] {
			return false
		}
	}
	return true
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// printable reports whether b holds only visible ASCII, as Redis requires
// of client names: no spaces, newlines or control characters.
func printable(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// strtod reads val as C's strtod does where Redis calls it with no
// checks of its own beyond reading it whole and refusing NaN (SORT's
// scores, the ends of a score range): leading white space skipped, an
// empty string 0, an overflow infinite. rangeErr reports what strtod
// reports as ERANGE: an overflow, an underflow to zero, and, as glibc
// reports it, a decimal whose value is subnormal.
func strtod(val string) (f float64, rangeErr, ok bool) {
	val = strings.TrimLeft(val, " \t\n\v\f\r")
	if val == "" {
		return 0, false, true
	}
	s, hex, ok := cFloat([]byte(val))
	if !ok {
		return 0, false, false
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case math.IsNaN(f):
		return 0, false, false
	case err != nil:
		return f, math.IsInf(f, 0), math.IsInf(f, 0)
	case f == 0:
		return 0, nonzeroMantissa(s, hex), true
	}
	return f, !hex && math.Abs(f) < 0x1p-1022 && !math.IsInf(f, 0), true
}
