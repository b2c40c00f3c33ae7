package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/table"
)

// The gather table: what WithGatherWait does to Sluice's io_uring loop,
// under two shapes of client, beside Sluice on epoll and gnet. It runs with
// -only gather (one small row with -quick), never in the full run.

// gatherStacks are the gather table's columns: Sluice on epoll, on
// io_uring with gathering off and at two bounds, and gnet, the base.
var gatherStacks = []stack{
	{name: "sluice", pkg: "./servers/sluice", loops: true},
	{name: "sluice-uring", pkg: "./servers/sluice", loops: true, flags: []string{"-poller", "uring"}},
	{name: "uring gather 20µs", pkg: "./servers/sluice", loops: true, flags: []string{"-poller", "uring", "-gather-wait", "20us"}},
	{name: "uring gather 100µs", pkg: "./servers/sluice", loops: true, flags: []string{"-poller", "uring", "-gather-wait", "100us"}},
	{name: "gnet", pkg: "./servers/gnet", loops: true},
}

// goClient is the command of the Go client shape (cmd/goload).
const goClient = "goload"

// A gatherShape is a shape of the gather table and the client that drives
// it: cmd/loadgen, or cmd/goload (goClient).
type gatherShape struct {
	shape
	client string
}

// gatherShapes returns the gather table's measurements: the paced load
// from each client shape at 100 and 1,000 connections, and B-2's closed
// loop on one connection. -quick takes one: the Go client at 100.
func gatherShapes(t timing, quick bool) []gatherShape {
	paced := func(client, label string, conns int) gatherShape {
		name := fmt.Sprintf("Paced 30k rt/s, %s conns, %s", table.Format(float64(conns)), label)
		return gatherShape{client: client, shape: shape{
			name: fmt.Sprintf("gather %s %d conns", client, conns),
			args: t.pacedArgs(conns),
			rows: []row{{name + ": server CPU µs/rt", cpu}, {name + ": p50 µs", p50}, {name + ": p99 µs", p99}},
		}}
	}
	goPaced := paced(goClient, "Go client", 100)
	if quick {
		return []gatherShape{goPaced}
	}
	return []gatherShape{
		paced("loadgen", "loadgen", 100),
		goPaced,
		paced("loadgen", "loadgen", 1000),
		paced(goClient, "Go client", 1000),
		{client: "loadgen", shape: shape{name: "gather B-2 1 conn", args: t.closed(1, 64),
			rows: []row{{"B-2 1 conn, closed loop: rt/s", rate}, {"B-2 1 conn, closed loop: p50 µs", p50}, {"B-2 1 conn, closed loop: p99 µs", p99}}}},
	}
}

// gathered is what the gather table's run produced: its markdown (with
// its preamble), notes for the run's preamble, and failed measurements.
type gathered struct {
	out      string
	notes    []string
	failures int
}

// runGather takes the gather table's measurements, when -only names it or
// with -quick.
func runGather(cfg config) gathered {
	var g gathered
	if !cfg.quick && cfg.only == "" {
		g.notes = append(g.notes, "The gather table is left out of the full run; -only gather runs it.")
		return g
	}
	var picked []gatherShape
	timing := fullTiming
	if cfg.quick {
		timing = quickTiming
	}
	for _, sh := range gatherShapes(timing, cfg.quick) {
		if matches(sh.name, cfg.only) {
			picked = append(picked, sh)
		}
	}
	if len(picked) == 0 {
		return g
	}
	if err := buildGather(cfg); err != nil {
		g.notes = append(g.notes, fmt.Sprintf("The gather table is left out: %v.", err))
		g.failures++
		return g
	}
	t := table.New(base, names(gatherStacks))
	for _, sh := range picked {
		for _, r := range sh.rows {
			t.AddRow(r.name)
		}
	}
	for round := range cfg.rounds {
		for _, sh := range picked {
			for i := range gatherStacks {
				st := gatherStacks[(i+round)%len(gatherStacks)]
				g.failures += record(cfg, t, round, sh.name, st.name, sh.rows, func() (measurement, error) { return measureGather(cfg, st, sh) })
			}
		}
	}
	g.out = "\n" + gatherPreamble(cfg) + "\n" + t.Markdown()
	return g
}

// buildGather builds the Go client and the servers the gather table runs
// into the build directory.
func buildGather(cfg config) error {
	args := []string{"build", "-o", cfg.bin + "/", "./cmd/goload", "./cmd/loadgen", "./servers/sluice", "./servers/gnet"}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// measureGather runs sh on a fresh server of st, driven by sh's client.
func measureGather(cfg config, st stack, sh gatherShape) (measurement, error) {
	if sh.client != goClient {
		return measureOne(cfg, st, sh.shape)
	}
	srv, err := startServer(st, cfg.bin, cfg.server)
	if err != nil {
		return measurement{}, err
	}
	load, loadErr := goLoad(cfg, srv, sh.args)
	report, stopErr := srv.stop()
	if err := errors.Join(loadErr, stopErr); err != nil {
		return measurement{}, err
	}
	return measurement{load: load, server: report}, nil
}

// goLoad runs cmd/goload against srv pinned to the client CPUs, with
// GOMAXPROCS to match, and the paced flags of args (those goload takes).
func goLoad(cfg config, srv *server, args []string) (measure.Report, error) {
	args = append([]string{"-c", cfg.client.spec, filepath.Join(cfg.bin, goClient),
		"-addr", srv.addr, "-pid", strconv.Itoa(srv.pid())}, goArgs(args)...)
	cmd := exec.Command("taskset", args...)
	cmd.Env = append(cmd.Environ(), "GOMAXPROCS="+cfg.client.n())
	return report(cmd, errLoad, errLoadError)
}

// goArgs keeps, of the load generator's paced flags, those goload takes:
// all but -mode.
func goArgs(args []string) []string {
	var kept []string
	for i := 0; i < len(args); i++ {
		if args[i] == "-mode" {
			i++
			continue
		}
		kept = append(kept, args[i])
	}
	return kept
}

// gatherPreamble says what the gather table compares and how.
func gatherPreamble(cfg config) string {
	return strings.Join([]string{
		"Gathering events: Sluice's io_uring loop with WithGatherWait off, 20 µs and 100 µs, beside Sluice on epoll, ratios to gnet.",
		fmt.Sprintf("Two client shapes, each pinned to CPUs %s: loadgen, one epoll loop per CPU sending each due batch of requests at once; and the Go client (cmd/goload, GOMAXPROCS %s), a goroutine per connection that sleeps until its request is due, writes it and blocks reading the echo, so requests arrive spread out.",
			cfg.client.spec, cfg.client.n()),
		"Latency counts from each request's intended send time in both, so a client's own lateness (the Go runtime's timers) is in its figures, the same for every server.",
	}, "\n") + "\n"
}
