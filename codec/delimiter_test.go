package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

func TestDelimiterRoundTrip(t *testing.T) {
	for _, delim := range []string{"|", "||", "\r\n\r\n", "aba"} {
		t.Run(delim, func(t *testing.T) {
			d := codec.Delimiter{Delim: []byte(delim)}
			rng := newRand()
			var stream codec.Buffer
			var want []string
			for len(want) < 20 {
				frame := randomBytes(rng, rng.IntN(10), "ab|\r\n")
				if d.Encode(&stream, frame) == nil {
					want = append(want, string(frame))
				}
			}
			all, _ := stream.Peek(0)
			checkSplits(t, func() codec.Decoder { return d }, asFrame, all, want)
		})
	}
}

func TestDelimiterEncodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		d     codec.Delimiter
		frame string
		err   error
	}{
		{"holds delimiter", codec.Delimiter{Delim: []byte("||")}, "a||b", codec.ErrInvalid},
		{"ends with part of it", codec.Delimiter{Delim: []byte("||")}, "a|", codec.ErrInvalid},
		{"ends with overlap", codec.Delimiter{Delim: []byte("\r\n\r\n")}, "a\r\n", codec.ErrInvalid},
		{"over the limit", codec.Delimiter{Delim: []byte("|"), MaxFrameSize: 2}, "abc", codec.ErrFrameTooLarge},
		{"no delimiter", codec.Delimiter{}, "a", codec.ErrBadConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out codec.Buffer
			require.ErrorIs(t, tc.d.Encode(&out, []byte(tc.frame)), tc.err)
			require.Zero(t, out.Len())
		})
	}
	var out codec.Buffer
	require.NoError(t, codec.Delimiter{Delim: []byte("aba")}.Encode(&out, []byte("xa")), "xa+aba has no early aba")
}

func TestDelimiterLimit(t *testing.T) {
	d := codec.Delimiter{Delim: []byte("\r\n\r\n"), MaxFrameSize: 4}
	got, _, err := feed(d, asFrame, []byte("abcd\r\n\r\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"abcd"}, got)

	checkHostile(t, []hostile{
		{"unterminated", d, "abcde\r\n\r\n", codec.ErrFrameTooLarge},
		{"no delimiter", codec.Delimiter{}, "a", codec.ErrBadConfig},
	})
	checkBounded(t, d, "", 'a', 8)
	checkBounded(t, codec.Delimiter{Delim: []byte("||")}, "", 'a', codec.DefaultMaxLineSize+2)
}

func FuzzDelimiter(f *testing.F) {
	f.Add([]byte("a||b||"), []byte("||"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), []byte("\r\n\r\n"))
	f.Add([]byte("abababa"), []byte("aba"))
	f.Add([]byte("x"), []byte(""))
	f.Fuzz(func(t *testing.T, data, delim []byte) {
		d := codec.Delimiter{Delim: delim, MaxFrameSize: 64}
		checkFuzz(t, func() codec.Decoder { return d }, asFrame, data, d.MaxFrameSize)
		checkRoundTrip(t, d, data, data)
	})
}
