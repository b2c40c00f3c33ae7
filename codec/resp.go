package codec

import (
	"bytes"
	"fmt"
)

// RESP decodes the commands a Redis client sends, in RESP2 or RESP3,
// without allocating: Decode consumes one command and returns its raw
// bytes, and Args returns its arguments, each aliasing the inbound bytes.
//
// A command is an array, usually of bulk strings ("*2\r\n$3\r\nGET\r\n...").
// Its elements may be of any RESP3 type but attributes, and aggregates may
// nest, up to MaxDepth. Streamed strings and aggregates (a length of "?")
// are not accepted. As in Redis, input that does not start with '*' is an
// inline command, a line of words separated by spaces such as a telnet user
// types ("PING\r\n"); quotes are not interpreted. Empty commands ("*0\r\n",
// "*-1\r\n", a blank line) are consumed and skipped.
//
// A RESP remembers how far it has parsed a command that has not fully
// arrived, so a large command costs time in proportion to its size however
// it is split, and it keeps the arguments of the last command. Use one per
// connection, and call Reset if anything else consumes the inbound bytes.
//
// The zero value is ready to use. Redis accepts commands of up to 1 GiB
// and bulk strings of up to 512 MiB; a RESP accepts commands of up to
// DefaultMaxFrameSize, 64 MiB, unless told otherwise: enough for any usual
// value, and a tighter bound on what each connection can make the server
// buffer.
type RESP struct {
	// MaxFrameSize bounds a command in bytes.
	// Zero means DefaultMaxFrameSize.
	MaxFrameSize int

	// MaxArrayLen bounds the elements of one aggregate, or the words of an
	// inline command; a map of n pairs has 2n elements.
	// Zero means DefaultMaxArrayLen.
	MaxArrayLen int

	// MaxDepth bounds how deep aggregates nest, the command's own array
	// counting as 1. Zero means DefaultMaxDepth.
	MaxDepth int

	args  [][]byte
	spans []span // the arguments parsed so far, as offsets into the command
	stack []int  // elements still to parse in each open aggregate, outermost first
	pos   int    // bytes of the command parsed so far
	scan  int    // where to resume searching for the end of the line at pos
	elem  int    // where the aggregate that is an argument began
}

// span locates an argument in a command. A negative start means null.
type span struct{ start, end int }

// maxKept bounds how many arguments' worth of space a RESP keeps between
// commands, so one huge command does not pin memory for the connection's
// whole life.
const maxKept = 1024

// Decode consumes the next command and returns it whole, as it arrived.
func (r *RESP) Decode(in Inbound) ([]byte, error) {
	if cap(r.args) > maxKept {
		r.args = nil
	}
	r.args = r.args[:0]
	for {
		buf, err := buffered(in)
		if err != nil {
			return nil, err
		}
		n, err := r.parse(buf)
		if err != nil {
			if err != ErrIncomplete {
				r.rewind()
			}
			return nil, err
		}
		frame, err := take(in, buf, 0, n, n)
		if err == nil {
			r.setArgs(frame)
		}
		r.rewind()
		if err != nil || len(r.args) > 0 {
			return frame, err
		}
	}
}

// Args returns the arguments of the command Decode last returned. For each
// element of the command's array, that is the bytes of a string, the text
// of another simple value, nil for a null, or the whole encoding of a
// nested aggregate; for an inline command, its words. Like the command,
// the arguments alias the inbound bytes; the slice holding them is reused
// by the next Decode.
func (r *RESP) Args() [][]byte { return r.args }

// Reset forgets the last command and any command partly parsed.
func (r *RESP) Reset() {
	r.rewind()
	r.args = r.args[:0]
}

// rewind forgets the progress through a command, to start on the next.
func (r *RESP) rewind() {
	if cap(r.spans) > maxKept {
		r.spans = nil
	}
	r.spans, r.stack = r.spans[:0], r.stack[:0]
	r.pos, r.scan, r.elem = 0, 0, 0
}

// parse goes on parsing the command at the start of buf and returns its
// length once it is whole.
func (r *RESP) parse(buf []byte) (int, error) {
	if r.pos > len(buf) {
		r.rewind() // the bytes parsed were consumed by someone else
	}
	if len(buf) == 0 {
		return 0, ErrIncomplete
	}
	if buf[0] != '*' {
		return r.inline(buf)
	}
	for {
		if err := r.value(buf); err != nil {
			return 0, err
		}
		if len(r.stack) == 0 {
			return r.pos, nil
		}
	}
}

