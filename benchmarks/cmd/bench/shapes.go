package main

import (
	"strconv"
	"time"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/table"
)

// A shape is one measurement the runner takes of every stack in every round:
// the load generator's flags, and the table rows its figures fill.
type shape struct {
	name string
	args []string // cmd/loadgen flags beyond -addr, -pid and -workers
	rows []row
	perf bool // needs perf (syscall counts)
	// tls: the server serves TLS and the load generator speaks it, with
	// the run's certificate (config.serverTLS, config.clientTLS)
	tls bool
	// large: moves large messages, the rows the proxy table measures
	// HAProxy's splice variant in
	large bool
	// udp: the server echoes datagrams and the load generator sends them
	// (udp.go)
	udp bool
	// server: further flags for the server (the UDP shapes')
	server []string
}

// A row is one line of the table and where its figure comes from.
type row struct {
	name  string
	value func(m measurement) (v float64, ok bool)
}

// columns returns a table's columns for list, name giving each stack's.
func columns[S any](list []S, name func(S) string) []string {
	n := make([]string, len(list))
	for i, s := range list {
		n[i] = name(s)
	}
	return n
}

// newTable returns a table with columns, ratios to base, and the rows of
// each of shapes (rows gives a shape's), in shape order.
func newTable[S any](base string, columns []string, shapes []S, rows func(S) []row) *table.Table {
	t := table.New(base, columns)
	for _, sh := range shapes {
		for _, r := range rows(sh) {
			t.AddRow(r.name)
		}
	}
	return t
}

// measurement is what one shape found on one stack: the load generator's
// report and the server's own exit report.
type measurement struct {
	load   measure.Report
	server serve.Report
	// The client-side rows' further figures: the C floor's CPU per dial
	// (µs), and the accepted run beside a dialed one.
	floorCPU float64
	accepted *measure.Report
}

// timing is how long each kind of measurement runs; -quick shortens it.
type timing struct {
	warm, window      time.Duration // closed loop and accepts
	pacedWarm, paced  time.Duration
	syscallRoundTrips int
	handshakes        time.Duration // the TLS handshake rows' window
	tlsIdle           int           // the TLS memory row's connections
	// The HTTP rows' wrk runs, in whole seconds as wrk takes them: the
	// warm-up (0: none), the measured window, the run whose system calls
	// are counted; and the memory row's connections.
	httpWarm, httpWindow, httpCount int
	httpIdle                        int
}

var (
	fullTiming = timing{
		warm: 150 * time.Millisecond, window: 600 * time.Millisecond,
		pacedWarm: 200 * time.Millisecond, paced: 1200 * time.Millisecond,
		syscallRoundTrips: 10000,
		handshakes:        time.Second, tlsIdle: 10000,
		httpWarm: 1, httpWindow: 2, httpCount: 1, httpIdle: 10000,
	}
	quickTiming = timing{
		warm: 50 * time.Millisecond, window: 200 * time.Millisecond,
		pacedWarm: 50 * time.Millisecond, paced: 300 * time.Millisecond,
		syscallRoundTrips: 3000,
		handshakes:        300 * time.Millisecond, tlsIdle: 1000,
		httpWindow: 1, httpIdle: 1000,
	}
)

// pacedRate is the fixed load of the paced rows, well below what any stack
// saturates at on one core.
const pacedRate = 30000

// allocsRow is the B-14 row, which the table lists last.
const allocsRow = "B-14 heap allocations/rt (B-3 100 conns)"

func rate(m measurement) (float64, bool)     { return m.load.Rate, true }
func p50(m measurement) (float64, bool)      { return m.load.P50, true }
func p99(m measurement) (float64, bool)      { return m.load.P99, true }
func cpu(m measurement) (float64, bool)      { return m.load.CPUPerRT, true }
func perConn(m measurement) (float64, bool)  { return m.load.PerConn, true }
func syscalls(m measurement) (float64, bool) { return m.load.PerRT, true }

