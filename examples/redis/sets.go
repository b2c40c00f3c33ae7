package main

import (
	"cmp"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
)

// set is an unordered set of strings. It records whether Redis 7.0
// would hold it as a hash table: Redis holds a set of integers, up to
// set-max-intset-entries of them, as a sorted array (an intset), replying
// them in order, and converts it to a hash table once it is given another
// member or grows past that, and never back.
type set struct {
	m     map[string]struct{}
	table bool
}

func newSet() *set { return &set{m: map[string]struct{}{}} }

func (s *set) len() int {
	if s == nil {
		return 0
	}
	return len(s.m)
}

// has reports whether m is a member of s.
func (s *set) has(m []byte) bool {
	if s == nil {
		return false
	}
	_, ok := s.m[string(m)]
	return ok
}

// add adds m to s and reports whether it is new.
func (s *set) add(m string, lim limits) bool {
	if _, ok := s.m[m]; ok {
		return false
	}
	s.m[m] = struct{}{}
	if !s.table {
		_, err := parseInt([]byte(m))
		s.table = err != nil || len(s.m) > lim.intsetEntries
	}
	return true
}

// del removes m from s and reports whether it was there.
func (s *set) del(m []byte) bool {
	_, ok := s.m[string(m)]
	delete(s.m, string(m))
	return ok
}

// clone returns a copy of s, held the same way, as Redis's COPY keeps
// the encoding.
func (s *set) clone() *set { return &set{m: maps.Clone(s.m), table: s.table} }

// encoding names Redis's encoding of s.
func (s *set) encoding() string {
	if s.table {
		return "hashtable"
	}
	return "intset"
}

// sadd is SADD key member [member ...]: it replies how many were new.
func sadd(c *call) {
	sh, s, ok := openOrAdd(c, newSet)
	if !ok {
		return
	}
	defer c.unlock(sh)
	lim, added := c.limits(), 0
	for _, m := range c.args[2:] {
		if s.add(string(m), lim) {
			added++
		}
	}
	if added > 0 {
		sh.touch(string(c.args[1]))
	}
	c.integer(int64(added))
}

// srem is SREM key member [member ...]: it replies how many were there.
func srem(c *call) {
	removeMembers(c, (*set).del)
}

// spop is SPOP key [count]: one random member, or a set of up to count,
// removed from the set.
func spop(c *call) {
	count, err := c.countArg()
	if err != nil {
		c.error(err)
		return
	}
	sh, e, s, ok := openKey[*set](c)
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
	case count >= s.len():
		// The whole set, in the order SMEMBERS replies it, as Redis's.
		c.members(s)
		if e != nil {
			clear(s.m)
			sh.touch(e.key)
			sh.dropEmpty(e)
		}
		return
	default:
		c.setOf(count)
	}
	// Ranging over a map starts at a random place.
	for m := range s.m {
		if count == 0 {
			break
		}
		c.bulkString(m)
		delete(s.m, m)
		count--
	}
	sh.touch(e.key)
	sh.dropEmpty(e)
}

func smembers(c *call) {
	readKey(c, func(s *set) { c.members(s) })
}

// members replies the members of s as a set: in order where Redis holds
// them in an intset, and in its map's order otherwise.
func (c *call) members(s *set) {
	c.setOf(s.len())
	for _, m := range orderedMembers(s) {
		c.bulkString(m)
	}
}

// orderedMembers returns the members of s, in order where Redis holds
// them in an intset.
func orderedMembers(s *set) []string {
	ms := s.names()
	if s != nil && !s.table {
		sortIntegers(ms)
	}
	return ms
}

// names returns the members of s in the map's order.
func (s *set) names() []string {
	if s == nil {
		return nil
	}
	return slices.AppendSeq(make([]string, 0, len(s.m)), maps.Keys(s.m))
}

// sortIntegers sorts the members of an intset by value.
func sortIntegers(ms []string) {
	slices.SortFunc(ms, func(a, b string) int {
		x, _ := parseInt([]byte(a))
		y, _ := parseInt([]byte(b))
		return cmp.Compare(x, y)
	})
}

