// Package codec frames a byte stream into messages: length-field, line,
// delimiter, fixed-length and RESP (the Redis protocol).
//
// A Decoder reads from an Inbound, the read side of a connection, and
// returns the next whole frame as a slice of the connection's own buffer:
// nothing is copied. When the buffered bytes do not yet hold a whole frame it
// returns ErrIncomplete and consumes nothing; the bytes stay buffered and the
// next call, after more arrive, tries again. A frame is valid only as long as
// the bytes it aliases: in a sluice handler, until the callback returns.
// Copy it (see package pool) to keep it longer.
//
// Every decoder bounds what a peer can make it buffer. A header that
// announces too large a frame, or a line that has run past the limit without
// a terminator, is rejected with ErrFrameTooLarge as soon as it is seen, not
// after the frame has arrived. Malformed input gives an error that wraps
// ErrInvalid. Either way the connection should be closed: the stream has
// lost its framing.
//
// Each decodes every whole frame buffered, so the usual handler is short:
//
//	func (s *server) OnTraffic(c sluice.Conn) sluice.Action {
//		err := codec.Each(c, s.codec, func(frame []byte) error {
//			return s.codec.Encode(c, frame) // echo
//		})
//		if err != nil {
//			return sluice.Close
//		}
//		return sluice.None
//	}
//
// Where there is no io.Writer to encode to, as on a goroutine that answers
// with Conn.AsyncWrite, AppendEncode frames into a byte slice instead:
// every Encoder here is also an AppendEncoder.
//
// A RESP server answers with the Append functions, which append a reply to
// a byte slice, allocating only when it must grow; aggregate headers are
// followed by their elements, appended in turn. Those marked RESP3 are for
// clients that switched to it with HELLO 3.
//
//	b = codec.AppendArray(b, 2)
//	b = codec.AppendBulk(b, "key")
//	b = codec.AppendInt(b, 42)
//	c.Write(b)
//
// LengthField, Line, Delimiter and Fixed hold only their configuration, so
// one value can serve every connection of every event loop. RESP keeps the
// arguments of the last command and its progress through a command still
// arriving, so each connection needs its own.
package codec
