package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

func TestFixedRoundTrip(t *testing.T) {
	f := codec.Fixed{Size: 3}
	rng := newRand()
	var stream codec.Buffer
	var want []string
	for range 20 {
		frame := randomBytes(rng, 3, "ab\x00")
		require.NoError(t, f.Encode(&stream, frame))
		want = append(want, string(frame))
	}
	all, _ := stream.Peek(0)
	checkSplits(t, func() codec.Decoder { return f }, asFrame, all, want)
}

func TestFixedErrors(t *testing.T) {
	var out codec.Buffer
	require.ErrorIs(t, codec.Fixed{Size: 3}.Encode(&out, []byte("ab")), codec.ErrInvalid)
	require.ErrorIs(t, codec.Fixed{}.Encode(&out, nil), codec.ErrBadConfig)
	_, err := codec.Fixed{}.Decode(&out)
	require.ErrorIs(t, err, codec.ErrBadConfig)
}

func FuzzFixed(f *testing.F) {
	f.Add([]byte("abcdefg"), uint8(3))
	f.Add([]byte(""), uint8(1))
	f.Add([]byte("x"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		fx := codec.Fixed{Size: int(size)}
		checkFuzz(t, func() codec.Decoder { return fx }, asFrame, data, fx.Size)
		checkRoundTrip(t, fx, data, data)
	})
}
