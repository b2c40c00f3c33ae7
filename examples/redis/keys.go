package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

var (
	errExpireFlags = errors.New("ERR NX and XX, GT or LT options at the same time are not compatible")
	errGTAndLT     = errors.New("ERR GT and LT options at the same time are not compatible")
	errCursor      = errors.New("ERR invalid cursor")

	errUnsupportedOption = errors.New("ERR Unsupported option")
)

// del is DEL key [key ...].
func del(c *call) {
	c.integer(c.eachKey(func(sh *shard, e *entry) { sh.remove(e) }))
}

// exists is EXISTS key [key ...]; a key named twice counts twice.
func exists(c *call) {
	c.integer(c.eachKey(func(*shard, *entry) {}))
}

// eachKey locks the shards of every key argument, calls fn with each key
// that exists, and returns how many did.
func (c *call) eachKey(fn func(sh *shard, e *entry)) int64 {
	db := &c.srv.db
	keys := c.args[1:]
	defer c.unlockKeys(c.lockKeys(keys, 1))
	n := int64(0)
	for _, k := range keys {
		sh, _ := db.shardOf(k)
		if e := sh.find(k, c.now); e != nil {
			fn(sh, e)
			n++
		}
	}
	return n
}

func typeOf(c *call) {
	sh, _ := c.lock(c.args[1])
	defer c.unlock(sh)
	if e := sh.find(c.args[1], c.now); e != nil {
		c.simple(e.typeName())
	} else {
		c.simple("none")
	}
}

// expireFlags are EXPIRE's conditions.
type expireFlags struct{ nx, xx, gt, lt bool }

func parseExpireFlags(args [][]byte) (expireFlags, error) {
	var f expireFlags
	for _, a := range args {
		switch {
		case eqFold(a, "nx"):
			f.nx = true
		case eqFold(a, "xx"):
			f.xx = true
		case eqFold(a, "gt"):
			f.gt = true
		case eqFold(a, "lt"):
			f.lt = true
		default:
			return f, fmt.Errorf("%w %s", errUnsupportedOption, a)
		}
	}
	switch {
	case f.nx && (f.xx || f.gt || f.lt):
		return f, errExpireFlags
	case f.gt && f.lt:
		return f, errGTAndLT
	}
	return f, nil
}

// allows reports whether the conditions let a key that expires at old (0
// for never) be set to expire at at.
func (f expireFlags) allows(old, at int64) bool {
	switch {
	case f.nx && old != 0, f.xx && old == 0:
		return false
	case f.gt:
		return old != 0 && at > old
	case f.lt:
		return old == 0 || at < old
	}
	return true
}

// expire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT key time
// [NX|XX|GT|LT]: a time to live in seconds or milliseconds, or a Unix time
// in either. A time in the past deletes the key.
func expire(c *call) {
	n, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	flags, err := parseExpireFlags(c.args[3:])
	if err != nil {
		c.error(err)
		return
	}
	base := c.now
	if c.cmd.name == "expireat" || c.cmd.name == "pexpireat" {
		base = 0
	}
	at, ok := expireAt(n, c.cmd.name == "expire" || c.cmd.name == "expireat", base)
	if !ok {
		c.error(c.invalidExpire())
		return
	}
	sh, _ := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	if e == nil || !flags.allows(e.expire, at) {
		c.integer(0)
		return
	}
	if at <= c.now {
		sh.remove(e)
	} else {
		sh.setExpire(e, at)
		sh.touch(e.key)
	}
	c.integer(1)
}

// expiretime is EXPIRETIME and PEXPIRETIME key: the Unix time, in seconds
// or milliseconds, at which the key expires; -1 for one that does not,
// -2 for a missing key.
func expiretime(c *call) { replyExpiry(c, 0, "expiretime") }

// expireAt returns the Unix millisecond n seconds, or milliseconds, after
// now, and whether it is representable.
func expireAt(n int64, seconds bool, now int64) (int64, bool) {
	if seconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		n *= 1000
	}
	return addInt(now, n)
}

// ttl is TTL and PTTL: -2 for a missing key, -1 for one that does not
// expire.
func ttl(c *call) { replyExpiry(c, c.now, "ttl") }

// replyExpiry answers for the key c names: -2 if it is missing, -1 if it
// does not expire, else the Unix millisecond it expires at less base, in
// seconds (rounded) where the command is the one named seconds.
func replyExpiry(c *call, base int64, seconds string) {
	sh, _ := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	switch {
	case e == nil:
		c.integer(-2)
	case e.expire == 0:
		c.integer(-1)
	case c.cmd.name == seconds:
		c.integer((e.expire - base + 500) / 1000)
	default:
		c.integer(e.expire - base)
	}
}

func persist(c *call) {
	sh, _ := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	if e == nil || e.expire == 0 {
		c.integer(0)
		return
	}
	sh.setExpire(e, 0)
	sh.touch(e.key)
	c.integer(1)
}

