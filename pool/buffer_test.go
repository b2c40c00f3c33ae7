package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicenet/sluice/pool"
)

func TestBufferReused(t *testing.T) {
	b := pool.GetBuffer()
	assert.Zero(t, b.Len())
	_, _ = b.WriteString("frame")
	assert.Equal(t, "frame", string(b.B))
	pool.PutBuffer(b)

	assert.Zero(t, pool.GetBuffer().Len(), "a buffer comes back empty")
}

func TestBufferPool(t *testing.T) {
	var bp pool.BufferPool
	b := bp.Get()
	_, _ = b.Write([]byte("frame"))
	bp.Put(b)
	assert.Zero(t, bp.Get().Len())
}
