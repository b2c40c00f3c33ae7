package main

import (
	"errors"
	"math"
	"strconv"
)

var errHashNotInteger = errors.New("ERR hash value is not an integer")

// hash maps fields to values.
type hash map[string]string

func newHash() hash { return hash{} }

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
	had := len(m)
	for i := 2; i < len(c.args); i += 2 {
		m[string(c.args[i])] = string(c.args[i+1])
	}
	sh.touch(string(c.args[1]))
	c.integer(int64(len(m) - had))
}

func hget(c *call) {
	readKey(c, func(m hash) {
		if v, ok := m[string(c.args[2])]; ok {
			c.bulkString(v)
		} else {
			c.null()
		}
	})
}

// hdel is HDEL key field [field ...]: it replies how many were there.
func hdel(c *call) {
	removeMembers(c, func(m hash, f []byte) bool {
		_, ok := m[string(f)]
		delete(m, string(f))
		return ok
	})
}

// hgetall is HGETALL key: a map of fields to values.
func hgetall(c *call) {
	readKey(c, func(m hash) {
		c.mapOf(len(m))
		for f, v := range m {
			c.bulkString(f)
			c.bulkString(v)
		}
	})
}

func hlen(c *call) { replyLen[hash](c) }

// hincrby is HINCRBY key field increment.
func hincrby(c *call) {
	by, err := parseInt(c.args[3])
	if err != nil {
		c.error(err)
		return
	}
	var sum int64
	_, ok := incrField(c, func(old string, had bool) (string, error) {
		n := int64(0)
		if had {
			if n, err = parseInt([]byte(old)); err != nil {
				return "", errHashNotInteger
			}
		}
		var ok bool
		if sum, ok = addInt(n, by); !ok {
			return "", errOverflow
		}
		return strconv.FormatInt(sum, 10), nil
	})
	if ok {
		c.integer(sum)
	}
}

// incrField is HINCRBY and HINCRBYFLOAT once their increment is parsed:
// add makes the field's new value from its old one (had is false when the
// field is absent), and incrField sets the field to it and returns it, for
// the caller to reply with; or it replies add's error, or the key's, and
// returns false. A hash it added for the key goes again if it stays empty.
func incrField(c *call, add func(old string, had bool) (string, error)) (string, bool) {
	sh, m, ok := openOrAdd(c, newHash)
	if !ok {
		return "", false
	}
	defer c.unlock(sh)
	field := string(c.args[2])
	old, had := m[field]
	v, err := add(old, had)
	if err != nil {
		c.error(err)
		if len(m) == 0 {
			sh.dropEmpty(sh.find(c.args[1], c.now))
		}
		return "", false
	}
	m[field] = v
	sh.touch(string(c.args[1]))
	return v, true
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
	readKey(c, func(m hash) {
		c.array(len(m))
		for f, v := range m {
			if fields {
				c.bulkString(f)
			} else {
				c.bulkString(v)
			}
		}
	})
}

// hmget is HMGET key field [field ...]: each value, or a null.
func hmget(c *call) {
	readKey(c, func(m hash) {
		c.array(len(c.args) - 2)
		for _, f := range c.args[2:] {
			if v, ok := m[string(f)]; ok {
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
	for i := 2; i < len(c.args); i += 2 {
		m[string(c.args[i])] = string(c.args[i+1])
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
	f := string(c.args[2])
	if _, ok := m[f]; ok {
		c.integer(0)
		return
	}
	m[f] = string(c.args[3])
	sh.touch(string(c.args[1]))
	c.integer(1)
}

func hexists(c *call) {
	readKey(c, func(m hash) {
		_, in := m[string(c.args[2])]
		c.boolean(in)
	})
}

// hstrlen is HSTRLEN key field: the length of the value, 0 if none.
func hstrlen(c *call) {
	readKey(c, func(m hash) {
		c.integer(int64(len(m[string(c.args[2])])))
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
	sum, ok := incrField(c, func(v string, had bool) (string, error) {
		var old []byte
		if had {
			old = []byte(v)
		}
		sum, err := addLongDouble(old, by)
		if errors.Is(err, errNotFloat) {
			return "", errHashNotFloat
		}
		return string(sum), err
	})
	if ok {
		c.bulkString(sum)
	}
}

// hrandfield is HRANDFIELD key [count [WITHVALUES]].
func hrandfield(c *call) {
	count, hasCount, withValues, err := c.randomArgs("withvalues")
	if err != nil {
		c.error(err)
		return
	}
	readKey(c, func(m hash) {
		fields := names(m)
		var writeVal func(int)
		if withValues {
			writeVal = func(i int) { c.bulkString(m[fields[i]]) }
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
	readKey(c, func(m hash) { c.scanReply(o, names(m), func(f string) { c.bulkString(m[f]) }) })
}
