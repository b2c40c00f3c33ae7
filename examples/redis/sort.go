package main

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
)

var errSortScore = errors.New("ERR One or more scores can't be converted into double")

// sortSpec is what SORT and SORT_RO take after the key.
type sortSpec struct {
	by           []byte // nil: by the elements themselves
	dontSort     bool   // BY a pattern with no '*'
	gets         [][]byte
	desc, alpha  bool
	offset       int64
	count        int64 // negative: all
	store        []byte
	usesPatterns bool // BY or GET reach other keys
}

// parseSort parses SORT's options, and SORT_RO's, which has no STORE.
func parseSort(args [][]byte, readOnly bool) (sortSpec, error) {
	s := sortSpec{count: -1}
	for i := 0; i < len(args); i++ {
		left := len(args) - i - 1
		switch a := args[i]; {
		case eqFold(a, "asc"):
			s.desc = false
		case eqFold(a, "desc"):
			s.desc = true
		case eqFold(a, "alpha"):
			s.alpha = true
		case eqFold(a, "limit") && left >= 2:
			off, err1 := parseInt(args[i+1])
			n, err2 := parseInt(args[i+2])
			if err1 != nil || err2 != nil {
				return s, errNotInteger
			}
			s.offset, s.count = off, n
			i += 2
		case eqFold(a, "store") && left >= 1 && !readOnly:
			s.store = args[i+1]
			i++
		case eqFold(a, "by") && left >= 1:
			s.by = args[i+1]
			if bytes.IndexByte(s.by, '*') < 0 {
				s.dontSort = true
			} else {
				s.usesPatterns = true
			}
			i++
		case eqFold(a, "get") && left >= 1:
			s.gets = append(s.gets, args[i+1])
			if string(args[i+1]) != "#" {
				s.usesPatterns = true
			}
			i++
		default:
			return s, errSyntax
		}
	}
	return s, nil
}

// sortKeys finds SORT's keys: its key and STORE's destination; and says
// when BY or GET may reach any key.
func sortKeys(args [][]byte) ([][]byte, bool) {
	s, err := parseSort(args[2:], false)
	if err != nil {
		return args[1:2], false
	}
	if s.store != nil {
		return [][]byte{args[1], s.store}, s.usesPatterns
	}
	return args[1:2], s.usesPatterns
}

// sortCmd is SORT key [BY pattern] [LIMIT offset count] [GET pattern ...]
// [ASC|DESC] [ALPHA] [STORE destination], and SORT_RO without STORE. The
// key's elements are copied under its lock, and BY and GET look other
// keys up one at a time after, each under its own lock, so that no call
// holds more than one shard while it sorts: a SORT that reads other keys
// is not atomic, as Redis's is, unless it runs in a transaction, which
// locks every shard for it.
func sortCmd(c *call) {
	s, err := parseSort(c.args[2:], c.cmd.name == "sort_ro")
	if err != nil {
		c.error(err)
		return
	}
	elems, ok := c.sortElements(c.args[1], &s)
	if !ok {
		return
	}
	if s.dontSort {
		// Unsorted, the elements keep their order, a list's or a sorted
		// set's, backwards for DESC, as in Redis.
		if s.desc {
			slices.Reverse(elems)
		}
	} else {
		if err := c.sortBy(elems, &s); err != nil {
			c.error(err)
			return
		}
	}
	start, end := sortWindow(s.offset, s.count, len(elems))
	var window []string
	if start <= end {
		window = elems[start : end+1]
	}
	if s.store != nil {
		c.sortStore(window, &s)
		return
	}
	per := max(len(s.gets), 1)
	c.array(len(window) * per)
	for _, e := range window {
		if len(s.gets) == 0 {
			c.bulkString(e)
			continue
		}
		for _, g := range s.gets {
			if v, ok := c.lookupPattern(g, e); ok {
				c.bulkString(v)
			} else {
				c.null()
			}
		}
	}
}

// sortElements returns a copy of the elements of the list, set or sorted
// set at key, in its order. It replies WRONGTYPE and reports false for
// another type.
func (c *call) sortElements(key []byte, s *sortSpec) ([]string, bool) {
	sh, _ := c.lock(key)
	defer c.unlock(sh)
	e := sh.read(key, c.now)
	if e == nil {
		return nil, true
	}
	switch v := e.obj.(type) {
	case *list:
		out := make([]string, v.len())
		for i := range out {
			out[i] = v.at(i)
		}
		return out, true
	case *set:
		out := orderedMembers(v)
		if s.dontSort && s.store != nil {
			// As in Redis: a set stored in no order would be stored in a
			// random one, so it is sorted as strings.
			s.dontSort, s.alpha, s.by = false, true, nil
		}
		return out, true
	case *zset:
		out := make([]string, 0, v.len())
		for x := v.order.first(); x != nil; x = x.links[0].next {
			out = append(out, x.member)
		}
		return out, true
	}
	c.error(errWrongType)
	return nil, false
}

