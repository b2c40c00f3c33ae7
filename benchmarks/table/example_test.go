package table_test

import (
	"fmt"

	"github.com/sluicenet/sluice/benchmarks/table"
)

func Example() {
	t := table.New("gnet", []string{"sluice", "gnet", "C floor"})
	for round, f := range []struct{ sluice, gnet, floor float64 }{
		{98000, 95000, 101000},
		{91000, 97000, 99000},
	} {
		t.Add("B-3 100 connections, 64 B (rt/s)", "sluice", round, f.sluice)
		t.Add("B-3 100 connections, 64 B (rt/s)", "gnet", round, f.gnet)
		t.Add("B-3 100 connections, 64 B (rt/s)", "C floor", round, f.floor)
	}
	t.Add("B-14 allocations per round trip", "sluice", 0, 0.0042)
	fmt.Print(t.Markdown())
	// Output:
	// | Shape | sluice | gnet | C floor |
	// |---|---|---|---|
	// | B-3 100 connections, 64 B (rt/s) | 94,500 (0.98x, 0.94–1.03) | 96,000 | 100,000 (1.04x, 1.02–1.06) |
	// | B-14 allocations per round trip | 0.00420 | — | — |
}