func sismember(c *call) {
	readKey(c, func(s *set) { c.boolean(s.has(c.args[2])) })
}

func scard(c *call) { replyLen[*set](c) }

var (
	errNumkeysArgs = errors.New("ERR Number of keys can't be greater than number of args")
	errLimitNeg    = errors.New("ERR LIMIT can't be negative")
)

// setsOf returns the sets at keys, whose shards are locked: nil for a
// missing key. It replies WRONGTYPE and reports false if a key holds
// another type.
func (c *call) setsOf(keys [][]byte) ([]*set, bool) {
	sets := make([]*set, len(keys))
	for i, k := range keys {
		sh, _ := c.srv.db.shardOf(k)
		e := sh.read(k, c.now)
		if e == nil {
			continue
		}
		s, ok := e.obj.(*set)
		if !ok {
			c.error(errWrongType)
			return nil, false
		}
		sets[i] = s
	}
	return sets, true
}

// setOp computes the intersection, union or difference of sets (nil for
// a missing key), held as Redis holds the set it stores: an intset if it
// can be one.
func setOp(op string, sets []*set, lim limits) *set {
	out := newSet()
	switch op {
	case "inter":
		smallest := slices.MinFunc(sets, func(a, b *set) int { return a.len() - b.len() })
		if smallest == nil {
			break
		}
	next:
		for m := range smallest.m {
			for _, s := range sets {
				if _, ok := s.m[m]; !ok {
					continue next
				}
			}
			out.add(m, lim)
		}
	case "union":
		for _, s := range sets {
			if s != nil {
				for m := range s.m {
					out.add(m, lim)
				}
			}
		}
	case "diff":
		if sets[0] == nil {
			break
		}
		for m := range sets[0].m {
			in := false
			for _, s := range sets[1:] {
				if s != nil {
					if _, ok := s.m[m]; ok {
						in = true
						break
					}
				}
			}
			if !in {
				out.add(m, lim)
			}
		}
	}
	return out
}

func sinter(c *call) { c.setAlgebra("inter", c.args[1:], nil) }
func sunion(c *call) { c.setAlgebra("union", c.args[1:], nil) }
func sdiff(c *call)  { c.setAlgebra("diff", c.args[1:], nil) }

func sinterstore(c *call) { c.setAlgebra("inter", c.args[2:], c.args[1]) }
func sunionstore(c *call) { c.setAlgebra("union", c.args[2:], c.args[1]) }
func sdiffstore(c *call)  { c.setAlgebra("diff", c.args[2:], c.args[1]) }

// setAlgebra is SINTER, SUNION and SDIFF key [key ...], and their STORE
// forms with dst: the result, or its size, stored in dst, which goes when
// the result is empty.
func (c *call) setAlgebra(op string, keys [][]byte, dst []byte) {
	all := keys
	if dst != nil {
		all = append([][]byte{dst}, keys...)
	}
	defer c.unlockKeys(c.lockKeys(all, 1))
	sets, ok := c.setsOf(keys)
	if !ok {
		return
	}
	out := setOp(op, sets, c.limits())
	if dst == nil {
		c.members(out)
		return
	}
	sh, h := c.srv.db.shardOf(dst)
	if e := sh.find(dst, c.now); e != nil {
		sh.remove(e)
	}
	if out.len() > 0 {
		sh.add(dst, h).obj = out
	}
	c.integer(int64(out.len()))
}

// sintercard is SINTERCARD numkeys key [key ...] [LIMIT limit]: the size
// of the intersection, counting up to limit (0: all).
func sintercard(c *call) {
	n, err := parseInt(c.args[1])
	if err != nil || n <= 0 {
		c.error(errNumkeys)
		return
	}
	if n > int64(len(c.args)-2) {
		c.error(errNumkeysArgs)
		return
	}
	keys, rest := c.args[2:2+n], c.args[2+n:]
	limit := int64(0)
	for len(rest) > 0 {
		if len(rest) < 2 || !eqFold(rest[0], "limit") {
			c.error(errSyntax)
			return
		}
		limit, err = parseInt(rest[1])
		if err != nil || limit < 0 {
			c.error(errLimitNeg)
			return
		}
		rest = rest[2:]
	}
	defer c.unlockKeys(c.lockKeys(keys, 1))
	sets, ok := c.setsOf(keys)
	if !ok {
		return
	}
	count := int64(setOp("inter", sets, c.limits()).len())
	if limit > 0 {
		count = min(count, limit)
	}
	c.integer(count)
}

