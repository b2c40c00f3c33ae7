package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

var (
	errScoreRange = errors.New("ERR min or max is not a float")
	errLexRange   = errors.New("ERR min or max not valid string range item")
	errLimitRank  = errors.New("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	errLexScores  = errors.New("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	errWeight     = errors.New("ERR weight value is not a float")
)

// zrangeSpec is a range of a sorted set: by rank, score or member, as the
// ZRANGE family gives it.
type zrangeSpec struct {
	by               byKind
	rev              bool
	start, stop      int64 // by rank
	min, max         float64
	minEx, maxEx     bool
	lmin, lmax       string // by member; "-" and "+" are the ends
	lminEx, lmaxEx   bool
	lminAll, lmaxAll bool
	offset, limit    int64 // LIMIT; a negative limit is none
	withScores       bool
}

type byKind uint8

const (
	byRank byKind = iota
	byScore
	byLex
)

// parseScore parses one end of a score range: a float, "(" before it for
// an exclusive end. Redis reads it with strtod alone: leading spaces, an
// empty string (0) and an overflow (infinite) pass.
func parseScore(b []byte) (float64, bool, error) {
	ex := len(b) > 0 && b[0] == '('
	if ex {
		b = b[1:]
	}
	f, _, ok := strtod(string(b))
	if !ok {
		return 0, false, errScoreRange
	}
	return f, ex, nil
}

// parseLex parses one end of a member range: "[" or "(" then the member,
// or "-" or "+", the lowest and the highest.
func parseLex(b []byte) (s string, ex, all bool, err error) {
	switch {
	case len(b) == 1 && (b[0] == '-' || b[0] == '+'):
		return "", false, true, nil
	case len(b) > 0 && b[0] == '(':
		return string(b[1:]), true, false, nil
	case len(b) > 0 && b[0] == '[':
		return string(b[1:]), false, false, nil
	}
	return "", false, false, errLexRange
}

// parseZrange parses what the ZRANGE family takes after the key: min and
// max, in the order given, then the options allowed, as Redis parses
// them.
func (c *call) parseZrange(min, max []byte, opts [][]byte, by byKind, rev, fixed, store bool) (zrangeSpec, error) {
	r := zrangeSpec{by: by, rev: rev, limit: -1}
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		switch {
		case !store && eqFold(a, "withscores"):
			r.withScores = true
		case eqFold(a, "limit") && i+2 < len(opts):
			off, err1 := parseInt(opts[i+1])
			lim, err2 := parseInt(opts[i+2])
			if err := errors.Join(err1, err2); err != nil {
				return r, errNotInteger
			}
			r.offset, r.limit = off, lim
			i += 2
		case !fixed && !r.rev && eqFold(a, "rev"):
			r.rev = true
		case !fixed && r.by == byRank && eqFold(a, "bylex"):
			r.by = byLex
		case !fixed && r.by == byRank && eqFold(a, "byscore"):
			r.by = byScore
		default:
			return r, errSyntax
		}
	}
	if r.limit != -1 && r.by == byRank {
		return r, errLimitRank
	}
	if r.withScores && r.by == byLex {
		return r, errLexScores
	}
	if r.rev && r.by != byRank {
		min, max = max, min // given as max then min
	}
	var err error
	switch r.by {
	case byRank:
		r.start, r.stop, err = parseRange(min, max)
	case byScore:
		var err2 error
		r.min, r.minEx, err = parseScore(min)
		r.max, r.maxEx, err2 = parseScore(max)
		err = errors.Join(err, err2)
		if err != nil {
			err = errScoreRange
		}
	case byLex:
		var err2 error
		r.lmin, r.lminEx, r.lminAll, err = parseLex(min)
		r.lmax, r.lmaxEx, r.lmaxAll, err2 = parseLex(max)
		if errors.Join(err, err2) != nil {
			err = errLexRange
		}
	}
	return r, err
}