// sortBy sorts elems as SORT does: by number, or as strings with ALPHA,
// by their own values or BY's, ties broken by the elements.
func (c *call) sortBy(elems []string, s *sortSpec) error {
	type weighted struct {
		elem  string
		score float64
		by    *string
	}
	ws := make([]weighted, len(elems))
	for i, e := range elems {
		ws[i].elem = e
		val, found := e, true
		if s.by != nil && !s.dontSort {
			val, found = c.lookupPattern(s.by, e)
		}
		switch {
		case s.alpha && found:
			ws[i].by = &val
		case !s.alpha && found:
			f, ok := sortScore(val)
			if !ok {
				return errSortScore
			}
			ws[i].score = f
		}
	}
	slices.SortStableFunc(ws, func(a, b weighted) int {
		var r int
		switch {
		case !s.alpha:
			if r = cmp.Compare(a.score, b.score); r == 0 {
				r = cmp.Compare(a.elem, b.elem)
			}
		case s.by == nil || s.dontSort:
			r = cmp.Compare(a.elem, b.elem)
		case a.by == nil || b.by == nil:
			r = b2i(a.by != nil) - b2i(b.by != nil)
		default:
			r = cmp.Compare(*a.by, *b.by)
		}
		if s.desc {
			return -r
		}
		return r
	})
	for i := range ws {
		elems[i] = ws[i].elem
	}
	return nil
}

// sortWindow returns the inclusive range LIMIT selects of n elements, as
// Redis computes it; empty when start > end.
func sortWindow(offset, count int64, n int) (int, int) {
	start := max(offset, 0)
	end := int64(n) - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= int64(n) {
		start, end = int64(n)-1, int64(n)-2
	}
	end = min(end, int64(n)-1)
	return int(start), int(end)
}

// lookupPattern returns what a BY or GET pattern names for elem: elem
// itself for "#"; else the string at the key the pattern makes with its
// first '*' replaced by elem, or with "->field" after the '*', that field
// of the hash there.
func (c *call) lookupPattern(pattern []byte, elem string) (string, bool) {
	if string(pattern) == "#" {
		return elem, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return "", false
	}
	var field []byte
	if arrow := bytes.Index(pattern[star:], []byte("->")); arrow >= 0 && star+arrow+2 < len(pattern) {
		field = pattern[star+arrow+2:]
		pattern = pattern[:star+arrow]
	}
	key := make([]byte, 0, len(pattern)+len(elem))
	key = append(key, pattern[:star]...)
	key = append(key, elem...)
	key = append(key, pattern[star+1:]...)
	sh, _ := c.lock(key)
	defer c.unlock(sh)
	e := sh.find(key, c.now)
	switch {
	case e == nil:
		return "", false
	case field == nil && e.obj == nil:
		return string(e.str), true
	case field != nil:
		if h, ok := e.obj.(*hash); ok {
			return h.get(field)
		}
	}
	return "", false
}

// sortStore stores the sorted window, or what GET finds for it, as a list
// at STORE's destination, deleted when the list is empty, and replies its
// length.
func (c *call) sortStore(window []string, s *sortSpec) {
	l := newList()
	for _, e := range window {
		if len(s.gets) == 0 {
			l.pushBack(e)
			continue
		}
		for _, g := range s.gets {
			v, _ := c.lookupPattern(g, e)
			l.pushBack(v)
		}
	}
	sh, h := c.lock(s.store)
	defer c.unlock(sh)
	if e := sh.find(s.store, c.now); e != nil {
		sh.remove(e)
	}
	if l.len() > 0 {
		sh.add(s.store, h).obj = l
		c.ready(sh, s.store)
	}
	c.integer(int64(l.len()))
}

// sortScore reads an element's or a weight's score as Redis's SORT does,
// with strtod, refusing any range error: an inexact subnormal (1e-310)
// as well as an overflow or an underflow.
func sortScore(val string) (float64, bool) {
	f, rangeErr, ok := strtod(val)
	return f, ok && !rangeErr
}
