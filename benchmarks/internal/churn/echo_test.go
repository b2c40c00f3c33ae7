package churn

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inbound is a connection's unread input as an event loop holds it. When
// short is set, its Next takes the n bytes asked for but gives back only
// the first short of them, as a broken loop might.
type inbound struct {
	buf   []byte
	short int
}

func (in *inbound) InboundBuffered() int { return len(in.buf) }

func (in *inbound) Next(n int) ([]byte, error) {
	b := in.buf[:n]
	in.buf = in.buf[n:]
	if in.short > 0 && n > in.short {
		return b[:in.short], io.ErrShortBuffer
	}
	return b, nil
}

// counts is what a Tally has counted.
type counts struct{ done, mismatch, closed int64 }

func counted(t *Tally) counts {
	return counts{t.done.Load(), t.mismatch.Load(), t.closed.Load()}
}

// message is a stamped message of size bytes, as a client sends it.
func message(size int) []byte {
	msg := make([]byte, size)
	Fill(msg, 3)
	Stamp(msg, 42)
	return msg
}

func TestEchoWaitsForTheWholeEcho(t *testing.T) {
	for _, size := range []int{MinSize, 64, 16 << 10} {
		msg := message(size)
		e, tally, in := &Echo{Msg: msg}, new(Tally), new(inbound)
		for i := range msg[:len(msg)-1] {
			in.buf = append(in.buf, msg[i])
			require.False(t, e.Judge(in, tally), "%d of %d bytes", i+1, size)
			require.Equal(t, i+1, in.InboundBuffered(), "a partial echo stays unread")
		}
		assert.Equal(t, counts{}, counted(tally), "nothing is counted before the echo is whole")
		in.buf = append(in.buf, msg[len(msg)-1])
		assert.True(t, e.Judge(in, tally))
		assert.Zero(t, in.InboundBuffered(), "the echo is read")
		assert.Equal(t, counts{done: 1}, counted(tally))
	}
}

func TestEchoCountsWrongBytesAsMismatch(t *testing.T) {
	msg := message(64)
	for i := range msg {
		echo := append([]byte(nil), msg...)
		echo[i] ^= 0x80
		e, tally := &Echo{Msg: msg}, new(Tally)
		require.True(t, e.Judge(&inbound{buf: echo}, tally), "byte %d", i)
		require.Equal(t, counts{mismatch: 1}, counted(tally), "byte %d", i)
	}
	other := append([]byte(nil), msg...)
	Stamp(other, 43)
	tally := new(Tally)
	assert.True(t, (&Echo{Msg: msg}).Judge(&inbound{buf: other}, tally))
	assert.Equal(t, counts{mismatch: 1}, counted(tally), "another dial's echo is not this one's")
}

func TestEchoCountsBytesPastTheEchoAsMismatch(t *testing.T) {
	msg := message(64)
	in := &inbound{buf: append(append([]byte(nil), msg...), 0)}
	tally := new(Tally)
	assert.True(t, (&Echo{Msg: msg}).Judge(in, tally))
	assert.Equal(t, counts{mismatch: 1}, counted(tally))
	assert.Equal(t, 1, in.InboundBuffered(), "it reads no more than the echo")

	in = &inbound{buf: append(append([]byte(nil), msg...), msg...)}
	tally = new(Tally)
	assert.True(t, (&Echo{Msg: msg}).Judge(in, tally))
	assert.Equal(t, counts{mismatch: 1}, counted(tally), "an echo twice is one too many")
}

func TestEchoCountsAShortReadAsMismatch(t *testing.T) {
	msg := message(64)
	in := &inbound{buf: append([]byte(nil), msg...), short: 32}
	tally := new(Tally)
	assert.True(t, (&Echo{Msg: msg}).Judge(in, tally))
	assert.Equal(t, counts{mismatch: 1}, counted(tally), "half an echo, even the right half, is not the echo")
}

func TestEchoClosed(t *testing.T) {
	failed := errors.New("connection reset")
	msg := message(64)
	for _, tc := range []struct {
		name  string
		echo  []byte // what came before the close
		err   error  // what the close reported
		after counts
	}{
		{"after the echo", msg, nil, counts{done: 1}},
		{"with an error after the echo", msg, failed, counts{done: 1, closed: 1}},
		{"before anything came", nil, nil, counts{closed: 1}},
		{"with part of the echo", msg[:63], nil, counts{closed: 1}},
		{"with an error before the echo", msg[:1], failed, counts{closed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tally := &Echo{Msg: msg}, new(Tally)
			e.Judge(&inbound{buf: append([]byte(nil), tc.echo...)}, tally)
			e.Closed(tc.err, tally)
			assert.Equal(t, tc.after, counted(tally))
		})
	}
}

func TestEchoClosedReadiesTheNextDial(t *testing.T) {
	msg := message(64)
	e, tally := &Echo{Msg: msg}, new(Tally)
	require.True(t, e.Judge(&inbound{buf: append([]byte(nil), msg...)}, tally))
	e.Closed(nil, tally)
	require.Equal(t, counts{done: 1}, counted(tally))
	e.Closed(nil, tally) // the next dial closes before its echo
	assert.Equal(t, counts{done: 1, closed: 1}, counted(tally), "the last dial's verdict is not this one's")
}
