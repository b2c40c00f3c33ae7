package kill

import (
	"encoding/binary"
	"net/netip"
	"sync"

	"golang.org/x/sys/cpu"
)

// v4Prefix marks the key of an IPv4 source. As an IPv6 /64 it would lie in
// ff00::/8, multicast, which is never a source, so no IPv6 key equals it.
const v4Prefix = 0xffff_ffff << 32

// SourceKey returns the key under which Sources counts connections from
// addr. An IPv4 address (or an IPv4-mapped IPv6 one) is its own key; an IPv6
// address counts with the rest of its /64, which one subscriber usually
// holds whole. Keys are exact, not hashed, so two sources never share a
// count. The zero Addr has key 0.
func SourceKey(addr netip.Addr) uint64 {
	addr = addr.Unmap()
	if addr.Is4() {
		b := addr.As4()
		return v4Prefix | uint64(binary.BigEndian.Uint32(b[:]))
	}
	b := addr.As16()
	return binary.BigEndian.Uint64(b[:8])
}

// Sources is spread over 1<<shardBits locks, so that loops accepting at
// once seldom wait for each other.
const shardBits = 6

// Sources counts live connections per source key, for per-source
// connection limits. Its zero value is ready to use, and its methods are
// safe for concurrent use.
//
// Each shard is a map under its own mutex. A source's entry is deleted when
// its count returns to zero, so the maps hold at most one entry per live
// connection, and their memory stays at the most ever held at once. The
// maps' seeded hashing keeps sources an attacker chooses from colliding.
// After warm-up Acquire and Release allocate only when a map reorganises
// itself, a few times in millions of calls.
type Sources struct {
	shards [1 << shardBits]sourceShard
}

type sourceShard struct {
	mu     sync.Mutex
	counts map[uint64]int
	_      cpu.CacheLinePad
}

// Acquire counts one more connection from key and reports true if that
// keeps key within limit; otherwise it counts nothing and reports false.
func (s *Sources) Acquire(key uint64, limit int) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.counts[key]
	if n >= limit {
		return false
	}
	if sh.counts == nil {
		sh.counts = make(map[uint64]int)
	}
	sh.counts[key] = n + 1
	return true
}

// Release counts one connection from key fewer, undoing an Acquire that
// reported true.
func (s *Sources) Release(key uint64) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if n := sh.counts[key]; n > 1 {
		sh.counts[key] = n - 1
	} else {
		delete(sh.counts, key)
	}
}

// Count returns the number of connections counted from key.
func (s *Sources) Count(key uint64) int {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.counts[key]
}

// shard returns the shard for key. Keys differ mostly in their low bits
// (IPv4) or middle bits (IPv6 /64s), so a multiplicative hash mixes them
// all into the top bits, which pick the shard.
func (s *Sources) shard(key uint64) *sourceShard {
	return &s.shards[key*0x9e3779b97f4a7c15>>(64-shardBits)]
}
