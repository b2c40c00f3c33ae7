// Package table turns a benchmark's figures, one per row, stack and round,
// into one markdown table: for each row and stack the median over the rounds,
// and beside it the median and range of the per-round ratios to a base stack.
//
// Ratios are taken within a round, between measurements made minutes apart at
// most, because on a noisy machine figures from different rounds move by more
// than the differences between stacks; the median of those paired ratios is
// the robust figure.
package table

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A Table collects figures. Rows appear in the order they were first added;
// the zero value is not usable, call New.
type Table struct {
	base   string
	stacks []string
	rows   []string
	cells  map[cellKey]map[int]float64 // round -> figure
	ratio  map[string]bool             // rows whose figures are ratios themselves
}

type cellKey struct{ row, stack string }

// New returns an empty table whose ratios are to base, with columns for
// stacks in that order (base among them).
func New(base string, stacks []string) *Table {
	return &Table{base: base, stacks: stacks, cells: make(map[cellKey]map[int]float64), ratio: make(map[string]bool)}
}

// AddRatioRow is AddRow for a row whose figures are ratios already, taken
// within a round between two measurements of the same stack, so that a
// ratio to the base stack would mean little: its cells show the median
// ratio and, in brackets, its range over the rounds, as ratios to the base
// are shown.
func (t *Table) AddRatioRow(row string) {
	t.AddRow(row)
	t.ratio[row] = true
}

// AddRow appends row if the table does not have it yet, so that rows can be
// listed in a chosen order rather than as their figures come.
func (t *Table) AddRow(row string) {
	if !slices.Contains(t.rows, row) {
		t.rows = append(t.rows, row)
	}
}

// Add records figure v for row and stack in round. NaN and infinities are
// ignored.
func (t *Table) Add(row, stack string, round int, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	t.AddRow(row)
	k := cellKey{row, stack}
	if t.cells[k] == nil {
		t.cells[k] = make(map[int]float64)
	}
	t.cells[k][round] = v
}

// Markdown renders the table. A base cell shows the median; any other the
// median and, in brackets, the median per-round ratio to the base with its
// range when there is more than one round; a ratio row's cells the median
// ratio and its range. Empty cells show "—".
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| Shape |")
	for _, s := range t.stacks {
		b.WriteString(" " + s + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(t.stacks)) + "\n")
	for _, row := range t.rows {
		b.WriteString("| " + row + " |")
		for _, s := range t.stacks {
			b.WriteString(" " + t.cell(row, s) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (t *Table) cell(row, stack string) string {
	figures := t.cells[cellKey{row, stack}]
	if len(figures) == 0 {
		return "—"
	}
	v := values(figures)
	if t.ratio[row] {
		return ratioCell(v)
	}
	s := Format(median(v))
	if stack == t.base {
		return s
	}
	ratios := t.ratios(row, stack)
	switch len(ratios) {
	case 0:
		return s
	case 1:
		return fmt.Sprintf("%s (%.2fx)", s, ratios[0])
	}
	return fmt.Sprintf("%s (%.2fx, %.2f–%.2f)", s, median(ratios), slices.Min(ratios), slices.Max(ratios))
}

// ratioCell shows a ratio row's figures: their median, and their range
// when there is more than one.
func ratioCell(v []float64) string {
	if len(v) == 1 {
		return fmt.Sprintf("%.2fx", v[0])
	}
	return fmt.Sprintf("%.2fx (%.2f–%.2f)", median(v), slices.Min(v), slices.Max(v))
}

// ratios returns stack's figure over the base's in each round both have.
func (t *Table) ratios(row, stack string) []float64 {
	base := t.cells[cellKey{row, t.base}]
	var r []float64
	for round, v := range t.cells[cellKey{row, stack}] {
		if b, ok := base[round]; ok && b != 0 {
			r = append(r, v/b)
		}
	}
	return r
}

func values(m map[int]float64) []float64 {
	v := make([]float64, 0, len(m))
	for _, x := range m {
		v = append(v, x)
	}
	return v
}

// median returns the median of v, which it sorts; the mean of the middle two
// when there is an even number.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Format writes a figure with as many digits as its size deserves: whole
// numbers with thousands separators from 100 up, one decimal from 10, two
// from 1, and three significant digits (six decimals at most) below, where
// small costs such as allocations per round trip still differ.
func Format(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return group(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1 || a == 0:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		decimals := min(2-int(math.Floor(math.Log10(a))), 6)
		return strconv.FormatFloat(v, 'f', decimals, 64)
	}
}

// group puts commas between thousands in a string of digits with an
// optional sign.
func group(digits string) string {
	sign := ""
	if digits[0] == '-' {
		sign, digits = "-", digits[1:]
	}
	for i := len(digits) - 3; i > 0; i -= 3 {
		digits = digits[:i] + "," + digits[i:]
	}
	return sign + digits
}
