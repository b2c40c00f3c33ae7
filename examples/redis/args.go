package main

import (
	"errors"
	"math"
	"strconv"
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

// parseFloat parses a floating-point argument as Redis does: a decimal or
// "inf", never NaN.
func parseFloat(b []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) {
		return 0, errNotFloat
	}
	return f, nil
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
