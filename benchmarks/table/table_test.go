package table

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0.00"},
		{0.5, "0.500"},
		{0.00462, "0.00462"},
		{0.0000001, "0.000000"},
		{3.004, "3.00"},
		{9.999, "10.00"},
		{12.34, "12.3"},
		{99.94, "99.9"},
		{100, "100"},
		{999.6, "1,000"},
		{98123.3, "98,123"},
		{1234567, "1,234,567"},
		{-4321, "-4,321"},
	} {
		assert.Equal(t, tc.want, Format(tc.in), "%v", tc.in)
	}
}

func TestCells(t *testing.T) {
	tb := New("gnet", []string{"sluice", "gnet", "std"})
	// Three rounds: the rounds move together, and the ratios are paired
	// within each round.
	for round, v := range []struct{ sluice, gnet float64 }{{110, 100}, {240, 200}, {270, 300}} {
		tb.Add("rate", "sluice", round, v.sluice)
		tb.Add("rate", "gnet", round, v.gnet)
	}
	tb.Add("cost", "gnet", 0, 2)
	tb.Add("cost", "std", 0, 3)
	tb.Add("cost", "std", 1, math.NaN()) // ignored
	tb.Add("cost", "sluice", 1, 5)       // no gnet figure in round 1: no ratio

	assert.Equal(t, "240 (1.10x, 0.90–1.20)", tb.cell("rate", "sluice"))
	assert.Equal(t, "200", tb.cell("rate", "gnet"))
	assert.Equal(t, "—", tb.cell("rate", "std"))
	assert.Equal(t, "3.00 (1.50x)", tb.cell("cost", "std"))
	assert.Equal(t, "5.00", tb.cell("cost", "sluice"))
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
}

func TestRowOrder(t *testing.T) {
	tb := New("gnet", []string{"gnet"})
	tb.AddRow("first")
	tb.Add("second", "gnet", 0, 1)
	tb.Add("first", "gnet", 0, 2)
	assert.Equal(t, "| Shape | gnet |\n|---|---|\n| first | 2.00 |\n| second | 1.00 |\n", tb.Markdown())
}

func TestRatioRow(t *testing.T) {
	tb := New("gnet", []string{"sluice", "gnet"})
	tb.AddRatioRow("dialed ÷ accepted")
	for round, v := range []float64{1.02, 0.97, 1.10} {
		tb.Add("dialed ÷ accepted", "sluice", round, v)
		tb.Add("dialed ÷ accepted", "gnet", round, 2*v)
	}
	tb.Add("one round", "gnet", 0, 1)
	tb.AddRatioRow("one round")
	assert.Equal(t, "1.02x (0.97–1.10)", tb.cell("dialed ÷ accepted", "sluice"))
	assert.Equal(t, "2.04x (1.94–2.20)", tb.cell("dialed ÷ accepted", "gnet"), "the base shows its range too")
	assert.Equal(t, "1.00x", tb.cell("one round", "gnet"))
}
