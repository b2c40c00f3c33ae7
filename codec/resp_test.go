package codec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

func newRESP() codec.Decoder { return new(codec.RESP) }

func TestRESPRoundTrip(t *testing.T) {
	rng := newRand()
	var stream []byte
	var want []string
	for range 12 {
		args := make([][]byte, 1+rng.IntN(4))
		stream = codec.AppendArray(stream, len(args))
		for i := range args {
			args[i] = randomBytes(rng, rng.IntN(6), "ab\r\n$*")
			stream = codec.AppendBulk(stream, args[i])
		}
		want = append(want, asArgs(fakeRESP(args), nil))

		words := randomBytes(rng, 1+rng.IntN(8), "ab \t")
		stream = append(append(stream, words...), "\r\n"...)
		if fields := strings.Fields(string(words)); len(fields) > 0 {
			want = append(want, quoteAll(fields))
		}
	}
	checkSplits(t, newRESP, asArgs, stream, want)
}

// fakeRESP returns a RESP whose Args are args, by decoding them.
func fakeRESP(args [][]byte) *codec.RESP {
	var in codec.Buffer
	b := codec.AppendArray(nil, len(args))
	for _, a := range args {
		b = codec.AppendBulk(b, a)
	}
	_, _ = in.Write(b)
	r := new(codec.RESP)
	if _, err := r.Decode(&in); err != nil {
		panic(err)
	}
	return r
}

// quoteAll renders words as asArgs renders arguments.
func quoteAll(words []string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteString(`"` + w + `" `)
	}
	return b.String()
}

func TestRESPCommands(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"inline", "PING\r\n", []string{`"PING" `}},
		{"inline LF", "PING\n", []string{`"PING" `}},
		{"inline spaces", "  SET  k\tv \r\n", []string{`"SET" "k" "v" `}},
		{"empty commands skipped", "\r\n\n*0\r\n*-1\r\n   \r\nPING\r\n", []string{`"PING" `}},
		{"bulk strings", "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", []string{`"GET" "" `}},
		{"binary bulk", "*1\r\n$4\r\n\r\n\x00$\r\n", []string{`"\r\n\x00$" `}},
		{"nulls", "*4\r\n$3\r\nGET\r\n$-1\r\n_\r\n*-1\r\n", []string{`"GET" nil nil nil `}},
		{"RESP3 simple values", "*8\r\n+OK\r\n-ERR x\r\n:-42\r\n:+7\r\n,3.14e-2\r\n,-inf\r\n#t\r\n(-123456789012345678901234567890\r\n",
			[]string{`"OK" "ERR x" "-42" "+7" "3.14e-2" "-inf" "t" "-123456789012345678901234567890" `}},
		{"RESP3 strings", "*2\r\n=8\r\ntxt:abcd\r\n!3\r\nerr\r\n", []string{`"txt:abcd" "err" `}},
		{"nested aggregates", "*4\r\n$4\r\nHSET\r\n*2\r\n:1\r\n*1\r\n:2\r\n%1\r\n+a\r\n+b\r\n~0\r\n",
			[]string{`"HSET" "*2\r\n:1\r\n*1\r\n:2\r\n" "%1\r\n+a\r\n+b\r\n" "~0\r\n" `}},
		{"push and set", "*2\r\n>1\r\n:1\r\n~2\r\n:1\r\n:2\r\n", []string{`">1\r\n:1\r\n" "~2\r\n:1\r\n:2\r\n" `}},
		{"pipeline", "*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n$4\r\nPING\r\n", []string{`"PING" `, `"PING" `, `"PING" `}},
		{"deepest allowed", strings.Repeat("*1\r\n", 8) + ":1\r\n", []string{`"` + strings.Repeat(`*1\r\n`, 7) + `:1\r\n" `}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkSplits(t, newRESP, asArgs, []byte(tc.input), tc.want)
		})
	}
}

