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
// After the server-side shapes come the client-side ones (client.go), for
// the stacks that can dial: their dialing clients against the C floor, and
// their servers echoing on connections they dialed beside ones they
// accepted. They fill a second table.
//
// The proxy shapes (proxy.go) fill a third: examples/proxy beside HAProxy,
// each relaying the load generator's connections to the C floor. They run
// with -quick, or when -only names them, but not in the full run, which
// they would take past 15 minutes.
//
// The UDP shapes (udp.go) fill a fifth: the stacks that serve UDP, and a
// C floor, echoing datagrams. Like the proxy and TLS shapes they run with
// -quick or -only, not in the full run.
//
// The TLS shapes (tls.go) fill a fourth: the stacks that serve TLS, over
// TLS, beside crypto/tls. Like the proxy shapes they run with -quick or
// -only, not in the full run.
//
// The HTTP shapes (http.go) fill a fifth: HTTP servers, sluicehttp and
// examples/http among them, beside net/http, driven by wrk. They too run
// with -quick or -only, not in the full run.
//
// It exits 1 when a server or a proxy (or the C floor behind it) breaks: it
// does not start, crashes, does not stop cleanly, or the load generator
// sees mismatched bytes, resets or timeouts;
// or when a dialing client sees failed dials, wrong echoes or connections
// closed early. Speed never fails a run.
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

	"github.com/sluicenet/sluice/benchmarks/internal/certs"
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
	proxies        []proxyStack
	https          []httpStack
	server, client cpuList
	only           string
	idle           int         // percent idle to wait for before each measurement; 0: no wait
	certs          certs.Files // the TLS rows' certificate, made in -bin for the run
}

func main() {
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	p := pick(cfg)
	if err := build(cfg, p); err != nil {
		fmt.Fprintln(os.Stderr, "bench: build:", err)
		os.Exit(1)
	}
	if cfg.certs, err = certs.Write(cfg.bin); err != nil {
		fmt.Fprintln(os.Stderr, "bench: TLS certificate:", err)
		os.Exit(1)
	}
	var note string
	if p.proxy, note = proxyTLS(cfg.bin, p.proxies, p.proxy); note != "" {
		p.notes = append(p.notes, note)
	}
	if err := pinSelf(cfg.client); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	t, failures := run(cfg, p)
	g := runGather(cfg)
	failures += g.failures
	out := preamble(cfg, append(p.notes, g.notes...))
	if len(p.server) > 0 {
		out += "\n" + t.servers.Markdown()
	}
	if len(p.client) > 0 {
		out += "\n" + clientPreamble(cfg) + "\n" + t.clients.Markdown()
	}
	if len(p.proxy) > 0 {
		secure := slices.ContainsFunc(p.proxy, func(sh shape) bool { return sh.tls })
		out += "\n" + proxyPreamble(cfg, secure) + "\n" + t.proxies.Markdown()
	}
	if len(p.tls) > 0 {
		out += "\n" + tlsPreamble(cfg, tlsStacks(cfg.stacks), t.seen) + "\n" + t.tls.Markdown()
	}
	if len(p.udp) > 0 {
		out += "\n" + udpPreamble(cfg) + "\n" + t.udp.Markdown()
	}
	out += g.out
	if len(p.http) > 0 {
		out += "\n" + httpPreamble(cfg, p.wrk, p.http) + "\n" + t.http.Markdown()
	}
	fmt.Print(out)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(out), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if failures > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d measurements failed: a server or client broke\n", failures)
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
	stackList := flag.String("stacks", "all", "comma-separated stacks to run: sluice,sluice-uring,gnet,evio,nbio,netpoll,std,C-floor,C-uring,C-floor-UDP (the UDP table's: sluice, sluice-uring, gnet and C-floor-UDP; the TLS table's: sluice, sluice-uring, nbio and std, its crypto/tls column), proxies: haproxy,haproxy-splice,sluice-proxy,sluice-proxy-uring, and HTTP servers: net/http,fasthttp,nbhttp,sluicehttp,sluicehttp-inline,sluicehttp-uring,examples/http")
	flag.IntVar(&cfg.idle, "idle", 0, "before each measurement wait, up to a minute, until the measured CPUs are this `percent` idle (for a machine other work shares)")
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
	if cfg.stacks, cfg.proxies, cfg.https, err = selectStacks(*stackList); err != nil {
		return cfg, err
	}
	if cfg.server, err = parseCPUs(*serverCPUs); err != nil {
		return cfg, err
	}
	if cfg.client, err = parseCPUs(*clientCPUs); err != nil {
		return cfg, err
	}
	switch {
	case cfg.bin == "" || flag.NArg() > 0 || cfg.rounds < 1 || cfg.idle < 0 || cfg.idle > 100:
		return cfg, errors.New("usage: bench -bin DIR [flags]; see -h")
	case cfg.server.overlaps(cfg.client):
		return cfg, fmt.Errorf("%w: server and client CPUs overlap", errCPUList)
	}
	return cfg, nil
}

