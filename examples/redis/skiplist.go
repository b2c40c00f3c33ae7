package main

import "math/rand/v2"

// maxLevel bounds a skiplist's levels: with each level a quarter as full as
// the one below, 32 serve far more elements than memory holds.
const maxLevel = 32

// skiplist orders a sorted set's members by score, then by member, as
// Redis's does. Each link records how many elements it skips, so finding
// the element of a given rank takes logarithmic time, like finding by
// score.
type skiplist struct {
	head  *znode // holds no element; its links start every level
	tail  *znode
	level int // the levels in use
	n     int
}

type znode struct {
	member string
	score  float64
	prev   *znode // nil for the first
	links  []zlink
}

type zlink struct {
	next *znode
	span int // elements from this node to next, counting next
}

func newSkiplist() skiplist {
	return skiplist{head: &znode{links: make([]zlink, maxLevel)}, level: 1}
}

// before reports whether x sorts before the element (score, member).
func (x *znode) before(score float64, member string) bool {
	return x.score < score || (x.score == score && x.member < member)
}

// path finds, on each level, the last node before (score, member), and
// the rank of each of those nodes, the head's being 0.
func (sl *skiplist) path(score float64, member string) (update [maxLevel]*znode, rank [maxLevel]int) {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		if i < sl.level-1 {
			rank[i] = rank[i+1]
		}
		for x.links[i].next != nil && x.links[i].next.before(score, member) {
			rank[i] += x.links[i].span
			x = x.links[i].next
		}
		update[i] = x
	}
	return update, rank
}

// insert adds (score, member), which must not be present.
func (sl *skiplist) insert(score float64, member string) {
	update, rank := sl.path(score, member)
	level := randomLevel()
	for i := sl.level; i < level; i++ {
		update[i] = sl.head
		sl.head.links[i].span = sl.n
	}
	sl.level = max(sl.level, level)
	x := &znode{member: member, score: score, links: make([]zlink, level)}
	for i := range level {
		l := &update[i].links[i]
		x.links[i].next = l.next
		l.next = x
		x.links[i].span = l.span - (rank[0] - rank[i])
		l.span = rank[0] - rank[i] + 1
	}
	for i := level; i < sl.level; i++ {
		update[i].links[i].span++
	}
	if update[0] != sl.head {
		x.prev = update[0]
	}
	if next := x.links[0].next; next != nil {
		next.prev = x
	} else {
		sl.tail = x
	}
	sl.n++
}

func randomLevel() int {
	level := 1
	for level < maxLevel && rand.Uint32()&3 == 0 {
		level++
	}
	return level
}

// delete removes (score, member) and reports whether it was present.
func (sl *skiplist) delete(score float64, member string) bool {
	update, _ := sl.path(score, member)
	x := update[0].links[0].next
	if x == nil || x.score != score || x.member != member {
		return false
	}
	for i := range sl.level {
		l := &update[i].links[i]
		if l.next == x {
			l.span += x.links[i].span - 1
			l.next = x.links[i].next
		} else {
			l.span--
		}
	}
	if next := x.links[0].next; next != nil {
		next.prev = x.prev
	} else {
		sl.tail = x.prev
	}
	for sl.level > 1 && sl.head.links[sl.level-1].next == nil {
		sl.level--
	}
	sl.n--
	return true
}

// at returns the element of rank r, counting from 0, which must be in
// range.
func (sl *skiplist) at(r int) *znode {
	x, passed := sl.head, 0
	for i := sl.level - 1; i >= 0; i-- {
		for x.links[i].next != nil && passed+x.links[i].span <= r+1 {
			passed += x.links[i].span
			x = x.links[i].next
		}
		if passed == r+1 {
			return x
		}
	}
	return nil
}

// first returns the lowest element, nil when there is none.
func (sl *skiplist) first() *znode { return sl.head.links[0].next }

// seek returns the first element for which before is false; before must
// be true of a prefix of the elements and false of the rest.
func (sl *skiplist) seek(before func(x *znode) bool) *znode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.links[i].next != nil && before(x.links[i].next) {
			x = x.links[i].next
		}
	}
	return x.links[0].next
}

// rank returns x's rank, counting from 0.
func (sl *skiplist) rank(x *znode) int {
	_, rank := sl.path(x.score, x.member)
	return rank[0]
}
