package codec_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

var (
	_ codec.Codec   = codec.LengthField{}
	_ codec.Codec   = codec.Line{}
	_ codec.Codec   = codec.Delimiter{}
	_ codec.Codec   = codec.Fixed{}
	_ codec.Decoder = (*codec.RESP)(nil)

	_ codec.AppendEncoder = codec.LengthField{}
	_ codec.AppendEncoder = codec.Line{}
	_ codec.AppendEncoder = codec.Delimiter{}
	_ codec.AppendEncoder = codec.Fixed{}
)

// render turns what a decoder returned into a string to compare.
type render func(dec codec.Decoder, frame []byte) string

// asFrame renders the frame itself.
func asFrame(_ codec.Decoder, frame []byte) string { return string(frame) }

// asArgs renders the arguments of a RESP command, telling nulls apart.
func asArgs(dec codec.Decoder, _ []byte) string {
	var b strings.Builder
	for _, a := range dec.(*codec.RESP).Args() {
		if a == nil {
			b.WriteString("nil ")
		} else {
			b.WriteString(strconv.Quote(string(a)) + " ")
		}
	}
	return b.String()
}

// feed writes chunks one after the other into a Buffer, decoding every
// whole frame after each, and returns the frames rendered, how many bytes
// were left undecoded and the first error.
func feed(dec codec.Decoder, show render, chunks ...[]byte) (got []string, left int, err error) {
	var in codec.Buffer
	for _, c := range chunks {
		_, _ = in.Write(c)
		err = codec.Each(&in, dec, func(frame []byte) error {
			got = append(got, show(dec, frame))
			return nil
		})
		if err != nil {
			break
		}
	}
	return got, in.Len(), err
}

// bytewise splits p into chunks of one byte, or one empty chunk if p is
// empty, so that the decoder is called at least once.
func bytewise(p []byte) [][]byte {
	if len(p) == 0 {
		return [][]byte{p}
	}
	chunks := make([][]byte, len(p))
	for i := range p {
		chunks[i] = p[i : i+1]
	}
	return chunks
}

// checkSplits checks that stream decodes to want, whole, split in two at
// every byte boundary, and fed one byte at a time.
func checkSplits(t *testing.T, newDec func() codec.Decoder, show render, stream []byte, want []string) {
	t.Helper()
	check := func(name string, chunks ...[]byte) {
		t.Helper()
		got, left, err := feed(newDec(), show, chunks...)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
		require.Zero(t, left, name)
	}
	for k := range len(stream) + 1 {
		check("split at "+strconv.Itoa(k), stream[:k], stream[k:])
	}
	check("byte by byte", bytewise(stream)...)
}

// hostile is an input a decoder must refuse with err.
type hostile struct {
	name  string
	dec   codec.Decoder
	input string
	err   error
}

// checkHostile checks that each input, whole or fed one byte at a time,
// gets its error and no frame.
func checkHostile(t *testing.T, cases []hostile) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := feed(tc.dec, asFrame, []byte(tc.input))
			require.ErrorIs(t, err, tc.err)
			_, _, err = feed(tc.dec, asFrame, bytewise([]byte(tc.input))...)
			require.ErrorIs(t, err, tc.err)
		})
	}
}

// checkBounded feeds an endless stream, start and then filler forever,
// one byte at a time, and checks that dec fails with ErrFrameTooLarge
// before more than bound bytes are buffered.
func checkBounded(t *testing.T, dec codec.Decoder, start string, filler byte, bound int) {
	t.Helper()
	var in codec.Buffer
	_, _ = in.Write([]byte(start))
	for in.Len() <= bound {
		_, err := dec.Decode(&in)
		if err != codec.ErrIncomplete {
			require.ErrorIs(t, err, codec.ErrFrameTooLarge)
			return
		}
		_, _ = in.Write([]byte{filler})
	}
	t.Fatalf("still buffering at %d bytes", in.Len())
}

// kind returns the sentinel err is, so that errors can be compared by kind.
func kind(err error) error {
	for _, k := range []error{codec.ErrFrameTooLarge, codec.ErrTooDeep, codec.ErrNegativeLength, codec.ErrInvalid} {
		if errors.Is(err, k) {
			return k
		}
	}
	return err
}

// checkFuzz checks what every decoder must do with any input: never
// panic, decode the same whether the input arrives whole or byte by byte,
// and never return a frame over limit.
func checkFuzz(t *testing.T, newDec func() codec.Decoder, show render, data []byte, limit int) {
	longest := 0
	measure := func(dec codec.Decoder, frame []byte) string {
		longest = max(longest, len(frame))
		return show(dec, frame)
	}
	whole, left, err := feed(newDec(), measure, data)
	require.LessOrEqual(t, left, len(data))
	require.LessOrEqual(t, longest, limit)
	bytes, _, err2 := feed(newDec(), show, bytewise(data)...)
	require.Equal(t, whole, bytes)
	require.Equal(t, kind(err), kind(err2), "%v / %v", err, err2)
}

