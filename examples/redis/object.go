package main

import "errors"

// OBJECT's subcommands report how Redis would hold a value. ENCODING
// names the encoding Redis 7.0 gives it: a collection remembers that it
// once passed its limits, as Redis never converts one back, and a string
// is named by its value as it is now; REFCOUNT reports the shared
// integers Redis keeps for 0 to 9,999; and IDLETIME is 0, since access
// times are not kept.
const (
	maxEmbstrLen   = 44
	sharedIntegers = 10000
	sharedRefcount = 1<<31 - 1
)

var errNoLFU = errors.New("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")

// objectKey runs reply on the entry of OBJECT's key, args[2], or replies
// a null for a missing key.
func objectKey(c *call, reply func(e *entry)) {
	sh, _ := c.lock(c.args[2])
	defer c.unlock(sh)
	if e := sh.find(c.args[2], c.now); e != nil {
		reply(e)
	} else {
		c.null()
	}
}

// objectEncoding is OBJECT ENCODING key.
func objectEncoding(c *call) { objectKey(c, func(e *entry) { c.bulkString(e.encoding()) }) }

// objectRefcount is OBJECT REFCOUNT key.
func objectRefcount(c *call) {
	objectKey(c, func(e *entry) {
		if n, err := parseInt(e.str); e.obj == nil && err == nil && n >= 0 && n < sharedIntegers {
			c.integer(sharedRefcount)
		} else {
			c.integer(1)
		}
	})
}

// objectIdletime is OBJECT IDLETIME key.
func objectIdletime(c *call) { objectKey(c, func(*entry) { c.integer(0) }) }

// objectFreq is OBJECT FREQ key: refused, as by Redis under any policy
// but an LFU one.
func objectFreq(c *call) { objectKey(c, func(*entry) { c.error(errNoLFU) }) }

// encoding returns the name of the encoding Redis 7.0 would give e's
// value as it is now.
func (e *entry) encoding() string {
	switch v := e.obj.(type) {
	case *list:
		return "quicklist"
	case *set:
		return v.encoding()
	case *hash:
		return v.encoding()
	case *zset:
		return v.encoding()
	}
	switch _, err := parseInt(e.str); {
	case err == nil:
		return "int"
	case len(e.str) <= maxEmbstrLen:
		return "embstr"
	}
	return "raw"
}
