package main

import (
	"cmp"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Keys are spread over 1<<shardBits shards by the top bits of their hash.
// 64 keeps two loops on different keys almost always on different locks,
// and lets a set of shards be a uint64 bit mask.
const (
	shardBits = 6
	numShards = 1 << shardBits
)

// Active expiry, as Redis does it: each shard samples this many keys that
// have a time to live, deletes the expired ones, and samples again while
// more than a quarter were, up to sweepRounds times. A sweep stops early
// once it has run for sweepBudget, and the next one carries on from there.
const (
	sweepSamples = 20
	sweepRounds  = 16
	sweepBudget  = time.Millisecond
)

// keyspace is the database every client shares. Commands lock the shard
// of the key they work on, or the shards of all their keys, in order.
//
// With one event loop, the loop's goroutine is the only one that touches
// the keyspace (commands, OnClose, OnTick's sweep and the blocked clients'
// timeouts, which are posted to the loop), as Redis's one thread is, and
// the shards are not locked: uncontended, a lock and an unlock still cost
// two atomic instructions a command, several percent of a pipelined GET.
type keyspace struct {
	seed   maphash.Seed
	shards [numShards]shard
}

// shard is a part of the keyspace behind its own lock. Besides its keys
// it holds who waits on them: the clients watching a key (WATCH), and
// those blocked on one (BLPOP and the like), so that a write, from any
// loop, finds them under the lock it holds.
type shard struct {
	mu       sync.Mutex
	solo     bool // one loop serves: mu is not taken (keyspace)
	idx      int
	keys     map[string]*entry
	volatile []*entry // the entries with a time to live, for sampling
	hits     int64
	misses   int64
	expired  int64
	watchers map[string][]*client
	waiters  map[string][]*waiter
	_        [64]byte // keeps neighbouring shards' locks off one cache line
}

// entry is a key and its value: a string's bytes in str, any other type
// in obj (*list, set, hash or *zset).
type entry struct {
	key    string
	hash   uint64
	expire int64 // Unix milliseconds; 0 when the key does not expire
	vol    int   // the entry's index in volatile, while expire != 0
	str    []byte
	obj    any
}

func (ks *keyspace) init() {
	ks.seed = maphash.MakeSeed()
	for i := range ks.shards {
		ks.shards[i].idx = i
		ks.shards[i].keys = make(map[string]*entry)
	}
}

// serveAlone says that one event loop serves, before it serves: the
// shards are not locked from then on (keyspace).
func (ks *keyspace) serveAlone() {
	for i := range ks.shards {
		ks.shards[i].solo = true
	}
}

// lock, unlock and tryLock lock and unlock the shard, unless one loop
// serves.
func (sh *shard) lock() {
	if !sh.solo {
		sh.mu.Lock()
	}
}

func (sh *shard) unlock() {
	if !sh.solo {
		sh.mu.Unlock()
	}
}

func (sh *shard) tryLock() bool { return sh.solo || sh.mu.TryLock() }

// locate returns the index of key's shard and key's hash.
func (ks *keyspace) locate(key []byte) (int, uint64) {
	h := maphash.Bytes(ks.seed, key)
	return int(h >> (64 - shardBits)), h
}

// mask returns the set of shards holding every stride-th of keys.
func (ks *keyspace) mask(keys [][]byte, stride int) uint64 {
	var m uint64
	for i := 0; i < len(keys); i += stride {
		s, _ := ks.locate(keys[i])
		m |= 1 << s
	}
	return m
}

// lockMask locks the shards in m but those in held, which the caller has
// locked already, in ascending order: the order that keeps commands
// locking several from deadlocking. A transaction holds the shards of all
// its commands' keys while they run, one after another (EXEC), and each
// command locks only what it does not hold.
func (ks *keyspace) lockMask(m, held uint64) {
	m &^= held
	for m != 0 {
		i := bits.TrailingZeros64(m)
		ks.shards[i].lock()
		m &^= 1 << i
	}
}

func (ks *keyspace) unlockMask(m, held uint64) {
	m &^= held
	for m != 0 {
		i := bits.TrailingZeros64(m)
		ks.shards[i].unlock()
		m &^= 1 << i
	}
}

// shardOf returns key's shard, and key's hash, for a command that has
// already locked it with lockMask.
func (ks *keyspace) shardOf(key []byte) (*shard, uint64) {
	i, h := ks.locate(key)
	return &ks.shards[i], h
}

// lock locks key's shard, unless the call's transaction holds it, and
// returns it with key's hash.
func (c *call) lock(key []byte) (*shard, uint64) {
	i, h := c.srv.db.locate(key)
	sh := &c.srv.db.shards[i]
	if c.held&(1<<i) == 0 {
		sh.lock()
	}
	return sh, h
}

// unlock unlocks what lock locked.
func (c *call) unlock(sh *shard) {
	if c.held&(1<<sh.idx) == 0 {
		sh.unlock()
	}
}

// lockKeys locks the shards of every stride-th of keys and returns them,
// for unlockKeys.
func (c *call) lockKeys(keys [][]byte, stride int) uint64 {
	m := c.srv.db.mask(keys, stride)
	c.srv.db.lockMask(m, c.held)
	return m
}

func (c *call) unlockKeys(m uint64) { c.srv.db.unlockMask(m, c.held) }

// lockShard locks shard i, for a command that goes through the keyspace
// shard by shard.
func (c *call) lockShard(i int) *shard {
	c.srv.db.lockMask(1<<i, c.held)
	return &c.srv.db.shards[i]
}

// find returns key's entry, or nil when key is absent or has expired, in
// which case it deletes key: expiry on access.
func (sh *shard) find(key []byte, now int64) *entry {
	e := sh.keys[string(key)]
	if e != nil && e.expire != 0 && e.expire <= now {
		sh.expired++
		sh.remove(e)
		return nil
	}
	return e
}

// read is find for commands that read the value, counted in INFO's
// keyspace_hits and keyspace_misses.
func (sh *shard) read(key []byte, now int64) *entry {
	e := sh.find(key, now)
	if e == nil {
		sh.misses++
	} else {
		sh.hits++
	}
	return e
}

// lookupString returns key's entry for reading: nil when key is absent,
// errWrongType when it holds something other than a string.
func (sh *shard) lookupString(key []byte, now int64) (*entry, error) {
	e := sh.read(key, now)
	if e != nil && e.obj != nil {
		return nil, errWrongType
	}
	return e, nil
}

// add creates key, which must be absent, without a value.
func (sh *shard) add(key []byte, hash uint64) *entry {
	e := &entry{key: string(key), hash: hash}
	sh.keys[e.key] = e
	sh.touch(e.key)
	return e
}

// remove deletes e, which watchers of its key see.
func (sh *shard) remove(e *entry) {
	sh.setExpire(e, 0)
	delete(sh.keys, e.key)
	sh.touch(e.key)
}

// touch tells the clients watching key that it changed, so that their
// transactions fail (WATCH). Every write calls it, under the shard's lock.
func (sh *shard) touch(key string) {
	if len(sh.watchers) == 0 {
		return
	}
	for _, cl := range sh.watchers[key] {
		cl.dirty.Store(true)
	}
}

// setExpire sets when e expires, 0 for never, and keeps volatile in step.
func (sh *shard) setExpire(e *entry, at int64) {
	switch {
	case e.expire == 0 && at != 0:
		e.vol = len(sh.volatile)
		sh.volatile = append(sh.volatile, e)
	case e.expire != 0 && at == 0:
		last := sh.volatile[len(sh.volatile)-1]
		sh.volatile[e.vol], last.vol = last, e.vol
		sh.volatile[len(sh.volatile)-1] = nil
		sh.volatile = sh.volatile[:len(sh.volatile)-1]
	}
	e.expire = at
}

// setString makes e a string holding a copy of v. It reuses e's buffer
// when that fits v without wasting much: every reader copies a value
// under the shard's lock, so nobody can see it change.
func (e *entry) setString(v []byte) {
	e.obj = nil
	if cap(e.str) >= len(v) && cap(e.str) <= 2*len(v)+64 {
		e.str = append(e.str[:0], v...)
		return
	}
	e.str = append(make([]byte, 0, len(v)), v...)
}

// typeName returns the name of e's type, as TYPE replies it.
func (e *entry) typeName() string {
	switch e.obj.(type) {
	case *list:
		return "list"
	case *set:
		return "set"
	case *hash:
		return "hash"
	case *zset:
		return "zset"
	}
	return "string"
}

// sweep runs active expiry, for the Unix millisecond now, over the shards
// from the one at from, and returns the shard the next sweep starts at.
func (ks *keyspace) sweep(from int, now int64) int {
	start := time.Now()
	for n := range numShards {
		i := (from + n) % numShards
		sh := &ks.shards[i]
		sh.lock()
		sh.sweep(now)
		sh.unlock()
		if time.Since(start) > sweepBudget {
			return (i + 1) % numShards
		}
	}
	return from
}

func (sh *shard) sweep(now int64) {
	for range sweepRounds {
		n := len(sh.volatile)
		if n == 0 {
			return
		}
		if n <= sweepSamples {
			// Few enough to check them all; from the end, since
			// removing one moves the last into its place.
			for i := n - 1; i >= 0; i-- {
				sh.expireIfDue(sh.volatile[i], now)
			}
			return
		}
		expired := 0
		for range sweepSamples {
			if sh.expireIfDue(sh.volatile[rand.IntN(len(sh.volatile))], now) {
				expired++
			}
		}
		if expired*4 <= sweepSamples {
			return
		}
	}
}

func (sh *shard) expireIfDue(e *entry, now int64) bool {
	if e.expire > now {
		return false
	}
	sh.expired++
	sh.remove(e)
	return true
}

// each calls fn with every key that has not expired, shard by shard, each
// locked while fn runs on its keys.
func (c *call) each(fn func(e *entry)) {
	for i := range numShards {
		sh := c.lockShard(i)
		for _, e := range sh.keys {
			if e.expire == 0 || e.expire > c.now {
				fn(e)
			}
		}
		c.unlock(sh)
	}
}

// scan returns the keys that have not expired whose hashes are at least
// cursor, in hash order: count of them, or a few more when hashes collide,
// or fewer at the end. It also returns the cursor to continue from, 0 when
// there is nothing more. Keys present for a whole scan are returned once,
// whatever else changes, as SCAN promises.
func (ks *keyspace) scan(cursor uint64, count int, now int64, held uint64) ([]string, uint64) {
	var found []*entry
	var keys []string
	for i := int(cursor >> (64 - shardBits)); i < numShards; i++ {
		sh := &ks.shards[i]
		found = found[:0]
		ks.lockMask(1<<i, held)
		for _, e := range sh.keys {
			if e.hash >= cursor && (e.expire == 0 || e.expire > now) {
				found = append(found, e)
			}
		}
		ks.unlockMask(1<<i, held)
		slices.SortFunc(found, func(a, b *entry) int { return cmp.Compare(a.hash, b.hash) })
		want := count - len(keys)
		if len(found) > want {
			// Take the first want, and any that share the last one's
			// hash: the cursor cannot point between them.
			last := found[want-1].hash
			for want < len(found) && found[want].hash == last {
				want++
			}
			for _, e := range found[:want] {
				keys = append(keys, e.key)
			}
			if want < len(found) {
				return keys, last + 1
			}
		} else {
			for _, e := range found {
				keys = append(keys, e.key)
			}
		}
		if i+1 == numShards {
			break
		}
		cursor = uint64(i+1) << (64 - shardBits)
		if len(keys) >= count {
			return keys, cursor
		}
	}
	return keys, 0
}

// flush deletes every key, which those watching them see.
func (c *call) flush() {
	for i := range numShards {
		sh := c.lockShard(i)
		for key := range sh.watchers {
			if sh.keys[key] != nil {
				sh.touch(key)
			}
		}
		sh.keys = make(map[string]*entry)
		sh.volatile = nil
		c.unlock(sh)
	}
}

// keyspaceStats is what INFO reports of the keyspace.
type keyspaceStats struct {
	keys, expires, hits, misses, expired int64
}

func (ks *keyspace) stats(held uint64) keyspaceStats {
	var st keyspaceStats
	for i := range ks.shards {
		sh := &ks.shards[i]
		ks.lockMask(1<<i, held)
		st.keys += int64(len(sh.keys))
		st.expires += int64(len(sh.volatile))
		st.hits += sh.hits
		st.misses += sh.misses
		st.expired += sh.expired
		ks.unlockMask(1<<i, held)
	}
	return st
}
