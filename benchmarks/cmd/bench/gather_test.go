package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gather table's shapes are distinct, -only gather picks them all and
// no other table's, and -quick keeps one.
func TestGatherShapes(t *testing.T) {
	names, rows := map[string]bool{}, map[string]bool{}
	for _, sh := range gatherShapes(fullTiming, false) {
		assert.False(t, names[sh.name], "shape %q twice", sh.name)
		names[sh.name] = true
		assert.True(t, matches(sh.name, "gather"), "-only gather picks %q", sh.name)
		for _, r := range sh.rows {
			assert.False(t, rows[r.name], "row %q twice", r.name)
			rows[r.name] = true
		}
	}
	var others []string
	for _, sh := range shapes(fullTiming) {
		others = append(others, sh.name)
	}
	for _, sh := range append(proxyShapes(fullTiming), tlsShapes(fullTiming)...) {
		others = append(others, sh.name)
	}
	for _, sh := range clientShapes(fullTiming) {
		others = append(others, sh.name)
	}
	for _, name := range others {
		assert.False(t, matches(name, "gather"), "-only gather picks %q", name)
	}
	quick := gatherShapes(quickTiming, true)
	require.Len(t, quick, 1)
	assert.Equal(t, goClient, quick[0].client)
}

func TestGoArgs(t *testing.T) {
	assert.Equal(t, []string{"-conns", "100", "-size", "64", "-rate", "30000", "-warmup", "200ms", "-duration", "1.2s"},
		goArgs(fullTiming.pacedArgs(100)))
}
