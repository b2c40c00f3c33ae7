package codec

import (
	"fmt"
	"io"
	"slices"
)

// LengthField frames messages by a length field in a header, with the
// semantics of Netty's LengthFieldBasedFrameDecoder and
// LengthFieldPrepender. A frame on the wire is:
//
//	[Offset bytes][Size-byte length][the rest]
//
// and, with the length field read as an unsigned integer L, it spans
// Offset + Size + L + Adjust bytes in all, or L + Adjust bytes in all when
// IncludesHeader is set.
//
// Encode inserts the length field after the first Offset bytes of the
// frame it is given. Decode cuts the first Strip bytes from each frame, by
// default the header up to the end of the length field, Offset + Size
// bytes. So when Offset is zero, as usual, Decode returns exactly what
// Encode was given; with an Offset, it returns what followed the length
// field. The zero value frames messages by a 4-byte big-endian length that
// counts only the bytes after it:
//
//	var lf codec.LengthField
//	lf.Encode(w, []byte("hi")) // writes "\x00\x00\x00\x02hi"
//	lf.Decode(in)              // returns "hi"
//
// In Netty's terms: lengthFieldOffset is Offset, lengthFieldLength is Size,
// lengthAdjustment is Adjust, initialBytesToStrip is Strip and
// maxFrameLength is MaxFrameSize, with one difference. Netty strips
// nothing by default, so its decoder hands back the length its prepender
// added; a LengthField left to its default strips the header. Netty's
// initialBytesToStrip of 0 is KeepHeader here.
type LengthField struct {
	// Size is the length field's width in bytes: 1, 2, 3, 4 or 8.
	// Zero means 4.
	Size int

	// LittleEndian reads and writes the length field least significant
	// byte first; by default it is big-endian.
	LittleEndian bool

	// Offset is how many bytes of the header come before the length field.
	Offset int

	// Adjust is added to the length field's value to get the length of the
	// rest of the frame, as when the length counts a trailer too.
	Adjust int

	// Strip is how many bytes Decode cuts from the front of each frame.
	// Zero means Offset + Size, the whole header; set KeepHeader to cut
	// nothing.
	Strip int

	// KeepHeader makes Decode return each frame whole, header and all, as
	// it arrived. Encode still takes frames without their length field,
	// so what Decode returns is then not what Encode was given. Strip must
	// be zero.
	KeepHeader bool

	// IncludesHeader says the length counts the whole header, Offset and
	// Size included, and not only the bytes after the length field.
	IncludesHeader bool

	// MaxFrameSize bounds a frame on the wire, header included.
	// Zero means DefaultMaxFrameSize.
	MaxFrameSize int
}

// Decode returns the next frame less its first Strip bytes: without its
// header, unless Strip or KeepHeader say otherwise.
func (f LengthField) Decode(in Inbound) ([]byte, error) {
	hdr, err := f.header()
	if err != nil {
		return nil, err
	}
	buf, err := buffered(in)
	if err != nil {
		return nil, err
	}
	if len(buf) < hdr {
		return nil, ErrIncomplete
	}
	strip := f.strip(hdr)
	n, err := f.frameLen(f.read(buf[f.Offset:hdr]), hdr, strip)
	if err != nil {
		return nil, err
	}
	if len(buf) < n {
		return nil, ErrIncomplete
	}
	return take(in, buf, strip, n, n)
}

// Encode writes frame with its length field inserted after its first
// Offset bytes, which are the rest of the header. When Offset is zero, as
// usual, that is frame preceded by its length.
func (f LengthField) Encode(w io.Writer, frame []byte) error {
	field, err := f.field(frame)
	if err != nil {
		return err
	}
	if f.Offset > 0 {
		if _, err := w.Write(frame[:f.Offset]); err != nil {
			return err
		}
	}
	if _, err := w.Write(field[:f.size()]); err != nil {
		return err
	}
	_, err = w.Write(frame[f.Offset:])
	return err
}

// AppendEncode appends to dst what Encode would write; see AppendEncoder.
func (f LengthField) AppendEncode(dst, frame []byte) ([]byte, error) {
	field, err := f.field(frame)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, len(frame)+f.size())
	dst = append(dst, frame[:f.Offset]...)
	dst = append(dst, field[:f.size()]...)
	return append(dst, frame[f.Offset:]...), nil
}

