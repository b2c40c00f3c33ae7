package codec_test

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

// respArg is RESP as a Codec of one-argument commands: Encode sends frame
// as a client would, as the sole argument of a command, and Decode returns
// that argument. RESP has no Encoder of its own; a server answers with the
// Append functions.
type respArg struct{ codec.RESP }

func (r *respArg) Encode(w io.Writer, frame []byte) error {
	cmd := codec.AppendArray(nil, 1)
	_, err := w.Write(codec.AppendBulk(cmd, frame))
	return err
}

func (r *respArg) Decode(in codec.Inbound) ([]byte, error) {
	if _, err := r.RESP.Decode(in); err != nil {
		return nil, err
	}
	return r.Args()[0], nil
}

// TestZeroValueRoundTrip checks the Codec contract, that Decode reads back
// what Encode wrote, for each codec as a newcomer first writes it: its
// zero value or, where that cannot work, its one required setting.
func TestZeroValueRoundTrip(t *testing.T) {
	text := []string{"", "a", "hello, world", strings.Repeat("0123456789", 100)}
	binary := append([]string{"\x00\x00\x00\x04", "\r\n", "\xff\x00\n"}, text...)
	tests := []struct {
		name     string
		newCodec func() codec.Codec
		payloads []string
	}{
		{"LengthField{}", func() codec.Codec { return codec.LengthField{} }, binary},
		{"Line{}", func() codec.Codec { return codec.Line{} }, text},
		{"Delimiter{Delim}", func() codec.Codec { return codec.Delimiter{Delim: []byte("\r\n\r\n")} }, text},
		{"Fixed{Size}", func() codec.Codec { return codec.Fixed{Size: 4} }, []string{"\x00\x00\x00\x04", "abcd", "\r\n\r\n"}},
		{"RESP{}", func() codec.Codec { return new(respArg) }, binary},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stream codec.Buffer
			for _, p := range tc.payloads {
				checkRoundTrip(t, tc.newCodec(), []byte(p), []byte(p))
				require.NoError(t, tc.newCodec().Encode(&stream, []byte(p)))
			}
			all, _ := stream.Peek(0)
			checkSplits(t, func() codec.Decoder { return tc.newCodec() }, asFrame, all, tc.payloads)
		})
	}
}

// TestZeroValueUnusable checks that the codecs whose zero value cannot
// work, having no delimiter or size to frame by, refuse to encode and to
// decode alike, rather than framing one way only.
func TestZeroValueUnusable(t *testing.T) {
	for _, c := range []codec.Codec{codec.Delimiter{}, codec.Fixed{}} {
		var in codec.Buffer
		err := c.Encode(&in, []byte("abcd"))
		require.ErrorIs(t, err, codec.ErrBadConfig)
		checkAppend(t, c.(codec.AppendEncoder), []byte("abcd"), nil, err)
		_, _ = in.Write([]byte("abcd"))
		_, err = c.Decode(&in)
		require.ErrorIs(t, err, codec.ErrBadConfig)
	}
}

// TestAppendEncodeAllocs checks that AppendEncode allocates nothing when
// dst has room for the frame.
func TestAppendEncodeAllocs(t *testing.T) {
	payload := []byte(strings.Repeat("x", 64))
	for _, c := range []codec.AppendEncoder{
		codec.LengthField{},
		codec.LengthField{Size: 2, Offset: 2},
		codec.Line{},
		codec.Delimiter{Delim: []byte("\r\n\r\n")},
		codec.Fixed{Size: len(payload)},
	} {
		dst := make([]byte, 0, 2*len(payload))
		allocs := testing.AllocsPerRun(100, func() {
			out, err := c.AppendEncode(dst, payload)
			if err != nil || len(out) < len(payload) {
				t.Fatalf("%T: %q, %v", c, out, err)
			}
		})
		require.Zero(t, allocs, "%+v", c)
	}
}
