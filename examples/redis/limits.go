package main

import "sync/atomic"

// limits are the bounds past which Redis 7.0 holds a collection in its
// general encoding (a hash table, a skiplist) rather than its compact one
// (a listpack, an intset), and converts it, for good: CONFIG's
// hash-max-listpack-entries and -value, set-max-intset-entries and
// zset-max-listpack-entries and -value. This server holds a small hash in
// order as Redis does, and sets and sorted sets remember that they passed
// them, so that replies and OBJECT ENCODING follow Redis's.
type limits struct {
	hashEntries, hashValue int
	intsetEntries          int
	zsetEntries, zsetValue int
}

// Redis 7.0's defaults, as it has them without a configuration file (its
// redis.conf sets 128 hash entries).
const (
	defaultHashEntries   = 512
	defaultHashValue     = 64
	defaultIntsetEntries = 512
	defaultZsetEntries   = 128
	defaultZsetValue     = 64
)

// limitVars are the limits as CONFIG SET changes them, read as a command
// changes a collection.
type limitVars struct {
	hashEntries, hashValue atomic.Int64
	intsetEntries          atomic.Int64
	zsetEntries, zsetValue atomic.Int64
}

func (v *limitVars) init() {
	v.hashEntries.Store(defaultHashEntries)
	v.hashValue.Store(defaultHashValue)
	v.intsetEntries.Store(defaultIntsetEntries)
	v.zsetEntries.Store(defaultZsetEntries)
	v.zsetValue.Store(defaultZsetValue)
}

// limits returns the limits as they stand.
func (c *call) limits() limits {
	v := &c.srv.limits
	return limits{
		hashEntries:   int(v.hashEntries.Load()),
		hashValue:     int(v.hashValue.Load()),
		intsetEntries: int(v.intsetEntries.Load()),
		zsetEntries:   int(v.zsetEntries.Load()),
		zsetValue:     int(v.zsetValue.Load()),
	}
}
