package main

import (
	"errors"
	"math"
)

var (
	errZaddNXXX = errors.New("ERR XX and NX options at the same time are not compatible")
	errZaddGTLT = errors.New("ERR GT, LT, and/or NX options at the same time are not compatible")
	errZaddIncr = errors.New("ERR INCR option supports a single increment-element pair")
	errNaNScore = errors.New("ERR resulting score is not a number (NaN)")
)

// zset is a sorted set: each member's score, and the members in order.
type zset struct {
	scores map[string]float64
	order  skiplist
	// big records that the set once held more members than
	// zset-max-listpack-entries or one longer than zset-max-listpack-value:
	// Redis then converted it to a skiplist, and keeps it one however it
	// shrinks, so that OBJECT ENCODING names it so.
	big bool
}

func newZset() *zset {
	return &zset{scores: make(map[string]float64), order: newSkiplist()}
}

// set gives member the score, adding it if it is new.
func (z *zset) set(member []byte, score float64, lim limits) {
	old, had := z.scores[string(member)]
	if had {
		z.order.delete(old, string(member))
	}
	m := string(member)
	z.scores[m] = score
	z.order.insert(score, m)
	// Redis converts its listpack as a member is added, not as one's
	// score changes, whatever CONFIG SET has lowered the bounds to since.
	if !had && (len(m) > lim.zsetValue || len(z.scores) > lim.zsetEntries) {
		z.big = true
	}
}

// last returns the node of the member with the highest score, nil if
// there is none.
func (z *zset) last() *znode {
	if z == nil {
		return nil
	}
	return z.order.tail
}

// encoding names the encoding Redis 7.0 gives z.
func (z *zset) encoding() string {
	if z.big {
		return "skiplist"
	}
	return "listpack"
}

// clone returns a copy of z held the same way, as Redis's COPY keeps the
// encoding.
func (z *zset) clone() *zset {
	out := newZset()
	for x := z.order.first(); x != nil; x = x.links[0].next {
		out.scores[x.member] = x.score
		out.order.insert(x.score, x.member)
	}
	out.big = z.big
	return out
}

// remove removes member and reports whether it was there.
func (z *zset) remove(member string) bool {
	score, ok := z.scores[member]
	if ok {
		delete(z.scores, member)
		z.order.delete(score, member)
	}
	return ok
}

// zaddOptions are ZADD's flags.
type zaddOptions struct {
	nx, xx, gt, lt, ch, incr bool
}

// parseZaddOptions parses the flags at the start of args and returns them
// with the score and member pairs after them.
func parseZaddOptions(args [][]byte) (zaddOptions, [][]byte, error) {
	var o zaddOptions
	i := 0
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case eqFold(a, "nx"):
			o.nx = true
		case eqFold(a, "xx"):
			o.xx = true
		case eqFold(a, "gt"):
			o.gt = true
		case eqFold(a, "lt"):
			o.lt = true
		case eqFold(a, "ch"):
			o.ch = true
		case eqFold(a, "incr"):
			o.incr = true
		default:
			pairs := args[i:]
			switch {
			case len(pairs)%2 != 0:
				return o, nil, errSyntax
			case o.nx && o.xx:
				return o, nil, errZaddNXXX
			case (o.gt && o.nx) || (o.lt && o.nx) || (o.gt && o.lt):
				return o, nil, errZaddGTLT
			case o.incr && len(pairs) > 2:
				return o, nil, errZaddIncr
			}
			return o, pairs, nil
		}
	}
	return o, nil, errSyntax
}

// zadd is ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member
// ...]: how many members were added (or changed, with CH), or with INCR
// the member's new score.
func zadd(c *call) {
	o, pairs, err := parseZaddOptions(c.args[2:])
	if err != nil {
		c.error(err)
		return
	}
	for i := 0; i < len(pairs); i += 2 {
		if _, err := parseFloat(pairs[i]); err != nil {
			c.error(err)
			return
		}
	}
	// XX adds no members, so it must not create the key either.
	var sh *shard
	var z *zset
	var ok bool
	if o.xx {
		sh, _, z, ok = openKey[*zset](c)
	} else {
		sh, z, ok = openOrAdd(c, newZset)
	}
	if !ok {
		return
	}
	defer c.unlock(sh)
	added, changed := 0, 0
	score := math.NaN() // with INCR, the member's new score; NaN when not updated
	lim := c.limits()
	for i := 0; i < len(pairs) && z != nil; i += 2 {
		s, _ := parseFloat(pairs[i])
		s += 0 // no minus zero, as Redis stores none
		member := pairs[i+1]
		old, exists := z.scores[string(member)]
		if o.incr && exists {
			if s += old; math.IsNaN(s) {
				c.error(errNaNScore)
				return
			}
		}
		switch {
		case exists && (o.nx || (o.gt && s <= old) || (o.lt && s >= old)):
		case exists:
			if s != old {
				z.set(member, s, lim)
				changed++
			}
			score = s
		case !o.xx:
			z.set(member, s, lim)
			added++
			score = s
		}
	}
	if added+changed > 0 {
		sh.touch(string(c.args[1]))
	}
	if added > 0 {
		c.ready(sh, c.args[1])
	}
	switch {
	case o.incr && math.IsNaN(score):
		c.null()
	case o.incr:
		c.double(score)
	case o.ch:
		c.integer(int64(added + changed))
	default:
		c.integer(int64(added))
	}
}

func zscore(c *call) {
	sh, _, z, ok := openPresent[*zset](c, (*call).null)
	if !ok {
		return
	}
	defer c.unlock(sh)
	if s, ok := z.scores[string(c.args[2])]; ok {
		c.double(s)
	} else {
		c.null()
	}
}

// scoredArray starts a reply of n members, with their scores or not. With
// scores, RESP2 has a flat array of members and scores, RESP3 an array of
// pairs.
func (c *call) scoredArray(n int, withScores bool) {
	if withScores && !c.resp3 {
		n *= 2
	}
	c.array(n)
}

// scored replies one element of a scoredArray.
func (c *call) scored(x *znode, withScores bool) {
	switch {
	case !withScores:
		c.bulkString(x.member)
		return
	case c.resp3:
		c.array(2)
	}
	c.bulkString(x.member)
	c.double(x.score)
}

// zpopmin is ZPOPMIN key [count], and zpopmax ZPOPMAX: the lowest, or
// highest, members and their scores, removed from the set.
func zpopmin(c *call) { c.zpop(true) }
func zpopmax(c *call) { c.zpop(false) }

func (c *call) zpop(lowest bool) {
	count, err := c.countArg()
	if err != nil {
		c.error(err)
		return
	}
	sh, e, z, ok := openPresent[*zset](c, replyEmpty)
	if !ok {
		return
	}
	defer c.unlock(sh)
	next := func() *znode {
		if lowest {
			return z.order.first()
		}
		return z.order.tail
	}
	if count < 0 {
		// A single pair, flat even in RESP3.
		c.array(2)
		x := next()
		c.bulkString(x.member)
		c.double(x.score)
		z.remove(x.member)
	} else {
		n := min(count, z.order.n)
		c.scoredArray(n, true)
		for range n {
			x := next()
			c.scored(x, true)
			z.remove(x.member)
		}
	}
	sh.touch(e.key)
	sh.dropEmpty(e)
}

func zcard(c *call) { replyLen[*zset](c) }

// zrem is ZREM key member [member ...]: how many were there.
func zrem(c *call) {
	removeMembers(c, func(z *zset, m []byte) bool { return z.remove(string(m)) })
}
