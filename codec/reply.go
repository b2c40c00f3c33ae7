package codec

import (
	"math"
	"strconv"
)

// AppendSimple appends a simple string, such as "OK". Any '\r' or '\n' in
// s, which would break the reply, is written as a space.
func AppendSimple[S ~string | ~[]byte](dst []byte, s S) []byte {
	return appendLine(dst, '+', s)
}

// AppendError appends an error, whose text by convention starts with a
// code in capitals, as in "ERR unknown command". Any '\r' or '\n' in msg
// is written as a space.
func AppendError[S ~string | ~[]byte](dst []byte, msg S) []byte {
	return appendLine(dst, '-', msg)
}

// AppendInt appends an integer.
func AppendInt(dst []byte, n int64) []byte {
	return appendHeader(dst, ':', n)
}

// AppendBulk appends a bulk string.
func AppendBulk[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = appendHeader(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendNullBulk appends the RESP2 null, a bulk string of length -1, which
// is what GET replies for a missing key.
func AppendNullBulk(dst []byte) []byte {
	return append(dst, "$-1\r\n"...)
}

// AppendNullArray appends the RESP2 null array.
func AppendNullArray(dst []byte) []byte {
	return append(dst, "*-1\r\n"...)
}

// AppendArray appends the header of an array of n elements.
func AppendArray(dst []byte, n int) []byte {
	return appendHeader(dst, '*', int64(n))
}

// AppendNull appends the RESP3 null.
func AppendNull(dst []byte) []byte {
	return append(dst, "_\r\n"...)
}

// AppendBool appends a RESP3 boolean.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "#t\r\n"...)
	}
	return append(dst, "#f\r\n"...)
}

// AppendDouble appends a RESP3 double.
func AppendDouble(dst []byte, f float64) []byte {
	dst = append(dst, ',')
	switch {
	case math.IsInf(f, 1):
		dst = append(dst, "inf"...)
	case math.IsInf(f, -1):
		dst = append(dst, "-inf"...)
	case math.IsNaN(f):
		dst = append(dst, "nan"...)
	default:
		dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	return append(dst, '\r', '\n')
}

// AppendMap appends the header of a RESP3 map of n pairs, to be followed
// by each key and its value.
func AppendMap(dst []byte, n int) []byte {
	return appendHeader(dst, '%', int64(n))
}

// AppendSet appends the header of a RESP3 set of n elements.
func AppendSet(dst []byte, n int) []byte {
	return appendHeader(dst, '~', int64(n))
}

// appendHeader appends a type byte, n and CRLF.
func appendHeader(dst []byte, typ byte, n int64) []byte {
	dst = append(dst, typ)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// appendLine appends a type byte, s with CR and LF made spaces, and CRLF.
func appendLine[S ~string | ~[]byte](dst []byte, typ byte, s S) []byte {
	dst = append(dst, typ)
	start := len(dst)
	dst = append(dst, s...)
	for i, c := range dst[start:] {
		if c == '\r' || c == '\n' {
			dst[start+i] = ' '
		}
	}
	return append(dst, '\r', '\n')
}
