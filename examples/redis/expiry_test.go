package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExpiry sets keys of every type to expire soon and waits for them to
// go, as clients see it.
func TestExpiry(t *testing.T) {
	ts := startServer(t, config{})
	ts.cli(t, dedent(`
		SET s v PX 1000
		RPUSH l a
		PEXPIRE l 1000
		SADD st a
		PEXPIRE st 1000
		HSET h f v
		PEXPIRE h 1000
		ZADD z 1 a
		PEXPIRE z 1000
		SET keep v
	`))
	pttl, err := strconv.Atoi(strings.TrimPrefix(ts.do(t, "PTTL", "s"), "(integer) "))
	require.NoError(t, err)
	assert.True(t, 0 < pttl && pttl <= 1000, "PTTL %d", pttl)
	require.Eventually(t, func() bool {
		return ts.cli(t, "EXISTS s l st h z keep\nGET s\nLLEN l\n") == "(integer) 1\n(nil)\n(integer) 0\n"
	}, 5*time.Second, 10*time.Millisecond)
}

// TestActiveExpiry checks that keys nobody touches expire too: DBSIZE
// counts keys without looking them up, so only the sweep can empty it.
func TestActiveExpiry(t *testing.T) {
	const n = 500
	ts := startServer(t, config{})
	var script strings.Builder
	for i := range n {
		fmt.Fprintf(&script, "SET key:%d v PX 50\n", i)
	}
	ts.cli(t, script.String())
	require.Eventually(t, func() bool {
		return ts.do(t, "DBSIZE") == "(integer) 0"
	}, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, strconv.Itoa(n), infoFields(ts.do(t, "INFO", "stats"))["expired_keys"])
}

// TestFindExpires checks expiry on access, without the sweep.
func TestFindExpires(t *testing.T) {
	var ks keyspace
	ks.init()
	sh, h := ks.shardOf([]byte("k"))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.setExpire(sh.add([]byte("k"), h), 1000)

	assert.NotNil(t, sh.find([]byte("k"), 999))
	assert.Nil(t, sh.find([]byte("k"), 1000))
	assert.Empty(t, sh.keys)
	assert.Empty(t, sh.volatile)
	assert.Equal(t, int64(1), sh.expired)
}

// TestSweepIsBounded checks that one sweep does a bounded amount of work
// however many keys have expired, and that sweeps carry on until all have
// gone.
func TestSweepIsBounded(t *testing.T) {
	const n = numShards * sweepSamples * sweepRounds * 2
	var ks keyspace
	ks.init()
	for i := range n {
		key := []byte("key:" + strconv.Itoa(i))
		sh, h := ks.shardOf(key)
		sh.mu.Lock()
		sh.setExpire(sh.add(key, h), 1)
		sh.mu.Unlock()
	}
	from := ks.sweep(0, 2)
	left := ks.stats(0).keys
	assert.Positive(t, left, "one sweep removed them all")
	assert.Less(t, left, int64(n), "one sweep removed none")
	for i := 0; ks.stats(0).keys > 0; i++ {
		require.Less(t, i, 1000, "sweeps do not finish")
		from = ks.sweep(from, 2)
	}
	assert.Equal(t, int64(n), ks.stats(0).expired)
}
