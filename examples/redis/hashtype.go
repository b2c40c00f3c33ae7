package main

import "maps"

// hash maps fields to values, held as Redis 7.0 holds one, so that its
// replies list the fields in the same order. A small hash, of at most
// hash-max-listpack-entries fields, none of them and none of their values
// longer than hash-max-listpack-value bytes, is a slice of pairs in the
// order the fields were added, as Redis's listpack is: it costs two
// strings a field and nothing per bucket, and HGETALL and the like reply
// its fields in that order, which deleting a field keeps. A hash that
// passes either bound moves to a map, for good: Redis converts it to a
// hash table and never back, and replies its fields in no set order.
//
// Redis searches a listpack from the front, and so does this server while
// a small hash has at most linearFields fields, none longer than
// linearFieldLen bytes: a search then costs what it does under Redis's
// default bounds. CONFIG SET may raise the bounds as far as it likes, so
// a small hash past those indexes its fields (at), to keep a call's cost
// bounded whatever the bounds: a field deleted from it then leaves a hole
// in pairs rather than moving the rest, and the holes are closed up once
// they are half of pairs.
type hash struct {
	pairs []hashPair
	at    map[string]int    // each field's place in pairs; nil while a search is short
	holes int               // deleted pairs left in pairs, only while at is kept
	m     map[string]string // nil while the hash is small
}

type hashPair struct{ field, value string }

// The most fields and the longest field a small hash searches from the
// front, Redis's default bounds.
const (
	linearFields   = defaultHashEntries
	linearFieldLen = defaultHashValue
)

func newHash() *hash { return &hash{} }

func (h *hash) len() int {
	switch {
	case h == nil:
		return 0
	case h.m != nil:
		return len(h.m)
	}
	return len(h.pairs) - h.holes
}

// small reports whether h is held as Redis's listpack: in order.
func (h *hash) small() bool { return h.m == nil }

// index returns the position of field f among a small hash's pairs, or -1.
func (h *hash) index(f []byte) int {
	if h.at != nil {
		if i, ok := h.at[string(f)]; ok {
			return i
		}
		return -1
	}
	for i := range h.pairs {
		if h.pairs[i].field == string(f) {
			return i
		}
	}
	return -1
}

// live reports whether pair i of a small hash is a field, not a hole. A
// hole is an empty pair, told from the empty field by its place.
func (h *hash) live(i int) bool {
	if h.pairs[i].field != "" || h.holes == 0 {
		return true
	}
	j, ok := h.at[""]
	return ok && j == i
}

// get returns the value of field f.
func (h *hash) get(f []byte) (string, bool) {
	switch {
	case h == nil:
		return "", false
	case h.m != nil:
		v, ok := h.m[string(f)]
		return v, ok
	}
	if i := h.index(f); i >= 0 {
		return h.pairs[i].value, true
	}
	return "", false
}

// has reports whether h holds field f.
func (h *hash) has(f []byte) bool {
	_, ok := h.get(f)
	return ok
}

// set sets field f to v, in its place if f was there and last if not,
// and reports whether f is new. A small hash given a field or value
// longer than lim.hashValue, or holding more than lim.hashEntries fields
// once f is set, moves to a map, as Redis converts its listpack: Redis
// checks the count after replacing a value too, which matters once
// CONFIG SET has lowered the bound.
func (h *hash) set(f, v []byte, lim limits) bool {
	if h.m == nil && (len(f) > lim.hashValue || len(v) > lim.hashValue) {
		h.convert()
	}
	if h.m != nil {
		_, had := h.m[string(f)]
		h.m[string(f)] = string(v)
		return !had
	}
	added := false
	if i := h.index(f); i >= 0 {
		h.pairs[i].value = string(v)
	} else {
		added = true
		h.pairs = append(h.pairs, hashPair{string(f), string(v)})
		switch {
		case h.at != nil:
			h.at[h.pairs[len(h.pairs)-1].field] = len(h.pairs) - 1
		case len(h.pairs) > linearFields || len(f) > linearFieldLen:
			h.at = make(map[string]int, len(h.pairs))
			for i, p := range h.pairs {
				h.at[p.field] = i
			}
		}
	}
	if h.len() > lim.hashEntries {
		h.convert()
	}
	return added
}

// del deletes field f, keeping the order of the rest, and reports whether
// it was there.
func (h *hash) del(f []byte) bool {
	if h.m != nil {
		_, ok := h.m[string(f)]
		delete(h.m, string(f))
		return ok
	}
	i := h.index(f)
	switch {
	case i < 0:
		return false
	case h.at == nil:
		copy(h.pairs[i:], h.pairs[i+1:])
		h.pairs[len(h.pairs)-1] = hashPair{}
		h.pairs = h.pairs[:len(h.pairs)-1]
		return true
	}
	delete(h.at, string(f))
	h.pairs[i] = hashPair{}
	h.holes++
	if h.holes > len(h.pairs)/2 {
		h.closeHoles()
	}
	return true
}

// closeHoles moves a small hash's fields over its holes, in order, at a
// cost spread over the deletions that made them.
func (h *hash) closeHoles() {
	n := 0
	for i := range h.pairs {
		if h.live(i) {
			h.pairs[n] = h.pairs[i]
			h.at[h.pairs[n].field] = n
			n++
		}
	}
	clear(h.pairs[n:])
	h.pairs, h.holes = h.pairs[:n], 0
}

// convert moves a small hash to a map.
func (h *hash) convert() {
	m := make(map[string]string, h.len())
	h.each(func(f, v string) { m[f] = v })
	h.pairs, h.at, h.holes, h.m = nil, nil, 0, m
}

// all returns the fields and their values, in order while h is small.
func (h *hash) all() (fields, values []string) {
	n := h.len()
	if n == 0 {
		return nil, nil
	}
	fields, values = make([]string, 0, n), make([]string, 0, n)
	h.each(func(f, v string) {
		fields = append(fields, f)
		values = append(values, v)
	})
	return fields, values
}

// each calls fn with every field and its value, in order while h is
// small.
func (h *hash) each(fn func(field, value string)) {
	if h == nil {
		return
	}
	if h.m != nil {
		for f, v := range h.m {
			fn(f, v)
		}
		return
	}
	for i, p := range h.pairs {
		if h.live(i) {
			fn(p.field, p.value)
		}
	}
}

// clone returns a copy of h held the same way, as Redis's COPY keeps the
// encoding.
func (h *hash) clone() *hash {
	if h.m != nil {
		return &hash{m: maps.Clone(h.m)}
	}
	return &hash{pairs: append([]hashPair(nil), h.pairs...), at: maps.Clone(h.at), holes: h.holes}
}

// encoding names Redis's encoding of h.
func (h *hash) encoding() string {
	if h.small() {
		return "listpack"
	}
	return "hashtable"
}