// field checks that frame can be encoded and returns its length field,
// in the first size() bytes.
func (f LengthField) field(frame []byte) ([8]byte, error) {
	var field [8]byte
	hdr, err := f.header()
	if err != nil {
		return field, err
	}
	if len(frame) < f.Offset {
		return field, fmt.Errorf("codec: length field: %d-byte frame shorter than offset %d: %w", len(frame), f.Offset, ErrInvalid)
	}
	n := len(frame) + f.size()
	if limit := orDefault(f.MaxFrameSize, DefaultMaxFrameSize); n > limit {
		return field, fmt.Errorf("codec: length field: %d-byte frame over %d: %w", n, limit, ErrFrameTooLarge)
	}
	v := n - hdr - f.adjust(hdr)
	if v < 0 {
		return field, fmt.Errorf("codec: length field: length %d: %w", v, ErrNegativeLength)
	}
	if err := f.write(field[:f.size()], uint64(v)); err != nil {
		return field, err
	}
	return field, nil
}

// size returns the length field's width.
func (f LengthField) size() int { return orDefault(f.Size, 4) }

// header checks the configuration and returns how many bytes the header
// takes up to the end of the length field.
func (f LengthField) header() (int, error) {
	if size := f.size(); (size > 4 && size != 8) || f.Offset < 0 || f.Strip < 0 {
		return 0, fmt.Errorf("codec: length field of %d bytes at offset %d, strip %d: %w", f.Size, f.Offset, f.Strip, ErrBadConfig)
	}
	if f.KeepHeader && f.Strip != 0 {
		return 0, fmt.Errorf("codec: length field: KeepHeader with strip %d: %w", f.Strip, ErrBadConfig)
	}
	return f.Offset + f.size(), nil
}

// strip returns how many bytes Decode cuts from the front of a frame
// whose header, up to the end of the length field, is hdr bytes.
func (f LengthField) strip(hdr int) int {
	switch {
	case f.KeepHeader:
		return 0
	case f.Strip == 0:
		return hdr
	}
	return f.Strip
}

// adjust returns what to add to the length field's value, beyond the
// header, to get the whole frame's length.
func (f LengthField) adjust(hdr int) int {
	if f.IncludesHeader {
		return f.Adjust - hdr
	}
	return f.Adjust
}

// frameLen returns the length on the wire of the frame whose length field
// holds v, checking it against the limits and against strip, the bytes
// Decode will cut from it.
func (f LengthField) frameLen(v uint64, hdr, strip int) (int, error) {
	limit := orDefault(f.MaxFrameSize, DefaultMaxFrameSize)
	if v > 1<<62 { // beyond any limit, and would overflow below
		return 0, fmt.Errorf("codec: length field: length %d: %w", v, ErrFrameTooLarge)
	}
	rest := int64(v) + int64(f.adjust(hdr))
	if rest < 0 {
		return 0, fmt.Errorf("codec: length field: length %d adjusted to %d: %w", v, rest, ErrNegativeLength)
	}
	n := int64(hdr) + rest
	if n > int64(limit) {
		return 0, fmt.Errorf("codec: length field: %d-byte frame over %d: %w", n, limit, ErrFrameTooLarge)
	}
	if n < int64(strip) {
		return 0, fmt.Errorf("codec: length field: %d-byte frame shorter than strip %d: %w", n, strip, ErrInvalid)
	}
	return int(n), nil
}

// read returns the unsigned integer in b.
func (f LengthField) read(b []byte) uint64 {
	var v uint64
	if f.LittleEndian {
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v
	}
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// write stores v in b, failing if it does not fit.
func (f LengthField) write(b []byte, v uint64) error {
	if len(b) < 8 && v >= 1<<(8*len(b)) {
		return fmt.Errorf("codec: length %d over a %d-byte field: %w", v, len(b), ErrFrameTooLarge)
	}
	for i := range b {
		j := len(b) - 1 - i // big-endian: least significant byte last
		if f.LittleEndian {
			j = i
		}
		b[j] = byte(v)
		v >>= 8
	}
	return nil
}
