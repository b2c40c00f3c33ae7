package main

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseAll parses every command in in, given whole or a byte at a time as
// a connection's reads would offer it, and returns their arguments and the
// error that stopped it, if any.
func parseAll(in []byte, byteByByte bool) ([][]string, error) {
	r := newRequest(1 << 20)
	var cmds [][]string
	buf := in[:0]
	rest := in
	if !byteByByte {
		buf, rest = in, nil
	}
	for {
		n, ok, err := r.parse(buf)
		if err != nil {
			return cmds, err
		}
		if n == 0 {
			if len(rest) == 0 {
				return cmds, nil
			}
			buf = buf[:len(buf)+1]
			rest = rest[1:]
			continue
		}
		if ok {
			var args []string
			for _, a := range r.args {
				args = append(args, string(a))
			}
			cmds = append(cmds, args)
		}
		buf = buf[n:]
	}
}

func TestRequestSplit(t *testing.T) {
	cmds, err := parseAll([]byte("SET k \"a\\x41\\tb\" 'it\\'s' x\"y z\"\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), false)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"SET", "k", "aA\tb", "it's", "xy z"}, {"GET", "k"}}, cmds)
}

// TestRequestArgumentsBounded sends commands of many short arguments,
// whole and a byte at a time: the arguments of a command the parser
// accepts, as it holds them, take no more than -max-request less the
// command's own bytes, however short they are, and a command of as many
// as its bytes alone would allow is refused as too big.
func TestRequestArgumentsBounded(t *testing.T) {
	const maxSize = 64 << 10
	for _, arg := range []string{"$0\r\n\r\n", "$1\r\nx\r\n"} {
		fits := maxSize / (len(arg) + argSize)
		for _, tt := range []struct {
			count   int
			tooBig  bool
			aByte   bool
			comment string
		}{
			{fits - 1, false, false, "the most that fit"},
			{fits - 1, false, true, "the most that fit, a byte at a time"},
			{fits + 1, true, false, "one more than fit"},
			{fits + 1, true, true, "one more than fit, a byte at a time"},
			{maxSize / len(arg), true, false, "as many as the bytes allow"},
			{maxSize / len(arg), true, true, "as many as the bytes allow, a byte at a time"},
		} {
			cmd := append(fmt.Appendf(nil, "*%d\r\n", tt.count), bytes.Repeat([]byte(arg), tt.count)...)
			r := newRequest(maxSize)
			n, ok, err := feed(&r, cmd, tt.aByte)
			if tt.tooBig {
				assert.Equal(t, errTooBig, err, "%q: %s", arg, tt.comment)
				continue
			}
			require.NoError(t, err, "%q: %s", arg, tt.comment)
			require.True(t, ok)
			assert.Equal(t, len(cmd), n)
			assert.Len(t, r.args, tt.count)
			held := cap(r.args)*int(unsafe.Sizeof(r.args[0])) + cap(r.spans)*int(unsafe.Sizeof(span{}))
			assert.LessOrEqual(t, len(cmd)+held, maxSize, "%q: %s: the command's bytes and what its arguments hold", arg, tt.comment)
		}
	}
}

// feed offers r the command in, whole or one more byte at a time, until
// it reads it or fails.
func feed(r *request, in []byte, aByte bool) (int, bool, error) {
	if !aByte {
		return r.parse(in)
	}
	for i := 1; i <= len(in); i++ {
		if n, ok, err := r.parse(in[:i]); n > 0 || err != nil {
			return n, ok, err
		}
	}
	return 0, false, nil
}

// FuzzRequest checks that a command reads the same however its bytes are
// split between reads, and that nothing makes the parser fail otherwise
// than with a protocol error.
func FuzzRequest(f *testing.F) {
	for _, tt := range protocolCases {
		f.Add([]byte(tt.send))
	}
	f.Add([]byte(pipelined))
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, errWhole := parseAll(in, false)
		split, errSplit := parseAll(in, true)
		assert.Equal(t, whole, split)
		assert.Equal(t, errWhole, errSplit)
		if errWhole != nil {
			assert.IsType(t, protoError(""), errWhole)
		}
	})
}
