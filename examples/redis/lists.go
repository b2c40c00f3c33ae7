package main

import (
	"errors"
	"math"
)

// list is a double-ended queue of strings in a ring buffer whose length is
// a power of two, so that both ends push and pop in constant time and any
// index is found at once.
type list struct {
	ring []string
	head int // where the first element is
	n    int
}

func newList() *list { return new(list) }

// at returns the i-th element.
func (l *list) at(i int) string { return l.ring[(l.head+i)&(len(l.ring)-1)] }

func (l *list) pushFront(v string) {
	l.fit(l.n + 1)
	l.head = (l.head - 1) & (len(l.ring) - 1)
	l.ring[l.head] = v
	l.n++
}

func (l *list) pushBack(v string) {
	l.fit(l.n + 1)
	l.ring[(l.head+l.n)&(len(l.ring)-1)] = v
	l.n++
}

func (l *list) popFront() string {
	v := l.ring[l.head]
	l.ring[l.head] = ""
	l.head = (l.head + 1) & (len(l.ring) - 1)
	l.n--
	l.fit(l.n)
	return v
}

func (l *list) popBack() string {
	i := (l.head + l.n - 1) & (len(l.ring) - 1)
	v := l.ring[i]
	l.ring[i] = ""
	l.n--
	l.fit(l.n)
	return v
}

// fit makes the ring hold n elements: it doubles it when full, and halves
// it when a quarter full, so a list that shrank gives its memory back.
func (l *list) fit(n int) {
	size := len(l.ring)
	switch {
	case n > size:
		size = max(8, 2*size)
	case size > 64 && n < size/4:
		size /= 2
	default:
		return
	}
	ring := make([]string, size)
	for i := range l.n {
		ring[i] = l.at(i)
	}
	l.ring, l.head = ring, 0
}

func lpush(c *call) { c.push((*list).pushFront) }

func rpush(c *call) { c.push((*list).pushBack) }

// push is LPUSH and RPUSH key element [element ...]: it replies the length.
func (c *call) push(add func(*list, string)) {
	sh, l, ok := openOrAdd(c, newList)
	if !ok {
		return
	}
	defer c.unlock(sh)
	for _, v := range c.args[2:] {
		add(l, string(v))
	}
	c.integer(int64(l.n))
	sh.touch(string(c.args[1]))
	c.ready(sh, c.args[1])
}

func lpop(c *call) { c.popList((*list).popFront) }

func rpop(c *call) { c.popList((*list).popBack) }

