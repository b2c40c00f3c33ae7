// Command bench runs Sluice and its peers side by side and prints one
// markdown table. benchmarks/run builds it and runs it; see
// benchmarks/README.md for what each row means.
//
// It builds every server, the C floors (with gcc) and the load generator into
// -bin; then, round after round, for each shape and each stack in an order
// that rotates every round, it starts a fresh server pinned to -server-cpus,
// waits for its port, runs cmd/loadgen pinned to -client-cpus, stops the
// server with SIGTERM and reads its exit report. Each row shows the median
// over the rounds and, for every stack but gnet, the median and range of its
// per-round ratios to gnet.
//
// It exits 1 when a server breaks: it does not start, crashes, does not stop
// cleanly, or the load generator sees mismatched bytes, resets or timeouts.
// Speed never fails a run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/syscount"
	"github.com/sluicenet/sluice/benchmarks/table"
)

var errUnknownStack = errors.New("unknown stack")

// loadTimeout bounds one load generator run, well past any shape's length.
const loadTimeout = 2 * time.Minute

type config struct {
	quick          bool
	rounds         int
	bin, out       string
	stacks         []stack
	server, client cpuList
	only           string
}

func main() {
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := build(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench: build:", err)
		os.Exit(1)
	}
	if err := pinSelf(cfg.client); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	t, notes, failures := run(cfg)
	out := preamble(cfg, notes) + "\n" + t.Markdown()
	fmt.Print(out)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(out), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if failures > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d measurements failed: a server broke\n", failures)
		os.Exit(1)
	}
}

func parseFlags() (config, error) {
	var cfg config
	flag.BoolVar(&cfg.quick, "quick", false, "short smoke run: one round, short windows")
	flag.IntVar(&cfg.rounds, "rounds", 0, "rounds, each measuring every stack once per shape (default 6, or 1 with -quick)")
	flag.StringVar(&cfg.bin, "bin", "", "`directory` to build into (benchmarks/run passes a fresh one)")
	flag.StringVar(&cfg.out, "o", "", "also write the table to `file`")
	flag.StringVar(&cfg.only, "only", "", "run only the shapes whose names contain one of these comma-separated `words`")
	stackList := flag.String("stacks", "all", "comma-separated stacks to run: sluice,sluice-uring,gnet,evio,nbio,netpoll,std,C-floor,C-uring")
	serverCPUs := flag.String("server-cpus", "0", "`CPUs` for each server (taskset list); it runs one loop per CPU")
	clientCPUs := flag.String("client-cpus", "1", "`CPUs` for the load generator; it runs one epoll loop per CPU")
	flag.Parse()
	if cfg.rounds == 0 {
		cfg.rounds = 6
		if cfg.quick {
			cfg.rounds = 1
		}
	}
	var err error
	if cfg.stacks, err = selectStacks(*stackList); err != nil {
		return cfg, err
	}
	if cfg.server, err = parseCPUs(*serverCPUs); err != nil {
		return cfg, err
	}
	if cfg.client, err = parseCPUs(*clientCPUs); err != nil {
		return cfg, err
	}
	switch {
	case cfg.bin == "" || flag.NArg() > 0 || cfg.rounds < 1:
		return cfg, errors.New("usage: bench -bin DIR [flags]; see -h")
	case cfg.server.overlaps(cfg.client):
		return cfg, fmt.Errorf("%w: server and client CPUs overlap", errCPUList)
	}
	return cfg, nil
}

// build compiles the chosen servers and the load generator with go, and the
// C floors with gcc, into cfg.bin.
func build(cfg config) error {
	goArgs := []string{"build", "-o", cfg.bin + "/", "./cmd/loadgen"}
	for _, st := range cfg.stacks {
		if st.pkg != "" {
			if !slices.Contains(goArgs, st.pkg) {
				goArgs = append(goArgs, st.pkg)
			}
			continue
		}
		gcc := exec.Command("gcc", "-O2", "-Wall", "-o", filepath.Join(cfg.bin, st.binary()), st.c)
		if out, err := gcc.CombinedOutput(); err != nil {
			return fmt.Errorf("gcc %s: %v: %s", st.c, err, out)
		}
	}
	if out, err := exec.Command("go", goArgs...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v: %s", err, out)
	}
	return nil
}

