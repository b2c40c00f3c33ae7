package codec_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

func TestLineRoundTrip(t *testing.T) {
	rng := newRand()
	var stream codec.Buffer
	var want []string
	for range 20 {
		line := randomBytes(rng, rng.IntN(12), "ab \r\x00")
		require.NoError(t, codec.Line{}.Encode(&stream, line))
		want = append(want, string(line))
	}
	all, _ := stream.Peek(0)
	checkSplits(t, func() codec.Decoder { return codec.Line{} }, asFrame, all, want)
}

func TestLineEnds(t *testing.T) {
	stream := "one\ntwo\r\n\nthree\r\r\nfour\rfive\n\r\n"
	want := []string{"one", "two", "", "three\r", "four\rfive", ""}
	checkSplits(t, func() codec.Decoder { return codec.Line{} }, asFrame, []byte(stream), want)
}

func TestLineLimit(t *testing.T) {
	l := codec.Line{MaxFrameSize: 4}
	got, _, err := feed(l, asFrame, []byte("abcd\r\nabcd\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"abcd", "abcd"}, got)

	checkHostile(t, []hostile{
		{"unterminated", l, "abcdef", codec.ErrFrameTooLarge},
		{"long line", l, "abcde\n", codec.ErrFrameTooLarge},
		{"long line with CR", l, "abcde\r\n", codec.ErrFrameTooLarge},
	})
	checkBounded(t, codec.Line{}, "", 'a', codec.DefaultMaxLineSize+2)
	checkBounded(t, l, "", '\r', 6)
}

func TestLineEncodeErrors(t *testing.T) {
	var out codec.Buffer
	require.ErrorIs(t, codec.Line{}.Encode(&out, []byte("a\nb")), codec.ErrInvalid)
	require.ErrorIs(t, codec.Line{MaxFrameSize: 2}.Encode(&out, []byte("abc")), codec.ErrFrameTooLarge)
	require.Zero(t, out.Len())
}

func FuzzLine(f *testing.F) {
	f.Add([]byte("PING\r\nPING\n\n"))
	f.Add([]byte("a\r\r\nb\rc\n"))
	f.Add([]byte(strings.Repeat("x", 70) + "\n"))
	f.Add([]byte("half"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := codec.Line{MaxFrameSize: 64}
		checkFuzz(t, func() codec.Decoder { return l }, asFrame, data, l.MaxFrameSize)
		checkRoundTrip(t, l, data, data)
	})
}
