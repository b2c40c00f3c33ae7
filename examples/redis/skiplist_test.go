package main

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSkiplistAgainstSlice applies random inserts and deletes to a
// skiplist and to a sorted slice, and checks they agree on every rank.
func TestSkiplistAgainstSlice(t *testing.T) {
	type elem struct {
		score  float64
		member string
	}
	order := func(a, b elem) int {
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.member, b.member))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sl := newSkiplist()
	var model []elem
	for range 5000 {
		e := elem{float64(rng.IntN(50)), strconv.Itoa(rng.IntN(200))}
		i, found := slices.BinarySearchFunc(model, e, order)
		if found {
			require.True(t, sl.delete(e.score, e.member))
			model = slices.Delete(model, i, i+1)
		} else {
			require.False(t, sl.delete(e.score, e.member))
			sl.insert(e.score, e.member)
			model = slices.Insert(model, i, e)
		}
	}
	require.Equal(t, len(model), sl.n)
	var prev *znode
	for r, e := range model {
		x := sl.at(r)
		require.Equal(t, e, elem{x.score, x.member}, "rank %d", r)
		require.Equal(t, prev, x.prev)
		prev = x
	}
	require.Equal(t, prev, sl.tail)
	require.Equal(t, sl.at(0), sl.first())
}
