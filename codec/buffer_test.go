package codec_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

func TestBuffer(t *testing.T) {
	var b codec.Buffer
	p, err := b.Peek(0)
	require.NoError(t, err)
	assert.Empty(t, p)

	_, _ = b.Write([]byte("hello"))
	p, err = b.Peek(3)
	require.NoError(t, err)
	assert.Equal(t, "hel", string(p))

	p, err = b.Peek(9)
	assert.ErrorIs(t, err, io.ErrShortBuffer)
	assert.Equal(t, "hello", string(p))

	n, err := b.Discard(2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, 3, b.Len())

	_, _ = b.Write([]byte(" world"))
	p, _ = b.Peek(0)
	assert.Equal(t, "llo world", string(p))

	n, err = b.Discard(20)
	require.NoError(t, err)
	assert.Equal(t, 9, n, "more than is buffered discards it all")
	assert.Zero(t, b.Len())

	_, _ = b.Write([]byte("abc"))
	n, _ = b.Discard(0)
	assert.Equal(t, 3, n, "zero discards it all")
	assert.Zero(t, b.Len())
}

// TestBufferReuse checks that a Buffer read as fast as it is written
// stops growing.
func TestBufferReuse(t *testing.T) {
	var b codec.Buffer
	chunk := make([]byte, 100)
	for range 10 {
		_, _ = b.Write(chunk)
		_, _ = b.Discard(60)
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = b.Write(chunk)
		_, _ = b.Discard(100)
	})
	assert.Zero(t, allocs)
}
