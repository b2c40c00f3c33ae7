package main

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
)

// scanOptions are what SCAN, SSCAN, HSCAN and ZSCAN take: the cursor, and
// MATCH, COUNT and, for SCAN, TYPE.
type scanOptions struct {
	cursor     uint64
	match, typ []byte
	count      int
}

// parseScanOptions parses cursor [MATCH pattern] [COUNT count] [TYPE type].
func parseScanOptions(args [][]byte, withType bool) (scanOptions, error) {
	o := scanOptions{count: 10}
	cursor, err := strconv.ParseUint(string(args[0]), 10, 64)
	if err != nil {
		return o, errCursor
	}
	o.cursor = cursor
	for i := 1; i < len(args); i += 2 {
		if i+1 == len(args) {
			return o, errSyntax
		}
		opt, v := args[i], args[i+1]
		switch {
		case eqFold(opt, "match"):
			o.match = v
		case eqFold(opt, "type") && withType:
			o.typ = v
		case eqFold(opt, "count"):
			n, err := parseInt(v)
			if err != nil {
				return o, err
			}
			if n < 1 {
				return o, errSyntax
			}
			o.count = int(min(n, math.MaxInt32))
		default:
			return o, errSyntax
		}
	}
	return o, nil
}

// smallScan is the size up to which a collection's scan returns all of it
// at once, as Redis's does for its small encodings.
const smallScan = 128

// scanSeed orders the members of collections for their scans.
var scanSeed = maphash.MakeSeed()

// scanReply replies a step of SSCAN, HSCAN or ZSCAN over members, each
// followed by its value when writeVal is given (with the member's index).
// A collection held compact, as Redis's intsets and listpacks are, or
// small, is returned whole, whatever the cursor, as Redis returns one. A
// larger one is visited in the order of its members' hashes, the cursor
// being the hash to go on from, so that a member present for a whole scan
// is returned once, whatever else changes, as in the keyspace's SCAN; a
// step costs time in proportion to the collection's size.
func (c *call) scanReply(o scanOptions, members []string, writeVal func(i int), compact bool) {
	next := uint64(0)
	picked := make([]int, 0, len(members))
	if compact || len(members) <= smallScan {
		for i := range members {
			picked = append(picked, i)
		}
	} else {
		type hashed struct {
			h uint64
			i int
		}
		var found []hashed
		for i, m := range members {
			if h := maphash.String(scanSeed, m); h >= o.cursor {
				found = append(found, hashed{h, i})
			}
		}
		slices.SortFunc(found, func(a, b hashed) int { return cmp.Compare(a.h, b.h) })
		n := min(o.count, len(found))
		for n > 0 && n < len(found) && found[n].h == found[n-1].h {
			n++ // the cursor cannot point between members of one hash
		}
		if n < len(found) {
			next = found[n-1].h + 1
		}
		for _, f := range found[:n] {
			picked = append(picked, f.i)
		}
	}
	keep := picked[:0]
	for _, i := range picked {
		if o.match == nil || globMatch(o.match, []byte(members[i]), false) {
			keep = append(keep, i)
		}
	}
	c.array(2)
	c.bulk(strconv.AppendUint(nil, next, 10))
	n := len(keep)
	if writeVal != nil {
		n *= 2
	}
	c.array(n)
	for _, i := range keep {
		c.bulkString(members[i])
		if writeVal != nil {
			writeVal(i)
		}
	}
}