func TestRESPIncomplete(t *testing.T) {
	for _, input := range []string{"*2\r\n$3\r\nGET\r\n", "*1\r\n$3\r\nGET\r", "*1\r\n*1\r\n", "PING", "*", "*1\r\n=4\r\ntxt:\r"} {
		got, left, err := feed(new(codec.RESP), asArgs, []byte(input))
		require.NoError(t, err, input)
		require.Empty(t, got, input)
		require.Equal(t, len(input), left, input)
	}
}

func TestRESPHostile(t *testing.T) {
	checkHostile(t, []hostile{
		{"huge bulk", new(codec.RESP), "*1\r\n$99999999999\r\n", codec.ErrFrameTooLarge},
		{"bulk over the limit", &codec.RESP{MaxFrameSize: 64}, "*1\r\n$55\r\n", codec.ErrFrameTooLarge},
		{"overflowing bulk", new(codec.RESP), "*1\r\n$9223372036854775807\r\n", codec.ErrFrameTooLarge},
		{"huge array", new(codec.RESP), "*9999999999\r\n", codec.ErrFrameTooLarge},
		{"array over MaxArrayLen", &codec.RESP{MaxArrayLen: 2}, "*3\r\n", codec.ErrFrameTooLarge},
		{"map over MaxArrayLen", &codec.RESP{MaxArrayLen: 3}, "*1\r\n%2\r\n", codec.ErrFrameTooLarge},
		{"array cannot fit", &codec.RESP{MaxFrameSize: 100}, "*40\r\n", codec.ErrFrameTooLarge},
		{"inline over MaxArrayLen", &codec.RESP{MaxArrayLen: 2}, "a b c\r\n", codec.ErrFrameTooLarge},
		{"too deep", new(codec.RESP), strings.Repeat("*1\r\n", 9) + ":1\r\n", codec.ErrTooDeep},
		{"too deep, empty", &codec.RESP{MaxDepth: 2}, "*1\r\n*1\r\n*0\r\n", codec.ErrTooDeep},
		{"negative multibulk", new(codec.RESP), "*-2\r\n", codec.ErrNegativeLength},
		{"negative bulk", new(codec.RESP), "*1\r\n$-2\r\n", codec.ErrNegativeLength},
		{"negative map", new(codec.RESP), "*1\r\n%-1\r\n", codec.ErrNegativeLength},
		{"negative blob error", new(codec.RESP), "*1\r\n!-1\r\n", codec.ErrNegativeLength},
		{"non-numeric count", new(codec.RESP), "*abc\r\n", codec.ErrInvalid},
		{"non-numeric length", new(codec.RESP), "*1\r\n$x\r\n", codec.ErrInvalid},
		{"empty count", new(codec.RESP), "*\r\n", codec.ErrInvalid},
		{"plus sign count", new(codec.RESP), "*+1\r\n", codec.ErrInvalid},
		{"overflowing count", new(codec.RESP), "*99999999999999999999\r\n", codec.ErrInvalid},
		{"streamed string", new(codec.RESP), "*1\r\n$?\r\n", codec.ErrInvalid},
		{"bulk without CRLF", new(codec.RESP), "*1\r\n$3\r\nabcXY", codec.ErrInvalid},
		{"header without CR", new(codec.RESP), "*1\r\n$3\nabc\r\n", codec.ErrInvalid},
		{"empty line", new(codec.RESP), "*1\r\n\r\n", codec.ErrInvalid},
		{"bad integer", new(codec.RESP), "*1\r\n:12a\r\n", codec.ErrInvalid},
		{"overflowing integer", new(codec.RESP), "*1\r\n:9223372036854775808\r\n", codec.ErrInvalid},
		{"bad double", new(codec.RESP), "*1\r\n,1.2.3\r\n", codec.ErrInvalid},
		{"bad boolean", new(codec.RESP), "*1\r\n#x\r\n", codec.ErrInvalid},
		{"bad null", new(codec.RESP), "*1\r\n_x\r\n", codec.ErrInvalid},
		{"bad big number", new(codec.RESP), "*1\r\n(12.5\r\n", codec.ErrInvalid},
		{"verbatim without format", new(codec.RESP), "*1\r\n=3\r\nabc\r\n", codec.ErrInvalid},
		{"attribute", new(codec.RESP), "*1\r\n|1\r\n+a\r\n+b\r\n", codec.ErrInvalid},
		{"unknown type", new(codec.RESP), "*1\r\n@1\r\n", codec.ErrInvalid},
	})
}

