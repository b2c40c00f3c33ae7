package codec_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicenet/sluice/codec"
)

func TestAppend(t *testing.T) {
	tests := []struct {
		got  []byte
		want string
	}{
		{codec.AppendSimple(nil, "OK"), "+OK\r\n"},
		{codec.AppendSimple(nil, []byte("a\r\nb")), "+a  b\r\n"},
		{codec.AppendError(nil, "ERR bad\nthing"), "-ERR bad thing\r\n"},
		{codec.AppendInt(nil, -42), ":-42\r\n"},
		{codec.AppendBulk(nil, "a\r\nb"), "$4\r\na\r\nb\r\n"},
		{codec.AppendBulk(nil, []byte{}), "$0\r\n\r\n"},
		{codec.AppendNullBulk(nil), "$-1\r\n"},
		{codec.AppendNullArray(nil), "*-1\r\n"},
		{codec.AppendArray(nil, 3), "*3\r\n"},
		{codec.AppendNull(nil), "_\r\n"},
		{codec.AppendBool(nil, true), "#t\r\n"},
		{codec.AppendBool(nil, false), "#f\r\n"},
		{codec.AppendDouble(nil, 1.5), ",1.5\r\n"},
		{codec.AppendDouble(nil, 1e300), ",1e+300\r\n"},
		{codec.AppendDouble(nil, math.Inf(1)), ",inf\r\n"},
		{codec.AppendDouble(nil, math.Inf(-1)), ",-inf\r\n"},
		{codec.AppendDouble(nil, math.NaN()), ",nan\r\n"},
		{codec.AppendMap(nil, 2), "%2\r\n"},
		{codec.AppendSet(nil, 0), "~0\r\n"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, string(tc.got))
	}
}

// TestAppendDecodes checks that every reply reads back with RESP, as
// elements of a command.
func TestAppendDecodes(t *testing.T) {
	b := codec.AppendArray(nil, 10)
	b = codec.AppendSimple(b, "OK")
	b = codec.AppendError(b, "ERR x")
	b = codec.AppendInt(b, 7)
	b = codec.AppendBulk(b, "v")
	b = codec.AppendNullBulk(b)
	b = codec.AppendNull(b)
	b = codec.AppendBool(b, true)
	b = codec.AppendDouble(b, -2.5e-7)
	b = codec.AppendMap(b, 1)
	b = codec.AppendSimple(b, "k")
	b = codec.AppendInt(b, 1)
	b = codec.AppendSet(b, 0)
	got, _, err := feed(new(codec.RESP), asArgs, b)
	assert.NoError(t, err)
	assert.Equal(t, []string{`"OK" "ERR x" "7" "v" nil nil "t" "-2.5e-07" "%1\r\n+k\r\n:1\r\n" "~0\r\n" `}, got)
}

func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		b := codec.AppendArray(buf[:0], 3)
		b = codec.AppendBulk(b, "value")
		b = codec.AppendSimple(b, "OK")
		b = codec.AppendError(b, "ERR x")
		b = codec.AppendInt(b, 12345)
		b = codec.AppendDouble(b, 1.25)
		_ = codec.AppendBool(b, true)
	})
	assert.Zero(t, allocs)
}
