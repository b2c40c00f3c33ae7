package codec

import (
	"fmt"
	"io"
)

// Fixed frames messages that all have the same length, Size. Size is also
// the limit on what a peer can make Decode wait for. The zero value is
// unusable: Size must be set.
type Fixed struct {
	// Size is every frame's length in bytes.
	Size int
}

// Decode returns the next Size bytes.
func (f Fixed) Decode(in Inbound) ([]byte, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	buf, err := buffered(in)
	if err != nil {
		return nil, err
	}
	if len(buf) < f.Size {
		return nil, ErrIncomplete
	}
	return take(in, buf, 0, f.Size, f.Size)
}

// Encode writes frame, which must be exactly Size bytes.
func (f Fixed) Encode(w io.Writer, frame []byte) error {
	if err := f.checkFrame(frame); err != nil {
		return err
	}
	_, err := w.Write(frame)
	return err
}

// AppendEncode appends to dst what Encode would write, frame itself; see
// AppendEncoder.
func (f Fixed) AppendEncode(dst, frame []byte) ([]byte, error) {
	if err := f.checkFrame(frame); err != nil {
		return dst, err
	}
	return append(dst, frame...), nil
}

// check reports whether f is configured.
func (f Fixed) check() error {
	if f.Size <= 0 {
		return fmt.Errorf("codec: fixed size %d: %w", f.Size, ErrBadConfig)
	}
	return nil
}

// checkFrame reports why frame cannot be sent, if it cannot.
func (f Fixed) checkFrame(frame []byte) error {
	if err := f.check(); err != nil {
		return err
	}
	if len(frame) != f.Size {
		return fmt.Errorf("codec: %d-byte frame, want %d: %w", len(frame), f.Size, ErrInvalid)
	}
	return nil
}
