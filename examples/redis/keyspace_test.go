package main

import (
	"strconv"
	"testing"
	"time"

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

// TestOneLoopLocksNoShard checks that a server with one loop leaves its
// shards unlocked and one with two locks them, and runs on one loop the
// work that reaches the keyspace other than from a command: a blocked
// client timing out, a push serving a blocked BLMOVE (which locks its
// destination's shard with tryLock), a write failing a WATCH, a watcher
// closing, and active expiry. Were any of it to touch a shard from
// another goroutine, the race detector, which CI runs, would report it.
func TestOneLoopLocksNoShard(t *testing.T) {
	two := startServer(t, config{loops: 2})
	assert.False(t, two.db.shards[0].solo, "two loops")
	ts := startServer(t, config{loops: 1})
	for i := range ts.db.shards {
		require.True(t, ts.db.shards[i].solo, "shard %d", i)
	}

	c, b := ts.dial(t), ts.dial(t)
	c.send(t, "BLPOP nothing 0.05\r\n")
	c.expect(t, "*-1\r\n")

	ts.blockedOn(t, b, "BLMOVE src dst LEFT RIGHT 0\r\n")
	c.send(t, "RPUSH src x\r\n")
	c.expect(t, ":1\r\n")
	b.expect(t, "$1\r\nx\r\n")

	b.send(t, "WATCH dst\r\n")
	b.expect(t, "+OK\r\n")
	c.send(t, "RPUSH dst y\r\n")
	c.expect(t, ":2\r\n")
	b.send(t, "MULTI\r\nLRANGE dst 0 -1\r\nEXEC\r\nWATCH dst\r\n")
	b.expect(t, "+OK\r\n+QUEUED\r\n*-1\r\n+OK\r\n")
	require.NoError(t, b.Close())

	c.send(t, "SET k v PX 20\r\nDEL src dst\r\n")
	c.expect(t, "+OK\r\n:1\r\n")
	require.Eventually(t, func() bool {
		c.send(t, "DBSIZE\r\n")
		return c.line(t) == ":0"
	}, 5*time.Second, 10*time.Millisecond, "active expiry")
}