// aboveMin and belowMax test a member against the range's ends.
func (r *zrangeSpec) aboveMin(x *znode) bool {
	if r.by == byLex {
		return r.lminAll || x.member > r.lmin || (!r.lminEx && x.member == r.lmin)
	}
	return x.score > r.min || (!r.minEx && x.score == r.min)
}

func (r *zrangeSpec) belowMax(x *znode) bool {
	if r.by == byLex {
		return r.lmaxAll || x.member < r.lmax || (!r.lmaxEx && x.member == r.lmax)
	}
	return x.score < r.max || (!r.maxEx && x.score == r.max)
}

// members returns the range's members of z, in the range's order, with
// LIMIT applied.
func (r *zrangeSpec) members(z *zset) []*znode {
	sl := &z.order
	var out []*znode
	if r.by == byRank {
		lo, hi, ok := clampRange(r.start, r.stop, int64(sl.n))
		if !ok {
			return nil
		}
		x := sl.at(int(lo))
		if r.rev {
			x = sl.at(sl.n - 1 - int(lo))
		}
		for range hi - lo + 1 {
			out = append(out, x)
			x = r.step(x)
		}
		return out
	}
	var x *znode
	if r.rev {
		// The last member not above max.
		if y := sl.seek(r.belowMax); y != nil {
			x = y.prev
		} else {
			x = sl.tail
		}
	} else {
		x = sl.seek(func(x *znode) bool { return !r.aboveMin(x) })
	}
	skip := r.offset
	if skip < 0 {
		return nil
	}
	for ; x != nil && r.aboveMin(x) && r.belowMax(x); x = r.step(x) {
		if r.limit >= 0 && int64(len(out)) == r.limit {
			break
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, x)
	}
	return out
}

func (r *zrangeSpec) step(x *znode) *znode {
	if r.rev {
		return x.prev
	}
	return x.links[0].next
}

// zrangeCmd serves ZRANGE, ZRANGESTORE, ZREVRANGE and the BYSCORE and
// BYLEX commands, each told apart by its name.
func zrangeCmd(c *call) {
	name := c.cmd.name
	store := name == "zrangestore"
	args := c.args[1:]
	if store {
		args = c.args[2:]
	}
	by, rev, fixed := byRank, false, name != "zrange" && name != "zrangestore"
	switch name {
	case "zrevrange":
		rev = true
	case "zrangebyscore":
		by = byScore
	case "zrevrangebyscore":
		by, rev = byScore, true
	case "zrangebylex":
		by = byLex
	case "zrevrangebylex":
		by, rev = byLex, true
	}
	r, err := c.parseZrange(args[1], args[2], args[3:], by, rev, fixed, store)
	if err != nil {
		c.error(err)
		return
	}
	if store {
		c.zrangeStore(&r, c.args[1], c.args[2])
		return
	}
	sh, _, z, ok := openPresent[*zset](c, replyEmpty)
	if !ok {
		return
	}
	defer c.unlock(sh)
	found := r.members(z)
	c.scoredArray(len(found), r.withScores)
	for _, x := range found {
		c.scored(x, r.withScores)
	}
}

// zrangeStore is ZRANGESTORE dst src ...: the range, with its scores,
// stored in dst.
func (c *call) zrangeStore(r *zrangeSpec, dst, src []byte) {
	defer c.unlockKeys(c.lockKeys([][]byte{dst, src}, 1))
	var out *zset
	sh, _ := c.srv.db.shardOf(src)
	if e := sh.read(src, c.now); e != nil {
		z, ok := e.obj.(*zset)
		if !ok {
			c.error(errWrongType)
			return
		}
		out = newZset()
		lim := c.limits()
		for _, x := range r.members(z) {
			out.set([]byte(x.member), x.score, lim)
		}
	}
	c.storeZset(dst, out)
}

