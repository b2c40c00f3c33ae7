package churn

import "bytes"

// Inbound is the read side of a connection on an event loop, as gnet.Conn
// and sluice.Conn both have it: how many bytes have come and are not yet
// read, and reading them.
type Inbound interface {
	InboundBuffered() int
	Next(n int) ([]byte, error)
}

// An Echo is a slot's message and the verdict on its current dial, for a
// client on an event loop: its callbacks see the echo come in pieces, and
// the connection's close after it. Only the loop that owns the dial's
// connection touches it.
type Echo struct {
	Msg    []byte // the message, and so the echo expected
	judged bool   // the echo came and was counted, right or wrong
}

// Judge reports whether the echo of e.Msg has come whole, and counts the
// dial to t when it has. While in holds fewer than len(e.Msg) bytes it
// reads nothing and reports false: wait for more. Then it reads that many
// and counts the dial as Done if they are e.Msg byte for byte and nothing
// has come after them, as Mismatch if not, and reports true: the client
// closes the connection, and Closed counts nothing more.
func (e *Echo) Judge(in Inbound, t *Tally) bool {
	if in.InboundBuffered() < len(e.Msg) {
		return false
	}
	echo, _ := in.Next(len(e.Msg))
	e.judged = true
	if bytes.Equal(echo, e.Msg) && in.InboundBuffered() == 0 {
		t.Done()
	} else {
		t.Mismatch()
	}
	return true
}

// Closed counts to t, as Closed, a dial whose connection ended with err
// or before Judge saw its echo whole, and readies e for the next dial. The
// client calls it from its close callback, before it dials again.
func (e *Echo) Closed(err error, t *Tally) {
	if err != nil || !e.judged {
		t.Closed()
	}
	e.judged = false
}
