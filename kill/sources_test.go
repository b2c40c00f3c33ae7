package kill

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSourceKey(t *testing.T) {
	key := func(s string) uint64 { return SourceKey(netip.MustParseAddr(s)) }
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"one IPv4 address", "192.0.2.1", "192.0.2.1", true},
		{"IPv4 neighbours", "192.0.2.1", "192.0.2.2", false},
		{"IPv4-mapped IPv6", "192.0.2.1", "::ffff:192.0.2.1", true},
		{"one IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true},
		{"next IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"IPv6 zone", "fe80::1%eth0", "fe80::2", true},
		{"IPv4 against an IPv6 /64 of the same low bits", "192.0.2.1", "0:0:c000:201::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.same, key(tt.a) == key(tt.b), "%#x, %#x", key(tt.a), key(tt.b))
		})
	}
	assert.Zero(t, SourceKey(netip.Addr{}))
}

func TestSourcesLimit(t *testing.T) {
	var s Sources
	const a, b = 1, 2
	assert.False(t, s.Acquire(a, 0), "a limit of 0 admits nothing")
	for range 3 {
		require.True(t, s.Acquire(a, 3))
	}
	assert.False(t, s.Acquire(a, 3))
	assert.True(t, s.Acquire(b, 3), "another source has its own count")
	assert.Equal(t, 3, s.Count(a))

	s.Release(a)
	assert.Equal(t, 2, s.Count(a))
	assert.True(t, s.Acquire(a, 3))
	for range 3 {
		s.Release(a)
	}
	s.Release(b)
	assert.Zero(t, s.Count(a))
	assert.Zero(t, entries(&s), "entries at zero are kept")
}

// entries returns the number of sources s holds an entry for.
func entries(s *Sources) int {
	var n int
	for i := range s.shards {
		n += len(s.shards[i].counts)
	}
	return n
}

// TestSourcesBurst has twice the limit of connections from each of several
// sources arrive at once, and checks that exactly the limit get in.
func TestSourcesBurst(t *testing.T) {
	const (
		sources = 16
		limit   = 50
	)
	var s Sources
	var admitted [sources]atomic.Int64
	var wg sync.WaitGroup
	for key := range uint64(sources) {
		for range 2 * limit {
			wg.Go(func() {
				if s.Acquire(key, limit) {
					admitted[key].Add(1)
				}
			})
		}
	}
	wg.Wait()
	for key := range uint64(sources) {
		assert.Equal(t, int64(limit), admitted[key].Load(), "source %d", key)
		assert.Equal(t, limit, s.Count(key), "source %d", key)
	}

	for key := range uint64(sources) {
		for range limit {
			wg.Go(func() { s.Release(key) })
		}
	}
	wg.Wait()
	assert.Zero(t, entries(&s))
}

func TestSourcesNoAllocations(t *testing.T) {
	var s Sources
	s.Acquire(7, 10) // make the shard's map
	s.Release(7)
	allocs := testing.AllocsPerRun(1000, func() {
		s.Acquire(7, 10)
		s.Release(7)
	})
	assert.Zero(t, allocs)
}

func BenchmarkSources(b *testing.B) {
	var s Sources
	key := SourceKey(netip.MustParseAddr("192.0.2.1"))
	b.ReportAllocs()
	for b.Loop() {
		s.Acquire(key, 100)
		s.Release(key)
	}
}
