package codec

import "io"

// Buffer is an in-memory Inbound: bytes written to it are read back by a
// Decoder. It lets the codecs work where there is no sluice.Conn, such as a
// client reading a net.Conn, and in tests. Frames decoded from a Buffer stay
// valid until its next Write. The zero value is an empty Buffer.
type Buffer struct {
	buf []byte
	off int // start of the unread bytes
}

// Write appends p to the buffered bytes. It always succeeds.
func (b *Buffer) Write(p []byte) (int, error) {
	if b.off == len(b.buf) {
		b.buf, b.off = b.buf[:0], 0
	} else if b.off > cap(b.buf)/2 {
		// Reuse the consumed half rather than grow.
		n := copy(b.buf, b.buf[b.off:])
		b.buf, b.off = b.buf[:n], 0
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Peek returns the next n unread bytes, or all of them when n <= 0, without
// consuming them. With fewer than n unread it returns those and
// io.ErrShortBuffer.
func (b *Buffer) Peek(n int) ([]byte, error) {
	unread := b.buf[b.off:]
	if n > len(unread) {
		return unread, io.ErrShortBuffer
	}
	if n > 0 {
		unread = unread[:n]
	}
	return unread, nil
}

// Discard consumes the next n unread bytes, or all of them when n <= 0 or
// fewer are unread, as sluice.Conn does, and returns how many it consumed.
func (b *Buffer) Discard(n int) (int, error) {
	if unread := b.Len(); n <= 0 || n > unread {
		n = unread
	}
	b.off += n
	return n, nil
}

// Len returns how many bytes are unread.
func (b *Buffer) Len() int { return len(b.buf) - b.off }