func TestRESPBounded(t *testing.T) {
	line := codec.DefaultMaxLineSize + 2
	checkBounded(t, new(codec.RESP), "", 'a', line)
	checkBounded(t, new(codec.RESP), "*", '1', line)
	checkBounded(t, new(codec.RESP), "*1\r\n$", '1', 4+line)
	checkBounded(t, new(codec.RESP), "*1\r\n+", 'a', 4+line)
	checkBounded(t, &codec.RESP{MaxFrameSize: 100}, "*1\r\n+", 'a', 100)
}

func TestRESPArgsAlias(t *testing.T) {
	var in codec.Buffer
	_, _ = in.Write([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"))
	var r codec.RESP
	frame, err := r.Decode(&in)
	require.NoError(t, err)
	args := r.Args()
	require.Len(t, args, 2)
	assert.Same(t, &frame[8], &args[0][0], "arguments alias the frame")
	_ = append(args[0], 'X')
	assert.Equal(t, "GET", string(args[0]), "an append does not overwrite what follows")
	assert.Equal(t, "\r\n", string(frame[11:13]))
}

func TestRESPReset(t *testing.T) {
	var in codec.Buffer
	var r codec.RESP
	_, _ = in.Write([]byte("*2\r\n$3\r\nGET\r\n"))
	_, err := r.Decode(&in)
	require.ErrorIs(t, err, codec.ErrIncomplete)

	r.Reset()
	_, _ = in.Discard(in.Len())
	_, _ = in.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	_, err = r.Decode(&in)
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("PING")}, r.Args())
}

// TestRESPLinear checks that a command arriving a byte at a time costs
// time in proportion to its size: parsing again from the start each time
// would take minutes here.
func TestRESPLinear(t *testing.T) {
	const n = 100_000
	input := append(codec.AppendArray(nil, n), strings.Repeat(":1\r\n", n)...)
	var in codec.Buffer
	var r codec.RESP
	start := time.Now()
	for i := range input {
		_, _ = in.Write(input[i : i+1])
		_, err := r.Decode(&in)
		if i < len(input)-1 {
			require.ErrorIs(t, err, codec.ErrIncomplete)
		} else {
			require.NoError(t, err)
		}
	}
	require.Len(t, r.Args(), n)
	require.Less(t, time.Since(start), 10*time.Second)
}

func FuzzRESP(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"))
	f.Add([]byte("PING\r\nSET a b\n"))
	f.Add([]byte("*3\r\n%1\r\n+a\r\n:1\r\n~1\r\n,1.5e3\r\n>0\r\n"))
	f.Add([]byte("*2\r\n_\r\n#t\r\n*1\r\n=5\r\ntxt:a\r\n"))
	f.Add([]byte("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"))
	f.Add([]byte("*-1\r\n*0\r\n*1\r\n$-1\r\n"))
	f.Add([]byte("*1\r\n$9999\r\n"))
	f.Add([]byte("*1\r\n(-12\r\n!2\r\nab\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		newDec := func() codec.Decoder { return &codec.RESP{MaxFrameSize: 1024, MaxArrayLen: 16, MaxDepth: 4} }
		checkFuzz(t, newDec, asArgs, data, 1024)

		// Arguments sent back as bulk strings decode to the same.
		dec := newDec()
		var in codec.Buffer
		_, _ = in.Write(data)
		_ = codec.Each(&in, dec, func(frame []byte) error {
			args := dec.(*codec.RESP).Args()
			b := codec.AppendArray(nil, len(args))
			for _, a := range args {
				if a == nil {
					b = codec.AppendNullBulk(b)
				} else {
					b = codec.AppendBulk(b, a)
				}
			}
			got, _, err := feed(new(codec.RESP), asArgs, b)
			require.NoError(t, err)
			require.Equal(t, []string{asArgs(dec, frame)}, got)
			return nil
		})
	})
}
