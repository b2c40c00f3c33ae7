package main

import (
	"errors"
	"math"
	"strconv"
)

var errHashNotInteger = errors.New("ERR hash value is not an integer")

// hset is HSET key field value [field value ...]: it replies how many
// fields were new.
func hset(c *call) {
	if len(c.args)%2 != 0 {
		c.errorText(c.cmd.arityErr)
		return
	}
	sh, m, ok := openOrAdd(c, newHash)
	if !ok {
		return
	}
	defer c.unlock(sh)
	lim, added := c.limits(), 0
	for i := 2; i < len(c.args); i += 2 {
		if m.set(c.args[i], c.args[i+1], lim) {
			added++
		}
	}
	sh.touch(string(c.args[1]))
	c.integer(int64(added))
}

func hget(c *call) {
	readKey(c, func(m *hash) {
		if v, ok := m.get(c.args[2]); ok {
			c.bulkString(v)
		} else {
			c.null()
		}
	})
}

// hdel is HDEL key field [field ...]: it replies how many were there.
func hdel(c *call) {
	removeMembers(c, (*hash).del)
}

// hgetall is HGETALL key: a map of fields to values.
func hgetall(c *call) {
	readKey(c, func(m *hash) {
		c.mapOf(m.len())
		m.each(func(f, v string) {
			c.bulkString(f)
			c.bulkString(v)
		})
	})
}

func hlen(c *call) { replyLen[*hash](c) }

// hincrby is HINCRBY key field increment.
func hincrby(c *call) {
	by, err := parseInt(c.args[3])
	if err != nil {
		c.error(err)
		return
	}
	sh, m, ok := openOrAdd(c, newHash)
	if !ok {
		return
	}
	defer c.unlock(sh)
	n := int64(0)
	if v, ok := m.get(c.args[2]); ok {
		if n, err = parseInt([]byte(v)); err != nil {
			c.error(errHashNotInteger)
			return
		}
	}
	sum, ok := addInt(n, by)
	if !ok {
		c.error(errOverflow)
		return
	}
	m.set(c.args[2], strconv.AppendInt(nil, sum, 10), c.limits())
	sh.touch(string(c.args[1]))
	c.integer(sum)
}

var (
	errHashNotFloat = errors.New("ERR hash value is not a float")
	// errIncrNaNOrInf refuses an infinite increment before the hash is
	// looked at, as Redis does.
	errIncrNaNOrInf = errors.New("ERR value is NaN or Infinity")
)

// hkeys is HKEYS key, and hvals HVALS.
func hkeys(c *call) { c.hashList(true) }
func hvals(c *call) { c.hashList(false) }

func (c *call) hashList(fields bool) {
	readKey(c, func(m *hash) {
		c.array(m.len())
		m.each(func(f, v string) {
			if fields {
				c.bulkString(f)
			} else {
				c.bulkString(v)
			}
		})
	})
}

// hmget is HMGET key field [field ...]: each value, or a null.
func hmget(c *call) {
	readKey(c, func(m *hash) {
		c.array(len(c.args) - 2)
		for _, f := range c.args[2:] {
			if v, ok := m.get(f); ok {
				c.bulkString(v)
			} else {
				c.null()
			}
		}
	})
}

// hmset is HMSET key field value [field value ...]: HSET replying OK.
func hmset(c *call) {
	if len(c.args)%2 != 0 {
		c.errorText(c.cmd.arityErr)
		return
	}
	sh, m, ok := openOrAdd(c, newHash)
	if !ok {
		return
	}
	defer c.unlock(sh)
	lim := c.limits()
	for i := 2; i < len(c.args); i += 2 {
		m.set(c.args[i], c.args[i+1], lim)
	}
	sh.touch(string(c.args[1]))
	c.ok()
}

// hsetnx is HSETNX key field value: 1 if it set the field, 0 if the field
// was there.
func hsetnx(c *call) {
	sh, m, ok := openOrAdd(c, newHash)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if m.has(c.args[2]) {
		c.integer(0)
		return
	}
	m.set(c.args[2], c.args[3], c.limits())
	sh.touch(string(c.args[1]))
	c.integer(1)
}

func hexists(c *call) {
	readKey(c, func(m *hash) { c.boolean(m.has(c.args[2])) })
}

// hstrlen is HSTRLEN key field: the length of the value, 0 if none.
func hstrlen(c *call) {
	readKey(c, func(m *hash) {
		v, _ := m.get(c.args[2])
		c.integer(int64(len(v)))
	})
}

// hincrbyfloat is HINCRBYFLOAT key field increment, added as INCRBYFLOAT
// adds.
func hincrbyfloat(c *call) {
	by, err := parseLongDouble(c.args[3])
	if err != nil {
		c.error(err)
		return
	}
	if by.IsInf() {
		c.error(errIncrNaNOrInf)
		return
	}
	sh, m, ok := openOrAdd(c, newHash)
	if !ok {
		return
	}
	defer c.unlock(sh)
	var old []byte
	if v, ok := m.get(c.args[2]); ok {
		old = []byte(v)
	}
	sum, err := addLongDouble(old, by)
	switch {
	case errors.Is(err, errNotFloat):
		c.error(errHashNotFloat)
	case err != nil:
		c.error(err)
	default:
		m.set(c.args[2], sum, c.limits())
		sh.touch(string(c.args[1]))
		c.bulk(sum)
	}
	if m.len() == 0 {
		sh.dropEmpty(sh.find(c.args[1], c.now))
	}
}

// hrandfield is HRANDFIELD key [count [WITHVALUES]].
func hrandfield(c *call) {
	count, hasCount, withValues, err := c.randomArgs("withvalues")
	if err != nil {
		c.error(err)
		return
	}
	readKey(c, func(m *hash) {
		fields, values := m.all()
		var writeVal func(int)
		if withValues {
			writeVal = func(i int) { c.bulkString(values[i]) }
		}
		c.randomReply(fields, writeVal, hasCount, count)
	})
}

// randomArgs parses the [count [WITH...]] of HRANDFIELD and ZRANDMEMBER,
// with refuses a count so negative its reply could not be counted.
func (c *call) randomArgs(with string) (count int64, hasCount, withVals bool, err error) {
	switch len(c.args) {
	case 2:
		return 0, false, false, nil
	case 4:
		if !eqFold(c.args[3], with) {
			return 0, false, false, errSyntax
		}
		withVals = true
	case 3:
	default:
		return 0, false, false, errSyntax
	}
	count, err = parseInt(c.args[2])
	if err != nil {
		return 0, false, false, err
	}
	if withVals && count < -math.MaxInt64/2 {
		return 0, false, false, errors.New("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	}
	return count, true, withVals, nil
}

// hscan is HSCAN key cursor [MATCH pattern] [COUNT count].
func hscan(c *call) {
	o, err := parseScanOptions(c.args[2:], false)
	if err != nil {
		c.error(err)
		return
	}
	readKey(c, func(m *hash) {
		fields, values := m.all()
		c.scanReply(o, fields, func(i int) { c.bulkString(values[i]) }, m == nil || m.small())
	})
}