// allocs divides the server's heap allocations over its life by the round
// trips it served; stacks with no heap to count (the C floor) have none.
func allocs(m measurement) (float64, bool) {
	if m.server.Mallocs < 0 || m.load.Total == 0 {
		return 0, false
	}
	return float64(m.server.Mallocs) / float64(m.load.Total), true
}

// pacedArgs returns the load generator's flags for the paced rows.
func (t timing) pacedArgs(conns int) []string {
	return []string{"-mode", "paced", "-conns", strconv.Itoa(conns), "-size", "64",
		"-rate", strconv.Itoa(pacedRate), "-warmup", t.pacedWarm.String(), "-duration", t.paced.String()}
}

// loadArgs returns the load generator's flags for a load of mode over
// conns connections with messages of size bytes, and more.
func loadArgs(mode string, conns, size int, more ...string) []string {
	return append([]string{"-mode", mode, "-conns", strconv.Itoa(conns), "-size", strconv.Itoa(size)}, more...)
}

// closed returns the flags for the closed loop.
func (t timing) closed(conns, size int) []string {
	return loadArgs("closed", conns, size, "-warmup", t.warm.String(), "-duration", t.window.String())
}

// accepts returns the flags for connection setup, conns at a time.
func (t timing) accepts(conns int) []string {
	return loadArgs("accepts", conns, 64, "-warmup", t.warm.String(), "-duration", t.window.String())
}

// counted returns the flags for counting system calls over 64 B round
// trips.
func (t timing) counted(conns int) []string {
	return loadArgs("syscalls", conns, 64, "-warmup", t.warm.String(), "-count", strconv.Itoa(t.syscallRoundTrips))
}

// shapes returns the measurements of a run, in the order the table lists
// their rows.
func shapes(t timing) []shape {
	closed, paced, counted := t.closed, t.pacedArgs, t.counted
	return []shape{
		{name: "B-1 accepts", args: t.accepts(50),
			rows: []row{{"B-1 accepts/s (connect, 64 B round trip, close)", rate}}},
		{name: "B-2 1 conn", args: closed(1, 64),
			rows: []row{{"B-2 1 conn, 64 B: rt/s", rate}, {"B-2 1 conn, 64 B: p50 µs", p50}}},
		{name: "B-3 100 conns", args: closed(100, 64),
			rows: []row{{"B-3 100 conns, 64 B: rt/s", rate}, {allocsRow, allocs}}},
		{name: "B-3 1,000 conns", args: closed(1000, 64),
			rows: []row{{"B-3 1,000 conns, 64 B: rt/s", rate}}},
		{name: "B-3 10,000 conns", args: closed(10000, 64),
			rows: []row{{"B-3 10,000 conns, 64 B: rt/s", rate}}},
		{name: "B-4 16 KiB", args: closed(1000, 16<<10),
			rows: []row{{"B-4 1,000 conns, 16 KiB: rt/s", rate}}},
		{name: "paced 100 conns", args: paced(100),
			rows: []row{{"Paced 30k rt/s, 100 conns, 64 B: server CPU µs/rt", cpu}}},
		{name: "paced 1,000 conns", args: paced(1000),
			rows: []row{{"Paced 30k rt/s, 1,000 conns, 64 B: server CPU µs/rt", cpu}, {"Paced 30k rt/s, 1,000 conns, 64 B: p99 µs", p99}}},
		{name: "B-5 memory", args: loadArgs("memory", 10000, 64),
			rows: []row{{"B-5 10,000 idle conns: resident B/conn", perConn}}},
		{name: "B-13 1 conn", perf: true, args: counted(1),
			rows: []row{{"B-13 1 conn: syscalls/rt", syscalls}}},
		{name: "B-13 100 conns", perf: true, args: counted(100),
			rows: []row{{"B-13 100 conns: syscalls/rt", syscalls}}},
	}
}