// inline parses an inline command into words.
func (r *RESP) inline(buf []byte) (int, error) {
	end, err := r.lineEnd(buf)
	if err != nil {
		return 0, err
	}
	start := -1
	for i, c := range buf[:end+1] {
		switch space := inlineSpace[c]; {
		case !space && start < 0:
			start = i
		case space && start >= 0:
			r.spans = append(r.spans, span{start, i})
			start = -1
		}
	}
	if limit := orDefault(r.MaxArrayLen, DefaultMaxArrayLen); len(r.spans) > limit {
		return 0, fmt.Errorf("codec: resp: inline command of %d words over %d: %w", len(r.spans), limit, ErrFrameTooLarge)
	}
	return end + 1, nil
}

// inlineSpace marks the bytes that separate the words of an inline command.
var inlineSpace = [256]bool{' ': true, '\t': true, '\r': true, '\n': true}

// value parses the value at r.pos: the whole of a simple value or string,
// or the header of an aggregate.
func (r *RESP) value(buf []byte) error {
	start := r.pos
	end, err := r.lineEnd(buf)
	if err != nil {
		return err
	}
	if end-start < 2 || buf[end-1] != '\r' {
		return fmt.Errorf("codec: resp: line not ended by CRLF: %w", ErrInvalid)
	}
	typ, text, next := buf[start], buf[start+1:end-1], end+1
	switch typ {
	case '$', '!', '=':
		return r.blob(buf, typ, text, next)
	case '*', '~', '>', '%':
		return r.aggregate(typ, text, start, next)
	}
	if !validSimple(typ, text) {
		return fmt.Errorf("codec: resp: invalid %q value %.32q: %w", typ, text, ErrInvalid)
	}
	if typ == '_' {
		r.done(next, -1, -1)
	} else {
		r.done(next, start+1, end-1)
	}
	return nil
}

// blob parses a string whose header, of type typ, gives its length in
// text and ends at next.
func (r *RESP) blob(buf []byte, typ byte, text []byte, next int) error {
	n, err := parseLen(text)
	if err != nil {
		return err
	}
	if n == -1 && typ == '$' {
		r.done(next, -1, -1)
		return nil
	}
	if n < 0 {
		return fmt.Errorf("codec: resp: string length %d: %w", n, ErrNegativeLength)
	}
	if limit := r.maxFrame(); n > int64(limit-next)-2 {
		return fmt.Errorf("codec: resp: %d-byte string in a frame of at most %d: %w", n, limit, ErrFrameTooLarge)
	}
	end := next + int(n) + 2
	if len(buf) < end {
		return ErrIncomplete
	}
	if buf[end-2] != '\r' || buf[end-1] != '\n' {
		return fmt.Errorf("codec: resp: string not ended by CRLF: %w", ErrInvalid)
	}
	if typ == '=' && (n < 4 || buf[next+3] != ':') {
		return fmt.Errorf("codec: resp: verbatim string without a format: %w", ErrInvalid)
	}
	r.done(end, next, next+int(n))
	return nil
}

// aggregate parses the header of an aggregate of type typ, which starts at
// start, gives its length in text and ends at next.
func (r *RESP) aggregate(typ byte, text []byte, start, next int) error {
	n, err := parseLen(text)
	if err != nil {
		return err
	}
	if n == -1 && typ == '*' {
		r.done(next, -1, -1)
		return nil
	}
	if n < 0 {
		return fmt.Errorf("codec: resp: aggregate length %d: %w", n, ErrNegativeLength)
	}
	limit := int64(orDefault(r.MaxArrayLen, DefaultMaxArrayLen))
	if n > limit || (typ == '%' && 2*n > limit) {
		return fmt.Errorf("codec: resp: aggregate of %d elements over %d: %w", n, limit, ErrFrameTooLarge)
	}
	if typ == '%' {
		n *= 2
	}
	// Every element takes at least 3 bytes, as "_\r\n" does.
	if size := r.maxFrame(); n > int64(size-next)/3 {
		return fmt.Errorf("codec: resp: %d elements cannot fit a frame of %d bytes: %w", n, size, ErrFrameTooLarge)
	}
	if depth := orDefault(r.MaxDepth, DefaultMaxDepth); len(r.stack) >= depth {
		return fmt.Errorf("codec: resp: aggregates nested over %d deep: %w", depth, ErrTooDeep)
	}
	if n == 0 {
		r.done(next, start, next)
		return nil
	}
	if len(r.stack) == 1 {
		r.elem = start
	}
	r.stack = append(r.stack, int(n))
	r.pos = next
	return nil
}

