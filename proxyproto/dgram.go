package proxyproto

var (
	errDgramShort     = invalid("datagram shorter than its v2 header")
	errDgramTransport = invalid("stream transport in a datagram's header")
)

// ParseDatagram reads the version 2 header at the start of a datagram, as
// a proxy that relays UDP prepends one to each datagram it forwards. The
// datagram is all there is, so its header must be whole: where Parse
// would wait for more (ErrIncomplete), ParseDatagram returns an error
// wrapping ErrInvalid. It returns ErrNotProxy when b does not begin with
// the 12 bytes of the version 2 signature, a version 1 line among them,
// since version 1 relays no datagrams; and ErrInvalid when a PROXY
// command names a stream transport (TCP4, TCP6, UnixStream). A LOCAL
// command, or the Unknown transport, carries no client: the receiver
// uses the datagram's real sender. Like Parse, it allocates nothing and
// returns views into b.
func ParseDatagram(b []byte) (h Header, n int, err error) {
	if len(b) < len(sigV2) || string(b[:len(sigV2)]) != sigV2 {
		return Header{}, 0, ErrNotProxy
	}
	if len(b) < v2FixedLen {
		return Header{}, 0, errDgramShort
	}
	if n, err = h.parseV2(b); err == ErrIncomplete {
		err = errDgramShort
	}
	if err == nil && h.Command == Proxy {
		switch h.Transport {
		case TCP4, TCP6, UnixStream:
			err = errDgramTransport
		}
	}
	if err != nil {
		return Header{}, 0, err
	}
	return h, n, nil
}
