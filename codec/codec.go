package codec

import (
	"errors"
	"fmt"
	"io"
)

// Inbound is the read side of a connection as a decoder sees it.
// sluice.Conn satisfies it, and so does Buffer.
type Inbound interface {
	// Peek returns the next n buffered bytes without consuming them, or
	// every buffered byte when n <= 0. With fewer than n buffered it returns
	// those and io.ErrShortBuffer.
	Peek(n int) ([]byte, error)

	// Discard consumes the next n buffered bytes. Decoders call it only
	// with 0 < n <= the bytes buffered.
	Discard(n int) (int, error)
}

// Decoder splits an inbound byte stream into frames.
type Decoder interface {
	// Decode consumes the next whole frame buffered in in and returns it.
	// The frame aliases in's buffer. With no whole frame buffered, Decode
	// returns ErrIncomplete and consumes nothing.
	Decode(in Inbound) ([]byte, error)
}

// Encoder writes frames so that the matching Decoder reads them back.
type Encoder interface {
	// Encode writes frame to w with whatever framing the protocol needs.
	Encode(w io.Writer, frame []byte) error
}

// AppendEncoder is an Encoder that can also frame into a byte slice, for
// code that has bytes to send but no io.Writer to send them through: a
// pool worker builds its reply in a buffer of its own, to hand to
// Conn.AsyncWrite, and several frames can share one buffer and one write.
// LengthField, Line, Delimiter and Fixed implement it.
type AppendEncoder interface {
	Encoder

	// AppendEncode appends to dst the bytes Encode would write for frame
	// and returns the extended slice. It allocates only when dst lacks the
	// room. On error it returns dst unchanged, with the error Encode would
	// return, so frames already in dst stay whole.
	AppendEncode(dst, frame []byte) ([]byte, error)
}

// Codec both decodes and encodes one framing.
type Codec interface {
	Decoder
	Encoder
}

// Errors returned by decoders and encoders. Test for them with errors.Is:
// most come wrapped with details.
var (
	// ErrIncomplete means more bytes are needed for a whole frame. It is
	// returned bare, never wrapped, and is the only error after which the
	// stream can still be decoded.
	ErrIncomplete = errors.New("codec: incomplete frame")

	// ErrFrameTooLarge means a frame exceeds its codec's limits.
	ErrFrameTooLarge = errors.New("codec: frame too large")

	// ErrTooDeep means RESP aggregates are nested deeper than allowed.
	ErrTooDeep = errors.New("codec: nesting too deep")

	// ErrInvalid means the input breaks the protocol.
	ErrInvalid = errors.New("codec: invalid frame")

	// ErrNegativeLength means a length is negative where it may not be.
	// It wraps ErrInvalid.
	ErrNegativeLength = fmt.Errorf("%w: negative length", ErrInvalid)

	// ErrBadConfig means a codec's configuration cannot work, such as a
	// length field of 5 bytes.
	ErrBadConfig = errors.New("codec: bad configuration")
)

// Limits used when a codec's own limit is left zero.
const (
	// DefaultMaxFrameSize bounds LengthField and RESP frames.
	DefaultMaxFrameSize = 64 << 20

	// DefaultMaxLineSize bounds Line and Delimiter frames, and every line
	// of RESP: inline commands, length headers and simple values.
	DefaultMaxLineSize = 64 << 10

	// DefaultMaxArrayLen bounds the elements of one RESP aggregate.
	DefaultMaxArrayLen = 1 << 20

	// DefaultMaxDepth bounds how deep RESP aggregates nest, counting the
	// command's own array.
	DefaultMaxDepth = 8
)

// Each decodes every whole frame buffered in in and calls fn with each.
// It returns nil once the rest is incomplete, or the first error of dec or
// fn, after which the connection should be closed.
func Each(in Inbound, dec Decoder, fn func(frame []byte) error) error {
	for {
		frame, err := dec.Decode(in)
		if err == ErrIncomplete {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(frame); err != nil {
			return err
		}
	}
}

// buffered returns every byte buffered in in.
func buffered(in Inbound) ([]byte, error) {
	buf, err := in.Peek(0)
	if err != nil {
		return nil, fmt.Errorf("codec: peek: %w", err)
	}
	return buf, nil
}

// take consumes n bytes of in, whose buffered bytes are buf, and returns
// buf[start:end]. The frame's capacity ends with it, so appending to it
// cannot overwrite the bytes after it.
func take(in Inbound, buf []byte, start, end, n int) ([]byte, error) {
	if _, err := in.Discard(n); err != nil {
		return nil, fmt.Errorf("codec: discard: %w", err)
	}
	return buf[start:end:end], nil
}

// orDefault returns limit, or def when limit is not positive.
func orDefault(limit, def int) int {
	if limit > 0 {
		return limit
	}
	return def
}
