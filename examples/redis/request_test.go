package main

import (
	"testing"

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
