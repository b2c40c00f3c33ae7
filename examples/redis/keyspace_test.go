package main

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScan checks SCAN's promise: a key present for the whole scan is
// returned exactly once, while other keys come and go between steps.
func TestScan(t *testing.T) {
	var ks keyspace
	ks.init()
	set := func(key string) {
		sh, h := ks.shardOf([]byte(key))
		sh.mu.Lock()
		if sh.find([]byte(key), 0) == nil {
			sh.add([]byte(key), h)
		}
		sh.mu.Unlock()
	}
	del := func(key string) {
		sh, _ := ks.shardOf([]byte(key))
		sh.mu.Lock()
		if e := sh.find([]byte(key), 0); e != nil {
			sh.remove(e)
		}
		sh.mu.Unlock()
	}
	const n = 3000
	for i := range n {
		set("stay:" + strconv.Itoa(i))
		set("churn:" + strconv.Itoa(i))
	}
	seen := make(map[string]int)
	cursor, step := uint64(0), 0
	for {
		keys, next := ks.scan(cursor, 7, 0, 0)
		for _, k := range keys {
			seen[k]++
		}
		// Change the keyspace between steps.
		del("churn:" + strconv.Itoa(step))
		set("new:" + strconv.Itoa(step))
		step++
		if next == 0 {
			break
		}
		require.Greater(t, next, cursor, "the cursor moves forward")
		cursor = next
	}
	for i := range n {
		assert.Equal(t, 1, seen["stay:"+strconv.Itoa(i)], "stay:%d", i)
	}
	for k, times := range seen {
		assert.Equal(t, 1, times, k)
	}
}

func TestScanEmpty(t *testing.T) {
	var ks keyspace
	ks.init()
	keys, next := ks.scan(0, 10, 0, 0)
	assert.Empty(t, keys)
	assert.Zero(t, next)
}
