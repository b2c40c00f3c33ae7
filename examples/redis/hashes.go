package main

import (
	"errors"
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
	sh, _, m, ok := openKey[hash](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if v, ok := m[string(c.args[2])]; ok {
		c.bulkString(v)
	} else {
		c.null()
	}
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
	sh, _, m, ok := openKey[hash](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	c.mapOf(len(m))
	for f, v := range m {
		c.bulkString(f)
		c.bulkString(v)
	}
}

func hlen(c *call) { replyLen[hash](c) }

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
	if v, ok := m[string(c.args[2])]; ok {
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
	m[string(c.args[2])] = strconv.FormatInt(sum, 10)
	sh.touch(string(c.args[1]))
	c.integer(sum)
}