// popList is LPOP and RPOP key [count]: one element, or an array of up to
// count. The list goes when its last element does.
func (c *call) popList(take func(*list) string) {
	if len(c.args) > 3 {
		c.errorText(c.cmd.arityErr)
		return
	}
	count, err := c.countArg()
	if err != nil {
		c.error(err)
		return
	}
	sh, e, l, ok := openKey[*list](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	switch {
	case e == nil && count < 0:
		c.null()
		return
	case e == nil:
		c.nullArray()
		return
	case count < 0:
		c.bulkString(take(l))
	default:
		n := min(count, l.n)
		c.array(n)
		for range n {
			c.bulkString(take(l))
		}
	}
	sh.touch(e.key)
	sh.dropEmpty(e)
}

func llen(c *call) { replyLen[*list](c) }

// lrange is LRANGE key start stop.
func lrange(c *call) {
	sh, l, lo, hi, ok := openRange[*list](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	c.array(hi - lo + 1)
	for i := lo; i <= hi; i++ {
		c.bulkString(l.at(i))
	}
}

// lindex is LINDEX key index; a negative index counts from the end.
func lindex(c *call) {
	sh, _, l, i, in, ok := c.openIndex()
	if !ok {
		return
	}
	defer c.unlock(sh)
	if !in {
		c.null()
		return
	}
	c.bulkString(l.at(i))
}

// openIndex parses the index in args[2] of LINDEX and LSET and opens the
// list at the command's key, as openKey does. It returns the index
// counted from the head (a negative one counts from the end) and whether
// the list has an element there.
func (c *call) openIndex() (sh *shard, e *entry, l *list, i int, in, ok bool) {
	n, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return nil, nil, nil, 0, false, false
	}
	if sh, e, l, ok = openKey[*list](c); !ok {
		return nil, nil, nil, 0, false, false
	}
	if n < 0 {
		n += int64(l.len())
	}
	return sh, e, l, int(n), n >= 0 && n < int64(l.len()), true
}

// set replaces the i-th element.
func (l *list) set(i int, v string) { l.ring[(l.head+i)&(len(l.ring)-1)] = v }

// keep replaces the list's elements with those keep returns true for,
// in order, and returns how many it dropped.
func (l *list) keep(keep func(i int, v string) bool) int {
	kept := 0
	for i := range l.n {
		v := l.at(i)
		if keep(i, v) {
			l.set(kept, v)
			kept++
		}
	}
	dropped := l.n - kept
	for range dropped {
		l.popBack()
	}
	return dropped
}

// insert puts v before the i-th element, moving those after it.
func (l *list) insert(i int, v string) {
	l.pushBack(v)
	for j := l.n - 1; j > i; j-- {
		l.set(j, l.at(j-1))
	}
	l.set(i, v)
}

func lpushx(c *call) { c.pushExisting((*list).pushFront) }

func rpushx(c *call) { c.pushExisting((*list).pushBack) }

// pushExisting is LPUSHX and RPUSHX key element [element ...]: they push
// only to a list that exists, and reply its length, 0 when it does not.
func (c *call) pushExisting(add func(*list, string)) {
	sh, e, l, ok := openPresent[*list](c, replyZero)
	if !ok {
		return
	}
	defer c.unlock(sh)
	for _, v := range c.args[2:] {
		add(l, string(v))
	}
	c.integer(int64(l.n))
	sh.touch(e.key)
}

// linsert is LINSERT key BEFORE|AFTER pivot element: the length after, -1
// when the pivot is not there, 0 when the list is not.
func linsert(c *call) {
	var after bool
	switch where := c.args[2]; {
	case eqFold(where, "after"):
		after = true
	case !eqFold(where, "before"):
		c.error(errSyntax)
		return
	}
	sh, e, l, ok := openPresent[*list](c, replyZero)
	if !ok {
		return
	}
	defer c.unlock(sh)
	pivot := string(c.args[3])
	for i := range l.n {
		if l.at(i) == pivot {
			if after {
				i++
			}
			l.insert(i, string(c.args[4]))
			sh.touch(e.key)
			c.integer(int64(l.n))
			return
		}
	}
	c.integer(-1)
}

var (
	errLposRank   = errors.New("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
	errLposCount  = errors.New("ERR COUNT can't be negative")
	errLposMaxlen = errors.New("ERR MAXLEN can't be negative")
	errIndexRange = errors.New("ERR index out of range")
)

// lpos is LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]:
// the index of the rank-th match, from the end for a negative rank, or
// with COUNT an array of up to num of them (0: all), looking at no more
// than len elements (0: all).
func lpos(c *call) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(c.args); i += 2 {
		if i+1 == len(c.args) {
			c.error(errSyntax)
			return
		}
		n, err := parseInt(c.args[i+1])
		if err != nil {
			c.error(err)
			return
		}
		switch a := c.args[i]; {
		case eqFold(a, "rank"):
			if n == 0 {
				c.error(errLposRank)
				return
			}
			rank = n
		case eqFold(a, "count"):
			if n < 0 {
				c.error(errLposCount)
				return
			}
			count = n
		case eqFold(a, "maxlen"):
			if n < 0 {
				c.error(errLposMaxlen)
				return
			}
			maxlen = n
		default:
			c.error(errSyntax)
			return
		}
	}
	sh, _, l, ok := openKey[*list](c)
	if !ok {
		return
	}
	defer c.unlock(sh)
	var found []int64
	want := string(c.args[2])
	skip := rank - 1 // matches to pass over before the first that counts
	switch {
	case rank == math.MinInt64:
		// Redis negates the rank: this one stays negative, and every
		// match then counts, as for -1.
		skip = 0
	case rank < 0:
		skip = -rank - 1
	}
	for j := 0; j < l.len() && (maxlen == 0 || int64(j) < maxlen); j++ {
		i := j
		if rank < 0 {
			i = l.len() - 1 - j
		}
		if l.at(i) != want {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		found = append(found, int64(i))
		if count < 0 || (count > 0 && int64(len(found)) == count) {
			break // one match without COUNT, or as many as COUNT asks
		}
	}
	if count < 0 {
		if len(found) == 0 {
			c.null()
		} else {
			c.integer(found[0])
		}
		return
	}
	c.array(len(found))
	for _, i := range found {
		c.integer(i)
	}
}

// lrem is LREM key count element: it removes the first count elements
// equal to element, the last -count for a negative count, all of them for
// 0, and replies how many.
func lrem(c *call) {
	count, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	sh, e, l, ok := openPresent[*list](c, replyZero)
	if !ok {
		return
	}
	defer c.unlock(sh)
	want := string(c.args[3])
	drop := make(map[int]bool)
	for j := range l.len() {
		if count != 0 && int64(len(drop)) == max(count, -count) {
			break
		}
		i := j
		if count < 0 {
			i = l.len() - 1 - j
		}
		if l.at(i) == want {
			drop[i] = true
		}
	}
	if len(drop) > 0 {
		l.keep(func(i int, _ string) bool { return !drop[i] })
		sh.touch(e.key)
		sh.dropEmpty(e)
	}
	c.integer(int64(len(drop)))
}

// lset is LSET key index element.
func lset(c *call) {
	sh, e, l, i, in, ok := c.openIndex()
	if !ok {
		return
	}
	defer c.unlock(sh)
	switch {
	case e == nil:
		c.error(errNoSuchKey)
	case !in:
		c.error(errIndexRange)
	default:
		l.set(i, string(c.args[3]))
		sh.touch(e.key)
		c.ok()
	}
}

// ltrim is LTRIM key start stop: the list keeps only that range, and goes
// when it is empty.
func ltrim(c *call) {
	start, stop, err := parseRange(c.args[2], c.args[3])
	if err != nil {
		c.error(err)
		return
	}
	sh, e, l, ok := openPresent[*list](c, (*call).ok)
	if !ok {
		return
	}
	defer c.unlock(sh)
	lo, hi, ok := clampRange(start, stop, int64(l.len()))
	if !ok {
		lo, hi = 0, -1
	}
	for range lo {
		l.popFront()
	}
	for l.len() > int(hi-lo+1) {
		l.popBack()
	}
	sh.touch(e.key)
	sh.dropEmpty(e)
	c.ok()
}
