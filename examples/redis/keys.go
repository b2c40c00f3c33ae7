package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
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

// expire is EXPIRE and PEXPIRE key time [NX|XX|GT|LT]. A time in the past
// deletes the key.
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
	at, ok := expireAt(n, c.cmd.name == "expire", c.now)
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
func ttl(c *call) {
	sh, _ := c.lock(c.args[1])
	defer c.unlock(sh)
	e := sh.find(c.args[1], c.now)
	switch {
	case e == nil:
		c.integer(-2)
	case e.expire == 0:
		c.integer(-1)
	case c.cmd.name == "ttl":
		c.integer((e.expire - c.now + 500) / 1000)
	default:
		c.integer(e.expire - c.now)
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

// rename is RENAME key newkey. The value keeps its time to live.
func rename(c *call) {
	db := &c.srv.db
	from, to := c.args[1], c.args[2]
	defer c.unlockKeys(c.lockKeys(c.args[1:3], 1))
	src, _ := db.shardOf(from)
	e := src.find(from, c.now)
	if e == nil {
		c.error(errNoSuchKey)
		return
	}
	if string(from) != string(to) {
		dst, h := db.shardOf(to)
		if old := dst.find(to, c.now); old != nil {
			dst.remove(old)
		}
		moved := dst.add(to, h)
		moved.str, moved.obj = e.str, e.obj
		dst.setExpire(moved, e.expire)
		src.remove(e)
	}
	c.ok()
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
	cursor, err := strconv.ParseUint(string(c.args[1]), 10, 64)
	if err != nil {
		c.error(errCursor)
		return
	}
	var pattern, typ []byte
	count := 10
	for i := 2; i < len(c.args); i += 2 {
		if i+1 == len(c.args) {
			c.error(errSyntax)
			return
		}
		opt, v := c.args[i], c.args[i+1]
		switch {
		case eqFold(opt, "match"):
			pattern = v
		case eqFold(opt, "type"):
			typ = v
		case eqFold(opt, "count"):
			n, err := parseInt(v)
			if err != nil {
				c.error(err)
				return
			}
			if n < 1 {
				c.error(errSyntax)
				return
			}
			count = int(min(n, math.MaxInt32))
		default:
			c.error(errSyntax)
			return
		}
	}
	found, next := c.srv.db.scan(cursor, count, c.now, c.held)
	keep := found[:0]
	for _, k := range found {
		if pattern == nil || globMatch(pattern, []byte(k), false) {
			keep = append(keep, k)
		}
	}
	if typ != nil {
		keep = c.ofType(keep, typ)
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