// done records a whole value, which ends at next, and closes the
// aggregates it completes. An element of the command's array is an
// argument: buf[start:end].
func (r *RESP) done(next, start, end int) {
	r.pos = next
	if len(r.stack) == 1 {
		r.spans = append(r.spans, span{start, end})
	}
	for len(r.stack) > 0 {
		top := len(r.stack) - 1
		if r.stack[top]--; r.stack[top] > 0 {
			return
		}
		r.stack = r.stack[:top]
		if top == 1 {
			r.spans = append(r.spans, span{r.elem, next})
		}
	}
}

// lineEnd returns the index of the '\n' ending the line at r.pos. It
// resumes where an earlier call stopped, and fails once the line is longer
// than DefaultMaxLineSize or would end past the frame's limit.
func (r *RESP) lineEnd(buf []byte) (int, error) {
	stop := min(r.pos+DefaultMaxLineSize+2, r.maxFrame())
	end := min(len(buf), stop)
	from := min(max(r.pos, r.scan), end)
	if i := bytes.IndexByte(buf[from:end], '\n'); i >= 0 {
		r.scan = 0
		return from + i, nil
	}
	if end == stop {
		return 0, fmt.Errorf("codec: resp: no line end in %d bytes: %w", stop-r.pos, ErrFrameTooLarge)
	}
	r.scan = end
	return 0, ErrIncomplete
}

// setArgs sets the arguments from the spans parsed in frame.
func (r *RESP) setArgs(frame []byte) {
	for _, s := range r.spans {
		if s.start < 0 {
			r.args = append(r.args, nil)
		} else {
			r.args = append(r.args, frame[s.start:s.end:s.end])
		}
	}
}

func (r *RESP) maxFrame() int { return orDefault(r.MaxFrameSize, DefaultMaxFrameSize) }

// parseLen parses the length in a string or aggregate header.
func parseLen(text []byte) (int64, error) {
	n, ok := parseInt(text)
	if !ok || text[0] == '+' {
		return 0, fmt.Errorf("codec: resp: length %.32q: %w", text, ErrInvalid)
	}
	return n, nil
}

// parseInt parses a signed decimal 64-bit integer.
func parseInt(text []byte) (int64, bool) {
	digits := trimSign(text)
	if len(digits) == 0 || len(digits) > 19 || countDigits(digits) != len(digits) {
		return 0, false
	}
	var n uint64 // 19 digits cannot overflow it
	for _, c := range digits {
		n = n*10 + uint64(c-'0')
	}
	if text[0] == '-' {
		return -int64(n), n <= 1<<63
	}
	return int64(n), n < 1<<63
}

// validSimple reports whether text is a valid value of the simple type typ.
func validSimple(typ byte, text []byte) bool {
	switch typ {
	case '+', '-':
		return true
	case ':':
		_, ok := parseInt(text)
		return ok
	case '(':
		digits := trimSign(text)
		return len(digits) > 0 && countDigits(digits) == len(digits)
	case ',':
		return validDouble(text)
	case '#':
		return len(text) == 1 && (text[0] == 't' || text[0] == 'f')
	case '_':
		return len(text) == 0
	}
	return false
}

// validDouble reports whether text is a RESP3 double: "inf", "-inf", "nan",
// or a decimal with an optional sign, fraction and exponent.
func validDouble(text []byte) bool {
	switch string(text) {
	case "inf", "-inf", "nan":
		return true
	}
	text = trimSign(text)
	n := countDigits(text)
	if n == 0 {
		return false
	}
	text = text[n:]
	if len(text) > 0 && text[0] == '.' {
		if n = countDigits(text[1:]); n == 0 {
			return false
		}
		text = text[1+n:]
	}
	if len(text) > 0 && (text[0] == 'e' || text[0] == 'E') {
		exp := trimSign(text[1:])
		return len(exp) > 0 && countDigits(exp) == len(exp)
	}
	return len(text) == 0
}

// trimSign returns text without a leading '+' or '-'.
func trimSign(text []byte) []byte {
	if len(text) > 0 && (text[0] == '+' || text[0] == '-') {
		return text[1:]
	}
	return text
}

// countDigits returns how many decimal digits text starts with.
func countDigits(text []byte) int {
	for i, c := range text {
		if c < '0' || c > '9' {
			return i
		}
	}
	return len(text)
}
