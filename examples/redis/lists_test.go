package main

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListAgainstSlice pushes and pops at random at both ends of a list
// and of a slice, growing the ring and then shrinking it, and checks they
// agree.
func TestListAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	l := newList()
	var model []string
	peak := 0
	for i := range 20000 {
		v := strconv.Itoa(i)
		push := rng.IntN(4) != 0 // three pushes to a pop, then the reverse
		if i >= 10000 {
			push = !push
		}
		front := rng.IntN(2) == 0
		switch {
		case push && front:
			l.pushFront(v)
			model = slices.Insert(model, 0, v)
		case push:
			l.pushBack(v)
			model = append(model, v)
		case len(model) == 0:
		case front:
			require.Equal(t, model[0], l.popFront())
			model = model[1:]
		default:
			require.Equal(t, model[len(model)-1], l.popBack())
			model = model[:len(model)-1]
		}
		require.Equal(t, len(model), l.n)
		peak = max(peak, len(l.ring))
	}
	for i, v := range model {
		require.Equal(t, v, l.at(i))
	}
	require.Greater(t, peak, 1000)
	require.LessOrEqual(t, len(l.ring), max(4*len(model), 64), "the ring shrank")
}
