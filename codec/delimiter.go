package codec

import (
	"bytes"
	"fmt"
	"io"
	"slices"
)

// Delimiter frames messages that each end with Delim, such as "\r\n\r\n".
// Decode returns a frame without its delimiter; Encode appends it. The
// zero value is unusable: Delim must be set.
type Delimiter struct {
	// Delim ends each frame.
	Delim []byte

	// MaxFrameSize bounds a frame, not counting Delim.
	// Zero means DefaultMaxLineSize.
	MaxFrameSize int
}

// Decode returns the bytes before the next delimiter.
func (d Delimiter) Decode(in Inbound) ([]byte, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	buf, err := buffered(in)
	if err != nil {
		return nil, err
	}
	i, err := index(buf, d.Delim, orDefault(d.MaxFrameSize, DefaultMaxLineSize))
	if err != nil {
		return nil, err
	}
	return take(in, buf, 0, i, i+len(d.Delim))
}

// Encode writes frame and the delimiter. A frame that holds the delimiter,
// or ends with part of it so that the delimiter appears early, as "a|" does
// before "||", would not be read back whole, so it is refused.
func (d Delimiter) Encode(w io.Writer, frame []byte) error {
	if err := d.checkFrame(frame); err != nil {
		return err
	}
	return writeTerminated(w, frame, d.Delim)
}

// AppendEncode appends to dst what Encode would write; see AppendEncoder.
func (d Delimiter) AppendEncode(dst, frame []byte) ([]byte, error) {
	if err := d.checkFrame(frame); err != nil {
		return dst, err
	}
	return appendTerminated(dst, frame, d.Delim), nil
}

// check reports whether d is configured.
func (d Delimiter) check() error {
	if len(d.Delim) == 0 {
		return fmt.Errorf("codec: empty delimiter: %w", ErrBadConfig)
	}
	return nil
}

// checkFrame reports why frame cannot be sent, if it cannot.
func (d Delimiter) checkFrame(frame []byte) error {
	if err := d.check(); err != nil {
		return err
	}
	if holdsDelim(frame, d.Delim) {
		return fmt.Errorf("codec: frame would end before its delimiter: %w", ErrInvalid)
	}
	return checkLen(frame, orDefault(d.MaxFrameSize, DefaultMaxLineSize))
}

// holdsDelim reports whether delim occurs in frame followed by delim
// anywhere but at the end.
func holdsDelim(frame, delim []byte) bool {
	if bytes.Contains(frame, delim) {
		return true
	}
	// An occurrence straddling the end is k bytes of frame and the first
	// len(delim)-k bytes of delim.
	for k := 1; k < len(delim); k++ {
		if bytes.HasSuffix(frame, delim[:k]) && bytes.Equal(delim[k:], delim[:len(delim)-k]) {
			return true
		}
	}
	return false
}

// index returns where delim first occurs in buf, if a frame of at most
// limit bytes ends there. It looks no further than the limit allows, and
// reports ErrFrameTooLarge as soon as buf is long enough to prove the
// delimiter is not within it.
func index(buf, delim []byte, limit int) (int, error) {
	window := buf[:min(len(buf), limit+len(delim))]
	if i := bytes.Index(window, delim); i >= 0 {
		return i, nil
	}
	if len(window) == limit+len(delim) {
		return 0, fmt.Errorf("codec: no delimiter in %d bytes: %w", limit, ErrFrameTooLarge)
	}
	return 0, ErrIncomplete
}

// checkLen refuses a frame over limit.
func checkLen(frame []byte, limit int) error {
	if len(frame) > limit {
		return fmt.Errorf("codec: %d-byte frame over %d: %w", len(frame), limit, ErrFrameTooLarge)
	}
	return nil
}

// writeTerminated writes frame and then term.
func writeTerminated(w io.Writer, frame, term []byte) error {
	if _, err := w.Write(frame); err != nil {
		return err
	}
	_, err := w.Write(term)
	return err
}

// appendTerminated appends frame and then term to dst, growing it at most
// once.
func appendTerminated(dst, frame, term []byte) []byte {
	dst = slices.Grow(dst, len(frame)+len(term))
	dst = append(dst, frame...)
	return append(dst, term...)
}