// smismember is SMISMEMBER key member [member ...]: 1 or 0 for each.
func smismember(c *call) {
	readKey(c, func(s *set) {
		c.array(len(c.args) - 2)
		for _, m := range c.args[2:] {
			c.boolean(s.has(m))
		}
	})
}

// smove is SMOVE source destination member: 1 if it moved it.
func smove(c *call) {
	defer c.unlockKeys(c.lockKeys(c.args[1:3], 1))
	sets, ok := c.setsOf(c.args[1:3])
	if !ok {
		return
	}
	src, dst := sets[0], sets[1]
	m := string(c.args[3])
	if !src.has(c.args[3]) {
		c.integer(0)
		return
	}
	if string(c.args[1]) == string(c.args[2]) {
		c.integer(1)
		return
	}
	ssh, _ := c.srv.db.shardOf(c.args[1])
	e := ssh.find(c.args[1], c.now)
	delete(src.m, m)
	ssh.touch(e.key)
	ssh.dropEmpty(e)
	dsh, h := c.srv.db.shardOf(c.args[2])
	if dst == nil {
		dst = newSet()
		dsh.add(c.args[2], h).obj = dst
	}
	dst.add(m, c.limits())
	dsh.touch(string(c.args[2]))
	c.integer(1)
}

// srandmember is SRANDMEMBER key [count]: a random member, or count
// distinct ones, or for a negative count that many, perhaps repeated.
func srandmember(c *call) {
	count, hasCount := int64(0), len(c.args) == 3
	if len(c.args) > 3 {
		c.error(errSyntax)
		return
	}
	if hasCount {
		n, err := parseInt(c.args[2])
		if err != nil {
			c.error(err)
			return
		}
		count = n
	}
	readKey(c, func(s *set) {
		// Only a reply of the whole set comes in the intset's order: a
		// random pick costs no sorting.
		ms := s.names()
		if hasCount && count >= int64(len(ms)) && s != nil && !s.table {
			sortIntegers(ms)
		}
		c.randomReply(ms, nil, hasCount, count)
	})
}

// randomReply replies random elements of items, each followed by its
// value when writeVal is given: one, or a null, without a count; count
// distinct ones, or all of them, in their order, when count is at least
// as many, as Redis replies a whole collection in the order it holds it;
// or -count perhaps repeated, of which it takes at most 1<<20, so that
// one call's reply stays bounded. SRANDMEMBER, HRANDFIELD and ZRANDMEMBER
// share it.
func (c *call) randomReply(items []string, writeVal func(i int), hasCount bool, count int64) {
	if !hasCount {
		if len(items) == 0 {
			c.null()
			return
		}
		c.bulkString(items[rand.IntN(len(items))])
		return
	}
	var picks []int
	switch {
	case len(items) == 0 || count == 0:
	case count < 0:
		picks = make([]int, min(-count, 1<<20))
		for i := range picks {
			picks[i] = rand.IntN(len(items))
		}
	case count >= int64(len(items)):
		picks = make([]int, len(items))
		for i := range picks {
			picks[i] = i
		}
	default:
		picks = rand.Perm(len(items))[:count]
	}
	c.scoredArray(len(picks), writeVal != nil)
	for _, i := range picks {
		if writeVal != nil && c.resp3 {
			c.array(2)
		}
		c.bulkString(items[i])
		if writeVal != nil {
			writeVal(i)
		}
	}
}

// sscan is SSCAN key cursor [MATCH pattern] [COUNT count].
func sscan(c *call) {
	o, err := parseScanOptions(c.args[2:], false)
	if err != nil {
		c.error(err)
		return
	}
	readKey(c, func(s *set) { c.scanReply(o, orderedMembers(s), nil, s != nil && !s.table) })
}
