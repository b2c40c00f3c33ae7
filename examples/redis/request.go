package main

import (
	"bytes"
	"math"
	"unsafe"
)

// inlineMax is the longest line Redis reads without finding its end: an
// inline command, or the header of a multibulk or of a bulk string
// (PROTO_INLINE_MAX_SIZE).
const inlineMax = 64 << 10

// protoError is input that is not a command, with the text Redis replies
// to it before it closes the connection.
type protoError string

func (e protoError) Error() string { return "ERR Protocol error: " + string(e) }

// The protocol errors Redis replies, in its words, and this server's own
// for a command over -max-request.
const (
	errMultibulkLen    protoError = "invalid multibulk length"
	errBulkLen         protoError = "invalid bulk length"
	errMultibulkHeader protoError = "too big mbulk count string"
	errBulkHeader      protoError = "too big bulk count string"
	errInlineTooBig    protoError = "too big inline request"
	errUnbalanced      protoError = "unbalanced quotes in request"
	errTooBig          protoError = "too big request"
)

// request reads the commands a client sends, as Redis reads them: a
// multibulk ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") of bulk strings only, or
// an inline command, a line split into words with Redis's quoting rules.
// It remembers how far it has read a command that has not fully arrived,
// so a large one costs time in proportion to its size however it is split.
//
// Like Redis, it finds the end of a header line by its '\r' and skips the
// byte after it, and skips the two bytes after a bulk string without
// looking at them; a multibulk of zero or fewer elements is an empty
// command, skipped.
type request struct {
	maxSize int      // bytes a command may take, its arguments' argSize included
	args    [][]byte // the last command's arguments

	// A multibulk being read: the bytes of it read so far, the bulks in
	// them, the bulks still to come, and the length of the one whose
	// header has been read (-1 for none). Where its arguments are is
	// found again once it has all arrived (collect): the buffer may move
	// meanwhile, and their places would take more memory than they do.
	pos   int
	count int
	left  int
	bulk  int

	// The words of an inline command with quotes: unquoted, and where
	// each one is in it.
	unquoted []byte
	spans    []span
}

type span struct{ start, end int }

// argSize is what an argument costs the server beyond its bytes: the
// slice that points at it. A command's arguments count it against
// maxSize, so that one of millions of empty arguments ("$0\r\n\r\n", six
// bytes each) cannot make the server hold five times maxSize in them.
const argSize = int(unsafe.Sizeof([]byte(nil)))

// maxKeptArgs bounds the arguments' worth of space a request keeps
// between commands.
const maxKeptArgs = 1024

func newRequest(maxSize int) request { return request{maxSize: maxSize, bulk: -1} }

// parse reads the command at the start of buf. It returns how many bytes
// to consume and whether they hold a command, whose arguments are then in
// args, aliasing buf; consumed bytes without a command were an empty
// command. Zero bytes and no error mean the command is not all there.
func (r *request) parse(buf []byte) (int, bool, error) {
	if len(buf) == 0 {
		return 0, false, nil
	}
	if cap(r.args) > maxKeptArgs {
		r.args = nil
	}
	r.args = r.args[:0]
	if buf[0] != '*' {
		return r.inline(buf)
	}
	if r.left == 0 {
		if n := r.whole(buf); n > 0 {
			return n, true, nil
		}
	}
	return r.multibulk(buf)
}

// maxPlainDigits bounds the digits whole reads in a header.
const maxPlainDigits = 9

// whole reads, in one pass, a multibulk that has all arrived and whose
// headers are plain: a count of one to maxKeptArgs and lengths, in digits without
// a leading zero, each followed by '\r' and one more byte. That is what
// clients send, and multibulk would read it in two passes. For anything
// else, whole returns 0 and leaves args empty, and multibulk reads the
// command as it always does, errors included: whole accepts nothing that
// multibulk would read otherwise (FuzzRequest compares the two).
func (r *request) whole(buf []byte) int {
	n, i := plainInt(buf, 1)
	if n <= 0 || n > maxKeptArgs || i+1 >= len(buf) {
		return 0
	}
	pos := i + 2
	for range n {
		if pos >= len(buf) || buf[pos] != '$' {
			r.args = r.args[:0]
			return 0
		}
		size, j := plainInt(buf, pos+1)
		start := j + 2
		if size < 0 || j+1 >= len(buf) || size > r.maxSize || start+size+2+(len(r.args)+1)*argSize > r.maxSize || len(buf)-start < size+2 {
			r.args = r.args[:0]
			return 0
		}
		r.args = append(r.args, buf[start:start+size:start+size])
		pos = start + size + 2
	}
	return pos
}

