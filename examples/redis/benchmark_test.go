package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchmarkTests are redis-benchmark's tests the server supports: its
// default set, as of Redis 7.0, which has no XADD.
var benchmarkTests = []string{
	"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET",
	"SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100 (first 100 elements)",
	"LRANGE_300 (first 300 elements)", "LRANGE_500 (first 500 elements)", "LRANGE_600 (first 600 elements)",
	"MSET (10 keys)",
}

// TestRedisBenchmark runs redis-benchmark's tests, pipelined, and checks
// that every one completes without an error.
func TestRedisBenchmark(t *testing.T) {
	ts := startServer(t, config{})
	out := run(t, "redis-benchmark", ts.addr(), "", "-q", "-n", "20000", "-P", "16",
		"-t", "ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange,mset")
	// With -q, progress lines end in '\r' and results in '\n'.
	var results []string
	for _, line := range strings.Split(out, "\n") {
		if i := strings.LastIndexByte(line, '\r'); i >= 0 {
			line = line[i+1:]
		}
		if line = strings.TrimSpace(line); line != "" {
			results = append(results, line)
		}
	}
	result := regexp.MustCompile(`^(.+): [\d.]+ requests per second`)
	var done []string
	for _, line := range results {
		m := result.FindStringSubmatch(line)
		require.NotNil(t, m, "unexpected output %q", line)
		done = append(done, m[1])
	}
	assert.Equal(t, benchmarkTests, done)
	assert.NotRegexp(t, `(?i)err`, out)
}