// storeZset replaces dst, whose shard is locked, with z, or deletes it
// when z is empty, and replies z's size.
func (c *call) storeZset(dst []byte, z *zset) {
	sh, h := c.srv.db.shardOf(dst)
	if e := sh.find(dst, c.now); e != nil {
		sh.remove(e)
	}
	if z.len() == 0 {
		c.integer(0)
		return
	}
	sh.add(dst, h).obj = z
	c.ready(sh, dst)
	c.integer(int64(z.len()))
}

// openBounds parses the min and max in args[2] and args[3] of ZCOUNT,
// ZLEXCOUNT and ZREMRANGEBY*, ranked by by, and opens the command's key;
// an absent key is replied 0.
func (c *call) openBounds(by byKind) (sh *shard, e *entry, z *zset, r zrangeSpec, ok bool) {
	r, err := c.parseZrange(c.args[2], c.args[3], nil, by, false, true, false)
	if err != nil {
		c.error(err)
		return nil, nil, nil, r, false
	}
	sh, e, z, ok = openPresent[*zset](c, replyZero)
	return sh, e, z, r, ok
}

// zcount is ZCOUNT key min max, and zlexcount ZLEXCOUNT.
func zcount(c *call) {
	by := byScore
	if c.cmd.name == "zlexcount" {
		by = byLex
	}
	sh, _, z, r, ok := c.openBounds(by)
	if !ok {
		return
	}
	defer c.unlock(sh)
	first := z.order.seek(func(x *znode) bool { return !r.aboveMin(x) })
	if first == nil || !r.belowMax(first) {
		c.integer(0)
		return
	}
	after := z.order.seek(r.belowMax) // the first above max
	end := z.order.n
	if after != nil {
		end = z.order.rank(after)
	}
	c.integer(int64(end - z.order.rank(first)))
}

// zremrange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX key
// start stop: how many it removed.
func zremrange(c *call) {
	by := byRank
	switch c.cmd.name {
	case "zremrangebyscore":
		by = byScore
	case "zremrangebylex":
		by = byLex
	}
	sh, e, z, r, ok := c.openBounds(by)
	if !ok {
		return
	}
	defer c.unlock(sh)
	found := r.members(z)
	for _, x := range found {
		z.remove(x.member)
	}
	if len(found) > 0 {
		sh.touch(e.key)
		sh.dropEmpty(e)
	}
	c.integer(int64(len(found)))
}

// zrank is ZRANK key member, and zrevrank ZREVRANK: the member's rank, or
// a null.
func zrank(c *call) {
	sh, _, z, ok := openPresent[*zset](c, (*call).null)
	if !ok {
		return
	}
	defer c.unlock(sh)
	score, in := z.scores[string(c.args[2])]
	if !in {
		c.null()
		return
	}
	_, rank := z.order.path(score, string(c.args[2]))
	r := rank[0]
	if c.cmd.name == "zrevrank" {
		r = z.order.n - 1 - r
	}
	c.integer(int64(r))
}

