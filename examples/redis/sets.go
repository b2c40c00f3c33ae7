package main

// set is an unordered set of strings.
type set map[string]struct{}

func newSet() set { return set{} }

// sadd is SADD key member [member ...]: it replies how many were new.
func sadd(c *call) {
	sh, s, ok := openOrAdd(c, newSet)
	if !ok {
		return
	}
	defer c.unlock(sh)
	had := len(s)
	for _, m := range c.args[2:] {
		s[string(m)] = struct{}{}
	}
	if len(s) > had {
		sh.touch(string(c.args[1]))
	}
	c.integer(int64(len(s) - had))
}

// srem is SREM key member [member ...]: it replies how many were there.
func srem(c *call) {
	removeMembers(c, func(s set, m []byte) bool {
		_, ok := s[string(m)]
		delete(s, string(m))
		return ok
	})
}

// spop is SPOP key [count]: one random member, or a set of up to count,
// removed from the set.
func spop(c *call) {
	count, err := c.countArg()
	if err != nil {
		c.error(err)
		return
	}
	sh, e, s, ok := openKey[set](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	switch {
	case e == nil && count < 0:
		c.null()
		return
	case count < 0:
		count = 1
	default:
		count = min(count, len(s))
		c.setOf(count)
	}
	// Ranging over a map starts at a random place.
	for m := range s {
		if count == 0 {
			break
		}
		c.bulkString(m)
		delete(s, m)
		count--
	}
	if e != nil {
		sh.touch(e.key)
		sh.dropEmpty(e)
	}
}

func smembers(c *call) {
	sh, _, s, ok := openKey[set](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	c.setOf(len(s))
	for m := range s {
		c.bulkString(m)
	}
}

func sismember(c *call) {
	sh, _, s, ok := openKey[set](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	_, member := s[string(c.args[2])]
	c.boolean(member)
}

func scard(c *call) { replyLen[set](c) }