// rename is RENAME key newkey, and RENAMENX, which renames only to a key
// that does not exist. The value keeps its time to live.
func rename(c *call) {
	db := &c.srv.db
	from, to := c.args[1], c.args[2]
	nx := c.cmd.name == "renamenx"
	defer c.unlockKeys(c.lockKeys(c.args[1:3], 1))
	src, _ := db.shardOf(from)
	e := src.find(from, c.now)
	if e == nil {
		c.error(errNoSuchKey)
		return
	}
	dst, h := db.shardOf(to)
	old := dst.find(to, c.now)
	if nx && old != nil {
		c.integer(0)
		return
	}
	if string(from) != string(to) {
		if old != nil {
			dst.remove(old)
		}
		moved := dst.add(to, h)
		moved.str, moved.obj = e.str, e.obj
		dst.setExpire(moved, e.expire)
		src.remove(e)
		c.ready(dst, to)
	}
	if nx {
		c.integer(1)
	} else {
		c.ok()
	}
}

// copyCmd is COPY source destination [DB destination-db] [REPLACE]: 1 if
// it copied, 0 if the source is missing or the destination exists. There
// is one database, 0.
func copyCmd(c *call) {
	var replace bool
	for i := 3; i < len(c.args); i++ {
		switch a := c.args[i]; {
		case eqFold(a, "replace"):
			replace = true
		case eqFold(a, "db") && i+1 < len(c.args):
			i++
			n, err := parseInt(c.args[i])
			if err != nil {
				c.error(err)
				return
			}
			if n != 0 {
				c.error(errDBIndex)
				return
			}
		default:
			c.error(errSyntax)
			return
		}
	}
	from, to := c.args[1], c.args[2]
	if string(from) == string(to) {
		c.errorText("ERR source and destination objects are the same")
		return
	}
	db := &c.srv.db
	defer c.unlockKeys(c.lockKeys(c.args[1:3], 1))
	src, _ := db.shardOf(from)
	e := src.find(from, c.now)
	if e == nil {
		c.integer(0)
		return
	}
	dst, h := db.shardOf(to)
	if old := dst.find(to, c.now); old != nil {
		if !replace {
			c.integer(0)
			return
		}
		dst.remove(old)
	}
	cp := dst.add(to, h)
	cp.str, cp.obj = slices.Clone(e.str), copyValue(e.obj)
	dst.setExpire(cp, e.expire)
	c.ready(dst, to)
	c.integer(1)
}

// copyValue returns a copy of a collection, sharing nothing that changes.
func copyValue(v any) any {
	switch v := v.(type) {
	case *list:
		l := newList()
		for i := range v.n {
			l.pushBack(v.at(i))
		}
		return l
	case *set:
		return v.clone()
	case *hash:
		return v.clone()
	case *zset:
		return v.clone()
	}
	return nil
}

// touchCmd is TOUCH key [key ...]: how many exist. There is no idle time
// kept to update.
func touchCmd(c *call) {
	c.integer(c.eachKey(func(*shard, *entry) {}))
}

// randomkey is RANDOMKEY: a key picked at random, or a null when there
// are none. It looks at the shards from a random one on, so a call locks
// one shard at a time.
func randomkey(c *call) {
	from := rand.IntN(numShards)
	for n := range numShards {
		sh := c.lockShard((from + n) % numShards)
		// Ranging over a map starts at a random place; keys that have
		// expired are deleted on the way.
		for _, e := range sh.keys {
			if e.expire != 0 && e.expire <= c.now {
				sh.expired++
				sh.remove(e)
				continue
			}
			c.bulkString(e.key)
			c.unlock(sh)
			return
		}
		c.unlock(sh)
	}
	c.null()
}

// timeCmd is TIME: the Unix time in seconds and the microseconds past it.
func timeCmd(c *call) {
	now := time.Now()
	c.array(2)
	c.bulk(strconv.AppendInt(nil, now.Unix(), 10))
	c.bulk(strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10))
}

// keys is KEYS pattern.
func keys(c *call) {
	var found []string
	c.each(func(e *entry) {
		if globMatch(c.args[1], []byte(e.key), false) {
			found = append(found, e.key)
		}
	})
	c.array(len(found))
	for _, k := range found {
		c.bulkString(k)
	}
}

// scan is SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. As in
// Redis, MATCH and TYPE filter the keys a step visits, so a step may
// return none and still not be the last.
func scan(c *call) {
	o, err := parseScanOptions(c.args[1:], true)
	if err != nil {
		c.error(err)
		return
	}
	found, next := c.srv.db.scan(o.cursor, o.count, c.now, c.held)
	keep := found[:0]
	for _, k := range found {
		if o.match == nil || globMatch(o.match, []byte(k), false) {
			keep = append(keep, k)
		}
	}
	if o.typ != nil {
		keep = c.ofType(keep, o.typ)
	}
	c.array(2)
	c.bulk(strconv.AppendUint(nil, next, 10))
	c.array(len(keep))
	for _, k := range keep {
		c.bulkString(k)
	}
}

// ofType keeps the keys whose values are of type typ.
func (c *call) ofType(keys []string, typ []byte) []string {
	keep := keys[:0]
	for _, k := range keys {
		sh, _ := c.lock([]byte(k))
		if e := sh.find([]byte(k), c.now); e != nil && eqFold(typ, e.typeName()) {
			keep = append(keep, k)
		}
		c.unlock(sh)
	}
	return keep
}