// plainInt reads the digits of buf from i up to a '\r', without a sign or
// a leading zero and at most maxPlainDigits of them, and returns their
// value and the index of the '\r'; -1 when buf holds anything else there.
func plainInt(buf []byte, i int) (int, int) {
	start, n := i, 0
	for ; i < len(buf) && i-start < maxPlainDigits; i++ {
		c := buf[i]
		if c == '\r' {
			break
		}
		if c < '0' || c > '9' {
			return -1, 0
		}
		n = n*10 + int(c-'0')
	}
	if i == start || i == len(buf) || buf[i] != '\r' || (buf[start] == '0' && i-start > 1) {
		return -1, 0
	}
	return n, i
}

// reset forgets a command partly read.
func (r *request) reset() { r.pos, r.count, r.left, r.bulk = 0, 0, 0, -1 }

// headerLine finds the '\r' that ends the header line at r.pos and
// returns the line, type byte included, and whether it is all there:
// Redis needs one byte after the '\r', whatever it is.
func (r *request) headerLine(buf []byte, tooBig protoError) ([]byte, bool, error) {
	i := bytes.IndexByte(buf[r.pos:], '\r')
	if i < 0 || r.pos+i+1 >= len(buf) {
		if len(buf)-r.pos > min(inlineMax, r.maxSize) {
			return nil, false, tooBig
		}
		return nil, false, nil
	}
	return buf[r.pos : r.pos+i], true, nil
}

func (r *request) multibulk(buf []byte) (int, bool, error) {
	if r.left == 0 {
		line, ok, err := r.headerLine(buf, errMultibulkHeader)
		if !ok {
			return 0, false, err
		}
		n, err := parseInt(line[1:])
		if err != nil || n > math.MaxInt32 {
			return 0, false, errMultibulkLen
		}
		end := len(line) + 2
		if n <= 0 {
			return end, false, nil
		}
		// Each bulk takes six bytes at least, "$0\r\n\r\n", and its
		// argument argSize.
		if n > int64(r.maxSize/(6+argSize)) {
			return 0, false, errTooBig
		}
		r.pos, r.left = end, int(n)
	}
	for r.left > 0 {
		if r.bulk < 0 {
			line, ok, err := r.headerLine(buf, errBulkHeader)
			if !ok {
				return 0, false, err
			}
			if len(line) == 0 || line[0] != '$' {
				got := buf[r.pos]
				if got == '\r' || got == '\n' {
					got = ' ' // as Redis keeps its errors on one line
				}
				return 0, false, protoError("expected '$', got '" + string(got) + "'")
			}
			n, err := parseInt(line[1:])
			if err != nil || n < 0 || n > int64(r.maxSize) {
				return 0, false, errBulkLen
			}
			r.pos += len(line) + 2
			if int64(r.pos)+n+2+int64(r.count+1)*int64(argSize) > int64(r.maxSize) {
				return 0, false, errTooBig
			}
			r.bulk = int(n)
		}
		if len(buf)-r.pos < r.bulk+2 {
			return 0, false, nil
		}
		r.pos += r.bulk + 2
		r.bulk = -1
		r.left--
		r.count++
	}
	r.collect(buf)
	n := r.pos
	r.reset()
	return n, true, nil
}