// build compiles the chosen servers and the load generator with go, and the
// C floors with gcc, into cfg.bin; for the client-side rows, the chosen
// stacks' dialing clients into cfg.bin/clients and the C floor they dial;
// for the proxy rows, examples/proxy from the root module and the C floor
// it relays to; for the HTTP rows, the HTTP servers (examples/http from
// the root module) and cmd/httpidle.
func build(cfg config, p picked) error {
	goArgs := []string{"build", "-o", cfg.bin + "/", "./cmd/loadgen"}
	cSources := map[string]string{}
	for _, st := range cfg.stacks {
		if st.pkg == "" {
			cSources[st.binary()] = st.c
		} else if !slices.Contains(goArgs, st.pkg) {
			goArgs = append(goArgs, st.pkg)
		}
	}
	var rootPkgs []string // the root module's, built with its go.mod
	if len(p.http) > 0 {
		goArgs = append(goArgs, "./cmd/httpidle")
		for _, st := range cfg.https {
			switch {
			case st.root && !slices.Contains(rootPkgs, st.pkg):
				rootPkgs = append(rootPkgs, st.pkg)
			case !st.root && !slices.Contains(goArgs, st.pkg):
				goArgs = append(goArgs, st.pkg)
			}
		}
	}
	builds := [][]string{goArgs}
	if len(p.client) > 0 {
		cSources[floor.binary()] = floor.c
		clientArgs := []string{"build", "-o", filepath.Join(cfg.bin, clientDir) + "/"}
		for _, st := range clientStacks(cfg.stacks) {
			if !slices.Contains(clientArgs, st.client) {
				clientArgs = append(clientArgs, st.client)
			}
		}
		builds = append(builds, clientArgs)
	}
	if len(p.proxy) > 0 {
		cSources[floor.binary()] = floor.c
		if slices.ContainsFunc(p.proxies, func(s proxyStack) bool { return !s.haproxy }) {
			rootPkgs = append(rootPkgs, proxyPkg)
		}
	}
	if len(rootPkgs) > 0 {
		bin, err := filepath.Abs(cfg.bin)
		if err != nil {
			return err
		}
		// -C: the root module, whose go.mod these are built with.
		builds = append(builds, append([]string{"build", "-C", "..", "-o", bin + "/"}, rootPkgs...))
	}
	for bin, src := range cSources {
		gcc := exec.Command("gcc", "-O2", "-Wall", "-o", filepath.Join(cfg.bin, bin), src)
		if out, err := gcc.CombinedOutput(); err != nil {
			return fmt.Errorf("gcc %s: %v: %s", src, err, out)
		}
	}
	for _, args := range builds {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// picked is what a run measures: the server-side shapes, the client-side
// ones, the proxy shapes and the proxies that can run here, and notes on
// what it leaves out.
type picked struct {
	server  []shape
	client  []clientShape
	proxy   []shape
	proxies []proxyStack
	tls     []shape
	udp     []shape
	http    []httpShape
	wrk     string // wrk's version, for the HTTP table's preamble
	notes   []string
}

// pick chooses the shapes cfg asks for that this machine can measure.
func pick(cfg config) picked {
	timing := fullTiming
	if cfg.quick {
		timing = quickTiming
	}
	var p picked
	perfErr := syscount.Available()
	if perfErr != nil {
		p.notes = append(p.notes, fmt.Sprintf("System call rows skipped: %v.", perfErr))
	}
	for _, sh := range shapes(timing) {
		if len(serverStacks(cfg.stacks)) > 0 && (!sh.perf || perfErr == nil) && matches(sh.name, cfg.only) {
			p.server = append(p.server, sh)
		}
	}
	if len(clientStacks(cfg.stacks)) > 0 {
		for _, sh := range clientShapes(timing) {
			if matches(sh.name, cfg.only) {
				p.client = append(p.client, sh)
			}
		}
	}
	full := !cfg.quick && cfg.only == ""
	if len(tlsStacks(cfg.stacks)) > 0 {
		if full {
			p.notes = append(p.notes, "The TLS table is left out of the full run; -only tls runs it.")
		} else {
			for _, sh := range tlsShapes(timing) {
				if matches(sh.name, cfg.only) {
					p.tls = append(p.tls, sh)
				}
			}
		}
	}
	if len(udpStacks(cfg.stacks)) > 0 {
		if full {
			p.notes = append(p.notes, "The UDP table is left out of the full run; -only udp runs it.")
		} else {
			for _, sh := range udpShapes(timing) {
				if (!sh.perf || perfErr == nil) && matches(sh.name, cfg.only) {
					p.udp = append(p.udp, sh)
				}
			}
		}
	}
	p.http, p.wrk, p.notes = pickHTTP(cfg, timing, perfErr == nil, full, p.notes)
	var note string
	if p.proxies, note = availableProxies(cfg.proxies); note != "" {
		p.notes = append(p.notes, note)
	}
	if len(p.proxies) == 0 {
		return p
	}
	if full {
		p.notes = append(p.notes, "The proxy table is left out of the full run; -only proxy runs it.")
		return p
	}
	for _, sh := range proxyShapes(timing) {
		if (!sh.perf || perfErr == nil) && matches(sh.name, cfg.only) {
			p.proxy = append(p.proxy, sh)
		}
	}
	return p
}

// tables are a run's results: the server-side table, the client-side one
// and the proxies'.
type tables struct {
	servers, clients, proxies, tls, udp, http *table.Table
	seen                                      *tlsSeen // what the TLS rows negotiated
}

// run takes every measurement and returns the tables and how many
// measurements failed.
func run(cfg config, p picked) (t tables, failures int) {
	servers := serverStacks(cfg.stacks)
	t.servers = table.New(base, names(servers))
	for _, sh := range p.server { // rows in shape order; B-14 comes last, as its figures do
		for _, r := range sh.rows {
			if r.name != allocsRow {
				t.servers.AddRow(r.name)
			}
		}
	}
	dialers := clientStacks(cfg.stacks)
	t.clients = table.New(base, names(dialers))
	for _, sh := range p.client {
		for _, r := range sh.rows {
			if r.name == sh.ratioRow {
				t.clients.AddRatioRow(r.name)
			} else {
				t.clients.AddRow(r.name)
			}
		}
	}
	t.proxies = newProxyTable(p.proxy, p.proxies)
	secure := tlsStacks(cfg.stacks)
	t.tls = newTable(tlsBase, tlsColumns(secure), p.tls, func(sh shape) []row { return sh.rows })
	t.seen = newTLSSeen()
	datagrams := udpStacks(cfg.stacks)
	t.udp = newUDPTable(p.udp, datagrams)
	t.http = newHTTPTable(p.http, cfg.https)
	for round := range cfg.rounds {
		for _, sh := range p.server {
			for i := range servers {
				st := servers[(i+round)%len(servers)]
				failures += record(cfg, t.servers, round, sh.name, st.name, sh.rows, func() (measurement, error) { return measureOne(cfg, st, sh) })
			}
		}
		for _, sh := range p.client {
			for i := range dialers {
				st := dialers[(i+round)%len(dialers)]
				failures += record(cfg, t.clients, round, sh.name, st.name, sh.rows, func() (measurement, error) { return sh.measure(cfg, st, round) })
			}
		}
		for _, sh := range p.proxy {
			for i := range p.proxies {
				st := p.proxies[(i+round)%len(p.proxies)]
				if st.largeOnly && !sh.large {
					continue
				}
				failures += record(cfg, t.proxies, round, sh.name, st.name, sh.rows, func() (measurement, error) { return measureProxy(cfg, st, sh) })
			}
		}
		for _, sh := range p.tls {
			for i := range secure {
				st := secure[(i+round)%len(secure)]
				failures += record(cfg, t.tls, round, sh.name, st.tls, sh.rows, func() (measurement, error) {
					m, err := measureOne(cfg, st, sh)
					if err == nil {
						t.seen.note(st.tls, sh, m.load)
					}
					return m, err
				})
			}
		}
		for _, sh := range p.udp {
			for i := range datagrams {
				st := datagrams[(i+round)%len(datagrams)]
				failures += record(cfg, t.udp, round, sh.name, st.udp, sh.rows, func() (measurement, error) { return measureOne(cfg, st, sh) })
			}
		}
		for _, sh := range p.http {
			for i := range cfg.https {
				st := cfg.https[(i+round)%len(cfg.https)]
				failures += record(cfg, t.http, round, sh.name, st.name, sh.rows, func() (measurement, error) { return measureHTTP(cfg, st, sh) })
			}
		}
	}
	return t, failures
}

// record takes one measurement, logs it, and adds its figures to t under
// stack; it returns 1 if the measurement failed.
func record(cfg config, t *table.Table, round int, shape, stack string, rows []row, measure func() (measurement, error)) int {
	if cfg.idle > 0 {
		if idle, waited, err := waitIdle(cfg.cpus(), cfg.idle); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -idle:", err)
		} else if idle < cfg.idle {
			fmt.Fprintf(os.Stderr, "round %d, %s, %s: CPUs only %d%% idle after %v; measuring anyway\n", round+1, shape, stack, idle, waited.Round(time.Second))
		}
	}
	start := time.Now()
	m, err := measure()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL round %d, %s, %s: %v\n", round+1, shape, stack, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "round %d, %-17s %-8s %s (%.1f s)\n",
		round+1, shape, stack, summary(m), time.Since(start).Seconds())
	for _, r := range rows {
		if v, ok := r.value(m); ok {
			t.Add(r.name, stack, round, v)
		}
	}
	return 0
}

