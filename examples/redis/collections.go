package main

// collection is the value of a key of any type but string.
type collection interface {
	// len returns how many elements the collection holds. The value of a
	// missing key is nil, and holds none.
	len() int
}

func (l *list) len() int {
	if l == nil {
		return 0
	}
	return l.n
}

func (z *zset) len() int {
	if z == nil {
		return 0
	}
	return z.order.n
}

// dropEmpty deletes e once its collection is empty: Redis never keeps an
// empty one, so a key that exists always holds something.
func (sh *shard) dropEmpty(e *entry) {
	if e.obj.(collection).len() == 0 {
		sh.remove(e)
	}
}

// openKey locks the shard of the command's key, args[1], and finds the
// key's value of type T for reading: a nil entry when the key is absent.
// For a key of another type it replies WRONGTYPE, unlocks and reports
// false; otherwise the caller unlocks the shard.
func openKey[T any](c *call) (sh *shard, e *entry, v T, ok bool) {
	sh, _ = c.lock(c.args[1])
	e = sh.read(c.args[1], c.now)
	if e == nil {
		return sh, nil, v, true
	}
	if v, ok = e.obj.(T); !ok {
		c.unlock(sh)
		c.error(errWrongType)
		return nil, nil, v, false
	}
	return sh, e, v, true
}

// readKey runs read with the value of type T at the command's key, the
// zero T when the key is absent, with its shard locked: a command that
// only reads the value. For a key of another type it replies WRONGTYPE.
func readKey[T any](c *call, read func(v T)) {
	sh, _, v, ok := openKey[T](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	read(v)
}

// openPresent is openKey for a command with one reply to an absent key,
// absent: it replies that then, unlocks and reports false, as it does for
// a key of another type.
func openPresent[T any](c *call, absent func(*call)) (sh *shard, e *entry, v T, ok bool) {
	sh, e, v, ok = openKey[T](c)
	if ok && e == nil {
		c.unlock(sh)
		absent(c)
		return nil, nil, v, false
	}
	return sh, e, v, ok
}

// replyZero and replyEmpty are replies to an absent key, for openPresent.
func replyZero(c *call)  { c.integer(0) }
func replyEmpty(c *call) { c.array(0) }

// openOrAdd is openKey for writing: an absent key is created holding
// newValue().
func openOrAdd[T any](c *call, newValue func() T) (sh *shard, v T, ok bool) {
	sh, h := c.lock(c.args[1])
	e := sh.find(c.args[1], c.now)
	if e == nil {
		e = sh.add(c.args[1], h)
		e.obj = newValue()
	}
	if v, ok = e.obj.(T); !ok {
		c.unlock(sh)
		c.error(errWrongType)
		return nil, v, false
	}
	return sh, v, true
}

// openString is openKey for a string.
func openString(c *call) (sh *shard, e *entry, ok bool) {
	sh, _ = c.lock(c.args[1])
	e, err := sh.lookupString(c.args[1], c.now)
	if err != nil {
		c.unlock(sh)
		c.error(err)
		return nil, nil, false
	}
	return sh, e, true
}

// replyLen replies the length of the collection of type T at the
// command's key: LLEN, SCARD, HLEN and ZCARD.
func replyLen[T collection](c *call) {
	sh, _, v, ok := openKey[T](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	c.integer(int64(v.len()))
}

// removeMembers removes each of args[2:] from the collection of type T at
// the command's key with remove, and replies how many it held: SREM, HDEL
// and ZREM.
func removeMembers[T collection](c *call, remove func(v T, member []byte) bool) {
	sh, e, v, ok := openPresent[T](c, replyZero)
	if !ok {
		return
	}
	defer c.unlock(sh)
	n := 0
	for _, m := range c.args[2:] {
		if remove(v, m) {
			n++
		}
	}
	c.integer(int64(n))
	if n > 0 {
		sh.touch(e.key)
	}
	sh.dropEmpty(e)
}

// openRange parses the range of indexes in args[2] and args[3], opens the
// command's key, of type T, and returns the part of the range its value
// covers. When that is nothing it replies an empty array, and otherwise
// the caller replies the elements from lo to hi and unlocks the shard.
func openRange[T collection](c *call) (sh *shard, v T, lo, hi int, ok bool) {
	start, stop, err := parseRange(c.args[2], c.args[3])
	if err != nil {
		c.error(err)
		return nil, v, 0, 0, false
	}
	sh, _, v, ok = openKey[T](c)
	if !ok {
		return nil, v, 0, 0, false
	}
	first, last, ok := clampRange(start, stop, int64(v.len()))
	if !ok {
		c.unlock(sh)
		c.array(0)
		return nil, v, 0, 0, false
	}
	return sh, v, int(first), int(last), true
}

// countArg parses the count that LPOP, SPOP and ZPOPMIN take after the
// key: -1 when there is none.
func (c *call) countArg() (int, error) {
	switch len(c.args) {
	case 2:
		return -1, nil
	case 3:
		return parseCount(c.args[2])
	}
	return 0, errSyntax
}