// zincrby is ZINCRBY key increment member: the new score.
func zincrby(c *call) {
	by, err := parseFloat(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	sh, z, ok := openOrAdd(c, newZset)
	if !ok {
		return
	}
	defer c.unlock(sh)
	old, exists := z.scores[string(c.args[3])]
	s := old + by
	if math.IsNaN(s) {
		c.error(errNaNScore)
		if z.len() == 0 {
			sh.dropEmpty(sh.find(c.args[1], c.now))
		}
		return
	}
	z.set(c.args[3], s+0, c.limits())
	sh.touch(string(c.args[1]))
	c.double(s)
	if !exists {
		c.ready(sh, c.args[1])
	}
}

// zmscore is ZMSCORE key member [member ...]: each score, or a null.
func zmscore(c *call) {
	sh, _, z, ok := openKey[*zset](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	c.array(len(c.args) - 2)
	for _, m := range c.args[2:] {
		if z == nil {
			c.null()
		} else if s, in := z.scores[string(m)]; in {
			c.double(s)
		} else {
			c.null()
		}
	}
}

// zrandmember is ZRANDMEMBER key [count [WITHSCORES]].
func zrandmember(c *call) {
	count, hasCount, withScores, err := c.randomArgs("withscores")
	if err != nil {
		c.error(err)
		return
	}
	sh, _, z, ok := openKey[*zset](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	// From the highest score down, the order in which Redis replies the
	// whole set to a count at least as large.
	var members []string
	var scores []float64
	for x := z.last(); x != nil; x = x.prev {
		members = append(members, x.member)
		scores = append(scores, x.score)
	}
	var writeVal func(int)
	if withScores {
		writeVal = func(i int) { c.double(scores[i]) }
	}
	c.randomReply(members, writeVal, hasCount, count)
}

// zscan is ZSCAN key cursor [MATCH pattern] [COUNT count]: members and
// their scores, the scores as strings even in RESP3, as in Redis.
func zscan(c *call) {
	o, err := parseScanOptions(c.args[2:], false)
	if err != nil {
		c.error(err)
		return
	}
	sh, _, z, ok := openKey[*zset](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	var members []string
	var scores []float64
	if z != nil {
		// In score order, as Redis returns a small one.
		for x := z.order.first(); x != nil; x = x.links[0].next {
			members = append(members, x.member)
			scores = append(scores, x.score)
		}
	}
	c.scanReply(o, members, func(i int) {
		var buf [32]byte
		c.bulk(formatScore(buf[:0], scores[i]))
	}, z != nil && z.encoding() == "listpack")
}

// formatScore writes a score as Redis stores it as a string, and ZSCAN
// replies it: an integer as an integer, where it fits a long long with
// room to spare, and otherwise as formatDouble does.
func formatScore(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) <= math.MaxInt64/2 {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return formatDouble(dst, f)
}

// zsetOp is the input of ZUNION, ZINTER and ZDIFF: the sorted sets, or
// sets, whose members count with score 1, and their weights.
type zsetOp struct {
	sources   []map[string]float64
	weights   []float64
	aggregate string // sum, min or max
	withScore bool
	limit     int64
}

// parseZsetOp parses numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]
// [WITHSCORES] or [LIMIT n], as each command allows, in Redis's order:
// the keys' types are checked before the options. The keys' shards are
// locked.
func (c *call) parseZsetOp(args [][]byte, op string, store, card bool) (*zsetOp, bool) {
	n, err := parseInt(args[0])
	if err != nil {
		c.error(err)
		return nil, false
	}
	if n < 1 {
		c.errorText(fmt.Sprintf("ERR at least 1 input key is needed for '%s' command", c.cmd.name))
		return nil, false
	}
	if n > int64(len(args)-1) {
		c.error(errSyntax)
		return nil, false
	}
	o := &zsetOp{aggregate: "sum"}
	for _, k := range args[1 : 1+n] {
		sh, _ := c.srv.db.shardOf(k)
		var src map[string]float64
		if e := sh.read(k, c.now); e != nil {
			switch v := e.obj.(type) {
			case *zset:
				src = v.scores
			case *set:
				src = make(map[string]float64, len(v.m))
				for m := range v.m {
					src[m] = 1
				}
			default:
				c.error(errWrongType)
				return nil, false
			}
		}
		o.sources = append(o.sources, src)
		o.weights = append(o.weights, 1)
	}
	rest := args[1+n:]
	for len(rest) > 0 {
		switch a := rest[0]; {
		case op != "diff" && !card && len(rest) > int(n) && eqFold(a, "weights"):
			for i := range o.weights {
				w, err := parseFloat(rest[1+i])
				if err != nil {
					c.error(errWeight)
					return nil, false
				}
				o.weights[i] = w
			}
			rest = rest[1+n:]
		case op != "diff" && !card && len(rest) >= 2 && eqFold(a, "aggregate"):
			switch b := rest[1]; {
			case eqFold(b, "sum"), eqFold(b, "min"), eqFold(b, "max"):
				o.aggregate = strings.ToLower(string(b))
			default:
				c.error(errSyntax)
				return nil, false
			}
			rest = rest[2:]
		case !store && !card && eqFold(a, "withscores"):
			o.withScore = true
			rest = rest[1:]
		case card && len(rest) >= 2 && eqFold(a, "limit"):
			l, err := parseInt(rest[1])
			if err != nil || l < 0 {
				c.error(errLimitNeg)
				return nil, false
			}
			o.limit = l
			rest = rest[2:]
		default:
			c.error(errSyntax)
			return nil, false
		}
	}
	return o, true
}

// run computes the union, intersection or difference, weighted and
// aggregated, as a sorted set.
func (o *zsetOp) run(op string, lim limits) *zset {
	out := make(map[string]float64)
	weighted := func(i int, s float64) float64 {
		if v := s * o.weights[i]; !math.IsNaN(v) {
			return v
		}
		return 0
	}
	combine := func(a, b float64) float64 {
		switch o.aggregate {
		case "min":
			return min(a, b)
		case "max":
			return max(a, b)
		}
		if v := a + b; !math.IsNaN(v) {
			return v
		}
		return 0
	}
	switch op {
	case "union":
		for i, src := range o.sources {
			for m, s := range src {
				if old, ok := out[m]; ok {
					out[m] = combine(old, weighted(i, s))
				} else {
					out[m] = weighted(i, s)
				}
			}
		}
	case "inter":
		smallest := 0
		for i, src := range o.sources {
			if len(src) < len(o.sources[smallest]) {
				smallest = i
			}
		}
	next:
		for m := range o.sources[smallest] {
			var acc float64
			for i, src := range o.sources {
				s, ok := src[m]
				if !ok {
					continue next
				}
				if i == 0 {
					acc = weighted(i, s)
				} else {
					acc = combine(acc, weighted(i, s))
				}
			}
			out[m] = acc
		}
	case "diff":
	diff:
		for m, s := range o.sources[0] {
			for _, src := range o.sources[1:] {
				if _, ok := src[m]; ok {
					continue diff
				}
			}
			out[m] = s
		}
	}
	z := newZset()
	for m, s := range out {
		z.set([]byte(m), s, lim)
	}
	return z
}

func zunion(c *call) { c.zsetAlgebra("union") }
func zinter(c *call) { c.zsetAlgebra("inter") }
func zdiff(c *call)  { c.zsetAlgebra("diff") }

// zsetAlgebra is ZUNION, ZINTER and ZDIFF numkeys key [key ...] ..., and
// their STORE forms with a destination first.
func (c *call) zsetAlgebra(op string) {
	store := strings.HasSuffix(c.cmd.name, "store")
	args, dst := c.args[1:], []byte(nil)
	if store {
		args, dst = c.args[2:], c.args[1]
	}
	keys, _ := numkeysAt(0)(args)
	locked := keys
	if store {
		locked = append([][]byte{dst}, keys...)
	}
	defer c.unlockKeys(c.lockKeys(locked, 1))
	o, ok := c.parseZsetOp(args, op, store, false)
	if !ok {
		return
	}
	z := o.run(op, c.limits())
	if store {
		c.storeZset(dst, z)
		return
	}
	c.scoredArray(z.len(), o.withScore)
	for x := z.order.first(); x != nil; x = x.links[0].next {
		c.scored(x, o.withScore)
	}
}

// zintercard is ZINTERCARD numkeys key [key ...] [LIMIT limit].
func zintercard(c *call) {
	keys, _ := numkeysAt(1)(c.args)
	defer c.unlockKeys(c.lockKeys(keys, 1))
	o, ok := c.parseZsetOp(c.args[1:], "inter", false, true)
	if !ok {
		return
	}
	n := int64(o.run("inter", c.limits()).len())
	if o.limit > 0 {
		n = min(n, o.limit)
	}
	c.integer(n)
}
