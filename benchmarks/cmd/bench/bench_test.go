package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
	"github.com/sluicenet/sluice/benchmarks/measure"
)

func TestParseCPUs(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []int
	}{
		{"0", []int{0}},
		{"1-3", []int{1, 2, 3}},
		{"0,2-3,8", []int{0, 2, 3, 8}},
	} {
		l, err := parseCPUs(tc.spec)
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.want, l.cpus, tc.spec)
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1-"} {
		_, err := parseCPUs(bad)
		assert.ErrorIs(t, err, errCPUList, bad)
	}
	a, _ := parseCPUs("0-1")
	b, _ := parseCPUs("1,2")
	c, _ := parseCPUs("2-3")
	assert.True(t, a.overlaps(b))
	assert.False(t, a.overlaps(c))
	assert.Equal(t, "2", c.n())
}

func TestSelectStacks(t *testing.T) {
	all, err := selectStacks("all")
	require.NoError(t, err)
	assert.Equal(t, stacks, all)

	picked, err := selectStacks("C-floor,gnet")
	require.NoError(t, err)
	require.Len(t, picked, 2)
	assert.Equal(t, "gnet", picked[0].name, "table order, not the list's")
	assert.Equal(t, "C floor", picked[1].name)

	_, err = selectStacks("gnet,nope")
	assert.ErrorIs(t, err, errUnknownStack)
}

func TestShapesAreDistinct(t *testing.T) {
	names, rows := map[string]bool{}, map[string]bool{}
	for _, sh := range shapes(fullTiming) {
		assert.False(t, names[sh.name], "shape %q twice", sh.name)
		names[sh.name] = true
		for _, r := range sh.rows {
			assert.False(t, rows[r.name], "row %q twice", r.name)
			rows[r.name] = true
		}
	}
	assert.True(t, rows[allocsRow])
	for _, sh := range clientShapes(fullTiming) {
		assert.False(t, names[sh.name], "shape %q twice", sh.name)
		names[sh.name] = true
		for _, r := range sh.rows {
			assert.False(t, rows[r.name], "row %q twice", r.name)
			rows[r.name] = true
		}
		if sh.ratioRow != "" {
			assert.True(t, rows[sh.ratioRow], "ratio row %q is one of its rows", sh.ratioRow)
		}
	}
}

func TestClientStacks(t *testing.T) {
	assert.Equal(t, []string{"sluice", "sluice-uring", "gnet", "std"}, names(clientStacks(stacks)))
	picked, err := selectStacks("evio,C-floor")
	require.NoError(t, err)
	assert.Empty(t, clientStacks(picked), "no client: no client rows")
	assert.Equal(t, "C floor", floor.name)
}

func TestAllocs(t *testing.T) {
	m := measurement{load: measure.Report{Total: 1000}, server: serve.Report{Mallocs: 250}}
	v, ok := allocs(m)
	assert.True(t, ok)
	assert.Equal(t, 0.25, v)
	m.server.Mallocs = -1 // the C floor
	_, ok = allocs(m)
	assert.False(t, ok)
}

func TestMatches(t *testing.T) {
	assert.True(t, matches("B-3 100 conns", ""))
	assert.True(t, matches("B-3 100 conns", "B-2,B-3"))
	assert.False(t, matches("B-3 100 conns", "paced"))
}

func TestIdle(t *testing.T) {
	idle, total, err := cpuTimes([]int{0})
	require.NoError(t, err)
	assert.Positive(t, total)
	assert.LessOrEqual(t, idle, total)
	_, _, err = cpuTimes([]int{1 << 20})
	assert.ErrorIs(t, err, errProcStat)

	pct, err := idleOver([]int{0}, 50*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, pct >= 0 && pct <= 100, "%d%%", pct)
	pct, waited, err := waitIdle([]int{0}, 0) // any machine is 0% idle
	require.NoError(t, err)
	assert.Less(t, waited, idleWaitLimit)
	assert.GreaterOrEqual(t, pct, 0)
}
