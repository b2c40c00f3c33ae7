package codec

import (
	"bytes"
	"fmt"
	"io"
)

// crlf ends each line Line writes.
var crlf = []byte("\r\n")

// Line frames text lines. Decode accepts lines ended by "\n" or "\r\n" and
// returns them without it; Encode ends lines with "\r\n", which text
// protocols expect and lenient readers accept.
type Line struct {
	// MaxFrameSize bounds a line, not counting its end.
	// Zero means DefaultMaxLineSize.
	MaxFrameSize int
}

// Decode returns the next line without its "\n" or "\r\n".
func (l Line) Decode(in Inbound) ([]byte, error) {
	buf, err := buffered(in)
	if err != nil {
		return nil, err
	}
	limit := orDefault(l.MaxFrameSize, DefaultMaxLineSize)
	i, err := index(buf, crlf[1:], limit+1) // +1 for a '\r' to strip
	if err != nil {
		return nil, err
	}
	end := i
	if end > 0 && buf[end-1] == '\r' {
		end--
	}
	if end > limit {
		return nil, fmt.Errorf("codec: %d-byte line over %d: %w", end, limit, ErrFrameTooLarge)
	}
	return take(in, buf, 0, end, i+1)
}

// Encode writes frame and "\r\n". A frame that holds a "\n" would be read
// back as two lines, so it is refused.
func (l Line) Encode(w io.Writer, frame []byte) error {
	if err := l.check(frame); err != nil {
		return err
	}
	return writeTerminated(w, frame, crlf)
}

// AppendEncode appends to dst what Encode would write; see AppendEncoder.
func (l Line) AppendEncode(dst, frame []byte) ([]byte, error) {
	if err := l.check(frame); err != nil {
		return dst, err
	}
	return appendTerminated(dst, frame, crlf), nil
}

// check reports why frame cannot be sent as a line, if it cannot.
func (l Line) check(frame []byte) error {
	if bytes.IndexByte(frame, '\n') >= 0 {
		return fmt.Errorf("codec: line holds a newline: %w", ErrInvalid)
	}
	return checkLen(frame, orDefault(l.MaxFrameSize, DefaultMaxLineSize))
}