// checkRoundTrip checks that frame, encoded and decoded, comes back as want,
// if the codec accepts it, and that AppendEncode, if it has one, agrees
// with Encode.
func checkRoundTrip(t *testing.T, c codec.Codec, frame, want []byte) {
	t.Helper()
	var in codec.Buffer
	err := c.Encode(&in, frame)
	wire, _ := in.Peek(0)
	if a, ok := c.(codec.AppendEncoder); ok {
		checkAppend(t, a, frame, wire, err)
	}
	if err != nil {
		return
	}
	got, err := c.Decode(&in)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Zero(t, in.Len())
}

// checkAppend checks that AppendEncode appends to a slice already holding
// bytes what Encode wrote for frame, wire, or else fails as Encode did,
// with encodeErr, and leaves the slice as it was.
func checkAppend(t *testing.T, c codec.AppendEncoder, frame, wire []byte, encodeErr error) {
	t.Helper()
	const before = "earlier frames"
	dst := []byte(before)
	got, err := c.AppendEncode(dst[:len(dst):len(dst)], frame)
	require.Equal(t, fmt.Sprint(encodeErr), fmt.Sprint(err))
	if err != nil {
		require.Equal(t, before, string(got))
		return
	}
	require.Equal(t, before+string(wire), string(got))
}

// randomBytes returns n random bytes drawn from alphabet.
func randomBytes(rng *rand.Rand, n int, alphabet string) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}

// newRand returns a generator that gives the same numbers every run.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// stopAfter is a Decoder that returns its frames and then an error.
type stopAfter struct {
	frames []string
	err    error
}

func (s *stopAfter) Decode(codec.Inbound) ([]byte, error) {
	if len(s.frames) == 0 {
		return nil, s.err
	}
	f := s.frames[0]
	s.frames = s.frames[1:]
	return []byte(f), nil
}

func TestEach(t *testing.T) {
	errStop := errors.New("stop")
	tests := []struct {
		name  string
		dec   *stopAfter
		fnErr error
		want  []string
		err   error
	}{
		{"incomplete ends it", &stopAfter{[]string{"a", "b"}, codec.ErrIncomplete}, nil, []string{"a", "b"}, nil},
		{"decoder error", &stopAfter{[]string{"a"}, codec.ErrInvalid}, nil, []string{"a"}, codec.ErrInvalid},
		{"callback error", &stopAfter{[]string{"a", "b"}, codec.ErrIncomplete}, errStop, []string{"a"}, errStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := codec.Each(nil, tc.dec, func(frame []byte) error {
				got = append(got, string(frame))
				return tc.fnErr
			})
			assert.ErrorIs(t, err, tc.err)
			if tc.err == nil {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestZeroAllocs checks that decoding a frame allocates nothing.
func TestZeroAllocs(t *testing.T) {
	for _, bc := range benchCases() {
		t.Run(bc.name, func(t *testing.T) {
			dec := bc.newDec()
			var in codec.Buffer
			allocs := testing.AllocsPerRun(100, func() {
				_, _ = in.Write(bc.frame)
				frame, err := dec.Decode(&in)
				if err != nil || len(frame) == 0 {
					t.Fatalf("decode: %q, %v", frame, err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

// benchCase is one codec decoding one typical frame.
type benchCase struct {
	name   string
	newDec func() codec.Decoder
	frame  []byte // as it arrives
}

func benchCases() []benchCase {
	payload := strings.Repeat("x", 64)
	return []benchCase{
		{"LengthField", func() codec.Decoder { return codec.LengthField{} }, []byte("\x00\x00\x00\x40" + payload)},
		{"Line", func() codec.Decoder { return codec.Line{} }, []byte(payload + "\r\n")},
		{"Delimiter", func() codec.Decoder { return codec.Delimiter{Delim: []byte("\r\n\r\n")} }, []byte(payload + "\r\n\r\n")},
		{"Fixed", func() codec.Decoder { return codec.Fixed{Size: 64} }, []byte(payload)},
		{"RESP", func() codec.Decoder { return new(codec.RESP) }, []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$64\r\n" + payload + "\r\n")},
		{"RESPInline", func() codec.Decoder { return new(codec.RESP) }, []byte("SET key " + payload + "\r\n")},
	}
}

// BenchmarkDecode measures decoding one frame, many frames arriving at once.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			dec := bc.newDec()
			batch := []byte(strings.Repeat(string(bc.frame), 64))
			var in codec.Buffer
			b.SetBytes(int64(len(bc.frame)))
			b.ReportAllocs()
			for b.Loop() {
				_, err := dec.Decode(&in)
				if err == codec.ErrIncomplete {
					_, _ = in.Write(batch)
					_, err = dec.Decode(&in)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