func names(list []stack) []string {
	n := make([]string, len(list))
	for i, st := range list {
		n[i] = st.name
	}
	return n
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

// measureOne runs shape sh on a fresh server of stack st, over TLS if sh
// says so.
func measureOne(cfg config, st stack, sh shape) (measurement, error) {
	var more []string
	if sh.tls {
		more, sh.args = cfg.serverTLS(), cfg.clientTLS(sh.args)
	}
	start := func() (*server, error) { return startServer(st, cfg.bin, cfg.server, more...) }
	if sh.udp {
		start = func() (*server, error) { return startUDPServer(st, cfg.bin, cfg.server, sh.server...) }
	}
	srv, err := start()
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
	return loadgen(context.Background(), cfg, srv.pid(), append([]string{"-addr", srv.addr}, sh.args...), nil)
}

// loadgen runs cmd/loadgen pinned to the client CPUs with args, measuring
// process pid, with files as its descriptors 3 on, and returns its report.
func loadgen(ctx context.Context, cfg config, pid int, args []string, files []*os.File) (measure.Report, error) {
	args = append([]string{"-c", cfg.client.spec, filepath.Join(cfg.bin, "loadgen"),
		"-pid", fmt.Sprint(pid), "-workers", cfg.client.n()}, args...)
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "taskset", args...)
	cmd.Env = append(cmd.Environ(), "GOMAXPROCS="+cfg.client.n())
	cmd.ExtraFiles = files
	return report(cmd, errLoad, errLoadError)
}