// run takes every measurement and returns the table, notes for the
// preamble, and how many measurements failed.
func run(cfg config) (*table.Table, []string, int) {
	timing := fullTiming
	if cfg.quick {
		timing = quickTiming
	}
	var notes []string
	perfErr := syscount.Available()
	if perfErr != nil {
		notes = append(notes, fmt.Sprintf("System call rows skipped: %v.", perfErr))
	}
	var picked []shape
	for _, sh := range shapes(timing) {
		if (sh.perf && perfErr != nil) || !matches(sh.name, cfg.only) {
			continue
		}
		picked = append(picked, sh)
	}
	names := make([]string, len(cfg.stacks))
	for i, st := range cfg.stacks {
		names[i] = st.name
	}
	t := table.New(base, names)
	for _, sh := range picked { // rows in shape order; B-14 comes last, as its figures do
		for _, r := range sh.rows {
			if r.name != allocsRow {
				t.AddRow(r.name)
			}
		}
	}
	failures := 0
	for round := range cfg.rounds {
		for _, sh := range picked {
			for i := range cfg.stacks {
				st := cfg.stacks[(i+round)%len(cfg.stacks)]
				start := time.Now()
				m, err := measureOne(cfg, st, sh)
				if err != nil {
					failures++
					fmt.Fprintf(os.Stderr, "FAIL round %d, %s, %s: %v\n", round+1, sh.name, st.name, err)
					continue
				}
				fmt.Fprintf(os.Stderr, "round %d, %-17s %-8s %s (%.1f s)\n",
					round+1, sh.name, st.name, summary(m), time.Since(start).Seconds())
				for _, r := range sh.rows {
					if v, ok := r.value(m); ok {
						t.Add(r.name, st.name, round, v)
					}
				}
			}
		}
	}
	return t, notes, failures
}

func matches(name, only string) bool {
	if only == "" {
		return true
	}
	for w := range strings.SplitSeq(only, ",") {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// measureOne runs shape sh on a fresh server of stack st.
func measureOne(cfg config, st stack, sh shape) (measurement, error) {
	srv, err := startServer(st, cfg.bin, cfg.server)
	if err != nil {
		return measurement{}, err
	}
	load, loadErr := runLoad(cfg, srv, sh)
	report, stopErr := srv.stop()
	if err := errors.Join(loadErr, stopErr); err != nil {
		return measurement{}, err
	}
	return measurement{load: load, server: report}, nil
}

// runLoad runs cmd/loadgen for shape sh against srv, pinned to the client
// CPUs.
func runLoad(cfg config, srv *server, sh shape) (measure.Report, error) {
	args := append([]string{"-c", cfg.client.spec, filepath.Join(cfg.bin, "loadgen"),
		"-addr", srv.addr, "-pid", fmt.Sprint(srv.pid()), "-workers", cfg.client.n()}, sh.args...)
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "taskset", args...)
	cmd.Env = append(cmd.Environ(), "GOMAXPROCS="+cfg.client.n())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return measure.Report{}, fmt.Errorf("%w: %v: %s", errLoad, err, stderr.String())
	}
	var r measure.Report
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("%w: %v: %s", errLoad, err, out)
	}
	if r.Errors.Total() > 0 {
		return r, fmt.Errorf("%w: %+v", errLoadError, r.Errors)
	}
	return r, nil
}

// summary is one measurement's progress line.
func summary(m measurement) string {
	l := m.load
	switch l.Mode {
	case "memory":
		return fmt.Sprintf("%s B/conn", table.Format(l.PerConn))
	case "syscalls":
		return fmt.Sprintf("%s syscalls/rt, %s µs CPU/rt", table.Format(l.PerRT), table.Format(l.CPUPerRT))
	}
	return fmt.Sprintf("%s/s, p50 %s µs, p99 %s µs, %s µs CPU/rt", table.Format(l.Rate), table.Format(l.P50), table.Format(l.P99), table.Format(l.CPUPerRT))
}

// preamble says how the table was made, for the reader and for the record.
func preamble(cfg config, notes []string) string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimLeft(name, "\t :"))
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	lines := []string{
		fmt.Sprintf("Rounds: %d. Each server on CPUs %s (%s loop), the load generator on CPUs %s (%s epoll loop).",
			cfg.rounds, cfg.server.spec, cfg.server.n(), cfg.client.spec, cfg.client.n()),
		fmt.Sprintf("Machine: %s, %d CPUs, Linux %s, %s.", model, runtime.NumCPU(), strings.TrimSpace(string(kernel)), runtime.Version()),
		fmt.Sprintf("Cells: median over rounds (median per-round ratio to %s, low–high). rt = round trip; rates: higher is better; µs, B, syscalls and allocations: lower is better.", base),
	}
	return strings.Join(append(lines, notes...), "\n") + "\n"
}