// collect makes args the arguments of the multibulk at the start of buf,
// which multibulk has read whole, its headers found sound: in an array of
// their number, where appending them one by one would leave behind arrays
// of every smaller size.
func (r *request) collect(buf []byte) {
	if cap(r.args) < r.count {
		r.args = make([][]byte, 0, r.count)
	}
	pos := bytes.IndexByte(buf, '\r') + 2
	for range r.count {
		end := pos + bytes.IndexByte(buf[pos:], '\r')
		size, _ := parseInt(buf[pos+1 : end])
		start := end + 2
		stop := start + int(size)
		r.args = append(r.args, buf[start:stop:stop])
		pos = stop + 2
	}
}

func (r *request) inline(buf []byte) (int, bool, error) {
	nl := bytes.IndexByte(buf, '\n')
	if nl >= 0 && bytes.IndexByte(buf[:nl], 0) >= 0 {
		// Redis looks for the line's end with strchr, which stops at a
		// NUL byte: for it the line never ends, and the request grows
		// until it is too big.
		nl = -1
	}
	if nl < 0 {
		if len(buf) > min(inlineMax, r.maxSize) {
			return 0, false, errInlineTooBig
		}
		return 0, false, nil
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if err := r.split(line); err != nil {
		return 0, false, err
	}
	return nl + 1, len(r.args) > 0, nil
}

// split splits an inline command into words as Redis's sdssplitargs
// does. Outside quotes, words end at a space, tab, CR or LF. In double
// quotes, "\x41" is a byte in hex and "\n", "\r", "\t", "\b", "\a" and
// "\" before any other byte are C's escapes; in single quotes only "\'"
// is. A closing quote must end its word, and a line that ends inside
// quotes is an error. The line holds no NUL byte (inline).
func (r *request) split(line []byte) error {
	if bytes.IndexByte(line, '"') < 0 && bytes.IndexByte(line, '\'') < 0 {
		// No quotes: the words are where they arrived.
		for i := 0; i < len(line); {
			for i < len(line) && isSpace(line[i]) {
				i++
			}
			start := i
			for i < len(line) && !endsWord(line[i]) {
				i++
			}
			if i > start {
				r.args = append(r.args, line[start:i:i])
			}
		}
		return nil
	}
	out := r.unquoted[:0]
	r.spans = r.spans[:0]
	for i := 0; ; {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		start := len(out)
		var err error
		if out, i, err = unquoteWord(out, line, i); err != nil {
			r.spans = r.spans[:0]
			return err
		}
		r.spans = append(r.spans, span{start, len(out)})
	}
	for _, s := range r.spans {
		r.args = append(r.args, out[s.start:s.end:s.end])
	}
	r.spans = r.spans[:0]
	if cap(r.spans) > maxKeptArgs {
		r.spans = nil
	}
	r.unquoted = out
	return nil
}

// unquoteWord appends the word of line that starts at i to out, and
// returns out and where the word ends.
func unquoteWord(out, line []byte, i int) ([]byte, int, error) {
	var dq, sq bool // inside double or single quotes
	for ; ; i++ {
		var c byte
		if i < len(line) {
			c = line[i]
		}
		switch {
		case dq:
			switch {
			case i == len(line):
				return out, i, errUnbalanced
			case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
				out = append(out, unhex(line[i+2])<<4|unhex(line[i+3]))
				i += 3
			case c == '\\' && i+1 < len(line):
				i++
				out = append(out, unescape(line[i]))
			case c == '"':
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return out, i, errUnbalanced
				}
				return out, i + 1, nil
			default:
				out = append(out, c)
			}
		case sq:
			switch {
			case i == len(line):
				return out, i, errUnbalanced
			case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
				i++
				out = append(out, '\'')
			case c == '\'':
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return out, i, errUnbalanced
				}
				return out, i + 1, nil
			default:
				out = append(out, c)
			}
		case i == len(line) || endsWord(c):
			return out, i, nil
		case c == '"':
			dq = true
		case c == '\'':
			sq = true
		default:
			out = append(out, c)
		}
	}
}

// isSpace is C's isspace: the blanks skipped between words.
func isSpace(c byte) bool { return c == ' ' || ('\t' <= c && c <= '\r') }

// endsWord reports whether c ends a word outside quotes: a narrower set
// than isSpace, as in Redis, where a vertical tab inside a word is kept.
func endsWord(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// unescape returns the byte that a backslash and c stand for in double
// quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