// report runs cmd, which prints a measure.Report as one line of JSON, and
// returns it.
// It fails with errRun if cmd fails and with errSaw if the report counts
// errors.
func report(cmd *exec.Cmd, errRun, errSaw error) (measure.Report, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return measure.Report{}, fmt.Errorf("%w: %v: %s", errRun, err, stderr.String())
	}
	// The report is the last line: some stacks log to standard output.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r measure.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return r, fmt.Errorf("%w: %v: %s", errRun, err, out)
	}
	if r.Errors.Total() > 0 {
		return r, fmt.Errorf("%w: %+v", errSaw, r.Errors)
	}
	return r, nil
}

// summary is one measurement's progress line.
func summary(m measurement) string {
	l := m.load
	switch {
	case l.Mode == "dials":
		return fmt.Sprintf("%s dials/s, %s µs CPU/dial, C floor %s µs CPU/dial", table.Format(l.Rate), table.Format(l.CPUPerRT), table.Format(m.floorCPU))
	case m.accepted != nil:
		return fmt.Sprintf("dialed: %s/s, p50 %s µs, p99 %s µs, %s µs CPU/rt; accepted: %s/s, p50 %s µs, p99 %s µs, %s µs CPU/rt",
			table.Format(l.Rate), table.Format(l.P50), table.Format(l.P99), table.Format(l.CPUPerRT),
			table.Format(m.accepted.Rate), table.Format(m.accepted.P50), table.Format(m.accepted.P99), table.Format(m.accepted.CPUPerRT))
	}
	switch l.Mode {
	case "memory":
		if l.ThenSize > 0 {
			return fmt.Sprintf("%s B/conn, after %s B more %s B/conn", table.Format(l.PerConn), table.Format(float64(l.ThenSize)), table.Format(l.ThenPerConn))
		}
		return fmt.Sprintf("%s B/conn", table.Format(l.PerConn))
	case "handshakes":
		return fmt.Sprintf("%s/s, p50 %s µs, %s µs CPU/handshake, %s resumed", table.Format(l.Rate), table.Format(l.P50), table.Format(l.CPUPerRT), table.Format(float64(l.Resumed)))
	case "syscalls":
		return fmt.Sprintf("%s syscalls/rt, %s µs CPU/rt", table.Format(l.PerRT), table.Format(l.CPUPerRT))
	case "loss":
		return lossSummary(l)
	case "wrk":
		s := fmt.Sprintf("%s requests/s, p99 %s µs, %s µs CPU/request", table.Format(l.Rate), table.Format(l.P99), table.Format(l.CPUPerRT))
		if l.PerRT > 0 {
			s += fmt.Sprintf(", %s syscalls/request", table.Format(l.PerRT))
		}
		return s
	}
	if l.Lost > 0 || l.Late > 0 {
		return lossSummary(l)
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
