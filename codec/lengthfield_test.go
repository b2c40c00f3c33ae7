package codec_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

// lengthFields are configurations that cover every option.
var lengthFields = []codec.LengthField{
	{},
	{KeepHeader: true},
	{Size: 1, Strip: 1},
	{Size: 2, LittleEndian: true, Strip: 2},
	{Size: 3},
	{Size: 8, LittleEndian: true, KeepHeader: true},
	{Size: 2, Offset: 2},
	{Size: 2, Offset: 2, Strip: 1},
	{Size: 4, IncludesHeader: true, Strip: 4},
	{Size: 2, Offset: 1, Adjust: 2, IncludesHeader: true, Strip: 1},
	{Size: 2, Adjust: -3, KeepHeader: true},
	{Size: 2, Adjust: -3},
	{Size: 3, LittleEndian: true, Adjust: 5, Strip: 5},
}

// strip returns how many bytes lf's Decode cuts from each frame: Strip,
// or the header up to the end of the length field if Strip is left zero,
// or none with KeepHeader.
func strip(lf codec.LengthField) int {
	switch {
	case lf.KeepHeader:
		return 0
	case lf.Strip != 0:
		return lf.Strip
	case lf.Size == 0:
		return lf.Offset + 4
	}
	return lf.Offset + lf.Size
}

func TestLengthFieldRoundTrip(t *testing.T) {
	rng := newRand()
	for _, lf := range lengthFields {
		t.Run(fmt.Sprintf("%+v", lf), func(t *testing.T) {
			var stream codec.Buffer
			var want []string
			for range 12 {
				frame := randomBytes(rng, lf.Offset+max(lf.Adjust, 0)+rng.IntN(30), "ab\x00\xff")
				var wire codec.Buffer
				require.NoError(t, lf.Encode(&wire, frame))
				b, _ := wire.Peek(0)
				want = append(want, string(b[strip(lf):]))
				_, _ = stream.Write(b)
			}
			all, _ := stream.Peek(0)
			checkSplits(t, func() codec.Decoder { return lf }, asFrame, all, want)
		})
	}
}

func TestLengthFieldWire(t *testing.T) {
	tests := []struct {
		lf    codec.LengthField
		frame string
		wire  string
	}{
		{codec.LengthField{}, "hi", "\x00\x00\x00\x02hi"},
		{codec.LengthField{Size: 2, LittleEndian: true}, "hi", "\x02\x00hi"},
		{codec.LengthField{Size: 3}, "hi", "\x00\x00\x02hi"},
		{codec.LengthField{Size: 8}, "hi", "\x00\x00\x00\x00\x00\x00\x00\x02hi"},
		{codec.LengthField{Size: 1, IncludesHeader: true}, "hi", "\x03hi"},
		{codec.LengthField{Size: 1, Offset: 1}, "Thi", "T\x02hi"},
		{codec.LengthField{Size: 1, Offset: 1, IncludesHeader: true}, "Thi", "T\x04hi"},
		{codec.LengthField{Size: 1, Adjust: -1}, "hi", "\x03hi"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%+v", tc.lf), func(t *testing.T) {
			var wire codec.Buffer
			require.NoError(t, tc.lf.Encode(&wire, []byte(tc.frame)))
			got, _ := wire.Peek(0)
			require.Equal(t, tc.wire, string(got))
		})
	}
}

// TestLengthFieldStrip checks what Decode cuts from a frame: by default
// the header up to the end of the length field, so that with no Offset it
// returns what Encode was given; Strip bytes when Strip is set; and
// nothing with KeepHeader.
func TestLengthFieldStrip(t *testing.T) {
	tests := []struct {
		lf    codec.LengthField
		frame string // as Encode is given it
		want  string // as Decode returns it
	}{
		{codec.LengthField{}, "hi", "hi"},
		{codec.LengthField{Size: 2, LittleEndian: true, IncludesHeader: true}, "hi", "hi"},
		{codec.LengthField{Size: 1, Adjust: -1}, "hi", "hi"},
		{codec.LengthField{Size: 1, Offset: 1}, "Thi", "hi"},
		{codec.LengthField{Size: 1, Offset: 1, Strip: 1}, "Thi", "\x02hi"},
		{codec.LengthField{Size: 1, Adjust: 1, Strip: 2}, "hi!", "i!"},
		{codec.LengthField{KeepHeader: true}, "hi", "\x00\x00\x00\x02hi"},
		{codec.LengthField{Size: 1, Offset: 1, KeepHeader: true}, "Thi", "T\x02hi"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%+v", tc.lf), func(t *testing.T) {
			checkRoundTrip(t, tc.lf, []byte(tc.frame), []byte(tc.want))
		})
	}
}

func TestLengthFieldEncodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		lf    codec.LengthField
		frame string
		err   error
	}{
		{"over the field", codec.LengthField{Size: 1}, string(make([]byte, 256)), codec.ErrFrameTooLarge},
		{"over the limit", codec.LengthField{MaxFrameSize: 8}, "12345", codec.ErrFrameTooLarge},
		{"shorter than offset", codec.LengthField{Offset: 3}, "ab", codec.ErrInvalid},
		{"negative length", codec.LengthField{Adjust: 5}, "ab", codec.ErrNegativeLength},
		{"bad size", codec.LengthField{Size: 5}, "ab", codec.ErrBadConfig},
		{"bad offset", codec.LengthField{Offset: -1}, "ab", codec.ErrBadConfig},
		{"bad strip", codec.LengthField{Strip: -1}, "ab", codec.ErrBadConfig},
		{"strip and keep the header", codec.LengthField{Strip: 4, KeepHeader: true}, "ab", codec.ErrBadConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wire codec.Buffer
			require.ErrorIs(t, tc.lf.Encode(&wire, []byte(tc.frame)), tc.err)
		})
	}
}

func TestLengthFieldHostile(t *testing.T) {
	checkHostile(t, []hostile{
		{"huge length", codec.LengthField{}, "\xff\xff\xff\xff", codec.ErrFrameTooLarge},
		{"huge 8-byte length", codec.LengthField{Size: 8}, "\xff\xff\xff\xff\xff\xff\xff\xff", codec.ErrFrameTooLarge},
		{"over the limit", codec.LengthField{MaxFrameSize: 100}, "\x00\x00\x00\x61", codec.ErrFrameTooLarge},
		{"negative adjusted", codec.LengthField{Adjust: -4}, "\x00\x00\x00\x03abc", codec.ErrNegativeLength},
		{"negative with header", codec.LengthField{IncludesHeader: true}, "\x00\x00\x00\x03abc", codec.ErrNegativeLength},
		{"shorter than strip", codec.LengthField{Size: 1, Strip: 4}, "\x01a", codec.ErrInvalid},
		{"bad size", codec.LengthField{Size: 7}, "\x01a", codec.ErrBadConfig},
		{"strip and keep the header", codec.LengthField{Strip: 1, KeepHeader: true}, "\x01a", codec.ErrBadConfig},
	})
}

func TestLengthFieldLimit(t *testing.T) {
	lf := codec.LengthField{Size: 2, MaxFrameSize: 10}
	_, _, err := feed(lf, asFrame, []byte("\x00\x08abcdefgh"))
	require.NoError(t, err, "a frame of exactly the limit")
	_, _, err = feed(lf, asFrame, []byte("\x00\x09"))
	require.ErrorIs(t, err, codec.ErrFrameTooLarge, "refused from the header alone")
}

func FuzzLengthField(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x02hi\x00\x00\x00\x00"), uint8(4), uint8(0), uint8(0), int8(0), false, false)
	f.Add([]byte("\x02\x00hi\x01"), uint8(2), uint8(0), uint8(2), int8(0), true, false)
	f.Add([]byte("T\x04hiT\xff"), uint8(1), uint8(1), uint8(0), int8(0), false, true)
	f.Add([]byte("\x00\x00\x03abc"), uint8(3), uint8(0), uint8(3), int8(-4), false, false)
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"), uint8(8), uint8(0), uint8(0), int8(0), true, false)
	f.Fuzz(func(t *testing.T, data []byte, size, offset, cut uint8, adjust int8, little, incl bool) {
		lf := codec.LengthField{
			Size:   []int{1, 2, 3, 4, 8}[size%5],
			Offset: int(offset % 4),
			Strip:  int(cut % 16),
			// A cut of 16, 32, ... keeps the header; one of 0 strips it.
			KeepHeader:     cut%16 == 0 && cut >= 16,
			Adjust:         int(adjust),
			LittleEndian:   little,
			IncludesHeader: incl,
			MaxFrameSize:   1024,
		}
		checkFuzz(t, func() codec.Decoder { return lf }, asFrame, data, lf.MaxFrameSize)
		var wire codec.Buffer
		if lf.Encode(&wire, data) == nil {
			if b, _ := wire.Peek(0); strip(lf) <= len(b) {
				checkRoundTrip(t, lf, data, b[strip(lf):])
			}
		}
	})
}
