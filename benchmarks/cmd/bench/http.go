package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/proc"
	"github.com/sluicenet/sluice/benchmarks/syscount"
	"github.com/sluicenet/sluice/benchmarks/table"
)

// The HTTP rows measure HTTP servers in a table of their own, every ratio
// to net/http's: each answers the TechEmpower plaintext and JSON tests
// (internal/hello), all but fasthttp with the same http.Handler. For each
// measurement the runner starts a fresh server pinned to the server CPUs,
// checks both of its answers (hello.Check: wrk counts statuses and socket
// errors, not bodies), runs wrk pinned to the client CPUs, one thread per
// CPU, first to warm the server up, then over the measured window, and
// reads the server's CPU time around that window. The memory row has
// cmd/httpidle hold idle keep-alive connections instead.

// httpBase is the stack every ratio in the HTTP table is to.
const httpBase = "net/http"

// An httpStack is one HTTP server the HTTP table compares. Each takes
// -addr and -loops, and stops gracefully on SIGTERM.
type httpStack struct {
	name  string
	pkg   string   // Go package to build
	root  bool     // pkg is the root module's, built with its go.mod
	flags []string // further flags, so one package serves two columns
	// scheme prefixes -addr's host:port: examples/http takes tcp://.
	scheme string
}

// httpExample is examples/http, the TechEmpower example, built from the
// root module: go build names it "http" in -bin.
const httpExample = "./examples/http"

// httpStacks lists every HTTP server, in the HTTP table's column order.
var httpStacks = []httpStack{
	{name: "net/http", pkg: "./servers/nethttp"},
	{name: "fasthttp", pkg: "./servers/fasthttp"},
	{name: "nbhttp", pkg: "./servers/nbhttp"},
	{name: "sluicehttp", pkg: "./servers/sluicehttp"},
	{name: "sluicehttp-inline", pkg: "./servers/sluicehttp", flags: []string{"-inline"}},
	{name: "sluicehttp-uring", pkg: "./servers/sluicehttp", flags: []string{"-poller", "uring"}},
	{name: "examples/http", pkg: httpExample, root: true, scheme: "tcp://"},
	{name: "examples/http-handler", pkg: httpExample, root: true, scheme: "tcp://", flags: []string{"-below=false"}},
}

// An httpShape is one measurement the runner takes of every HTTP server in
// every round.
type httpShape struct {
	name     string
	path     string // what wrk asks for
	conns    int
	pipeline int // requests per write; 1: one at a time
	// warm and window are wrk's runs before and over the measured window
	// (whole seconds, as wrk takes them); warm 0: none.
	warm, window int
	// syscalls, when above 0, is a run of that many seconds between the
	// warm-up and the window, with the server's system calls counted
	// (perf): a run of its own, since counting costs the server CPU.
	// Below 0, they are counted over the window itself (-quick, whose
	// figures are a smoke test's).
	syscalls int
	quick    bool // -quick: a smoke test's single round, shorter and fewer rows
	// idle, when above 0, makes this the memory row: that many idle
	// keep-alive connections (cmd/httpidle), and no wrk.
	idle int
	rows []row
}

// httpPipeline is how many requests the pipelined row's writes carry.
const httpPipeline = 16

// httpShapes returns the HTTP table's measurements, in the order it lists
// their rows; perf says whether system calls can be counted here.
func httpShapes(t timing, perf bool) []httpShape {
	one := func(name, path string, conns, pipeline int, label string) httpShape {
		return httpShape{name: name, path: path, conns: conns, pipeline: pipeline, warm: t.httpWarm, window: t.httpWindow,
			rows: []row{{label + ": requests/s", rate}, {label + ": server CPU µs/request", cpu}}}
	}
	plain := one("http plaintext 100 conns", hello.PlaintextPath, 100, 1, "Plaintext, 100 conns")
	if perf {
		plain.syscalls = t.httpCount
		plain.rows = append(plain.rows, row{"Plaintext, 100 conns: syscalls/request", syscalls})
	}
	idle := table.Format(float64(t.httpIdle))
	list := []httpShape{
		plain,
		one("http plaintext 1,000 conns", hello.PlaintextPath, 1000, 1, "Plaintext, 1,000 conns"),
		one("http plaintext pipelined", hello.PlaintextPath, 100, httpPipeline, fmt.Sprintf("Plaintext, 100 conns, pipelined %d deep", httpPipeline)),
		one("http json 100 conns", hello.JSONPath, 100, 1, "JSON, 100 conns"),
		{name: "http memory", idle: t.httpIdle, rows: []row{
			{idle + " idle keep-alive conns: resident B/conn", perConn},
		}},
	}
	if t.httpCount == 0 { // -quick: every server, in as few runs as show each way of asking
		// hello.Check asks /json of every server before it is measured.
		list = slices.DeleteFunc(list, func(sh httpShape) bool { return sh.conns > 100 || sh.path == hello.JSONPath })
		for i := range list {
			list[i].quick = true
		}
		if perf {
			list[0].syscalls = -1
		}
	}
	return list
}

// httpColumns returns the HTTP table's columns for list.
func httpColumns(list []httpStack) []string {
	return columns(list, func(s httpStack) string { return s.name })
}

// newHTTPTable returns the HTTP table for shapes and stacks, its rows in
// shape order.
func newHTTPTable(shapes []httpShape, list []httpStack) *table.Table {
	return newTable(httpBase, httpColumns(list), shapes, func(sh httpShape) []row { return sh.rows })
}

// errNoWrk reports that wrk is not installed.
var errNoWrk = errors.New("wrk not found (Debian package wrk)")

// wrkAvailable reports whether wrk can run here, and its version line.
func wrkAvailable() (string, error) {
	if _, err := exec.LookPath("wrk"); err != nil {
		return "", errNoWrk
	}
	// -v prints the version, then the usage, and exits 1.
	out, _ := exec.Command("wrk", "-v").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	version, _, _ := strings.Cut(line, " Copyright")
	return strings.TrimSpace(version), nil
}

// startHTTP starts st pinned to the server CPUs and waits until its port
// accepts connections.
func startHTTP(cfg config, st httpStack) (*server, error) {
	return startListening(func(addr string) (*server, error) {
		return launch(stack{name: st.name, pkg: st.pkg, loops: true, flags: st.flags}, cfg.bin, cfg.server, "-addr", st.scheme+addr)
	})
}

// measureHTTP runs shape sh on a fresh server of stack st.
func measureHTTP(cfg config, st httpStack, sh httpShape) (measurement, error) {
	srv, err := startHTTP(cfg, st)
	if err != nil {
		return measurement{}, err
	}
	load, loadErr := loadHTTP(cfg, srv, sh)
	// examples/http prints no report: the runner reads none.
	if err := errors.Join(loadErr, srv.halt()); err != nil {
		return measurement{}, err
	}
	return measurement{load: load}, nil
}

// loadHTTP checks srv's answers, then takes shape sh's figures.
func loadHTTP(cfg config, srv *server, sh httpShape) (measure.Report, error) {
	if err := hello.Check("http://" + srv.addr); err != nil {
		return measure.Report{}, err
	}
	if sh.idle > 0 {
		return httpIdle(cfg, srv, sh.idle)
	}
	script, err := writeWrkScript(cfg.bin, sh.pipeline)
	if err != nil {
		return measure.Report{}, err
	}
	w := wrkRun{cfg: cfg, addr: srv.addr, sh: sh, script: script}
	if sh.warm > 0 {
		if _, err := w.run(sh.warm); err != nil {
			return measure.Report{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	r := measure.Report{Mode: "wrk", Conns: sh.conns}
	if sh.syscalls > 0 {
		if r.PerRT, _, err = w.countSyscalls(srv.pid(), sh.syscalls); err != nil {
			return r, fmt.Errorf("syscalls: %w", err)
		}
	}
	cpu0, err := proc.CPUTime(srv.pid())
	if err != nil {
		return r, err
	}
	var res wrkResult
	if sh.syscalls < 0 {
		r.PerRT, res, err = w.countSyscalls(srv.pid(), sh.window)
	} else {
		res, err = w.run(sh.window)
	}
	if err != nil {
		return r, err
	}
	cpu1, err := proc.CPUTime(srv.pid())
	if err != nil {
		return r, err
	}
	r.RoundTrips, r.Total = res.Requests, res.Requests
	r.Seconds = float64(res.DurationUS) / 1e6
	r.Rate = float64(res.Requests) / r.Seconds
	r.P99 = res.P99
	r.CPUPerRT = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(res.Requests)
	return r, nil
}

// httpIdle runs cmd/httpidle pinned to the client CPUs: conns idle
// keep-alive connections to srv, each having made one request.
func httpIdle(cfg config, srv *server, conns int) (measure.Report, error) {
	cmd := exec.Command("taskset", "-c", cfg.client.spec, filepath.Join(cfg.bin, "httpidle"),
		"-addr", srv.addr, "-pid", strconv.Itoa(srv.pid()), "-conns", strconv.Itoa(conns))
	return report(cmd, errLoad, errLoadError)
}

// wrkTimeout is wrk's own bound on a request's answer: past it, wrk counts
// a timeout, which fails the measurement. No server on this machine comes
// near it.
const wrkTimeout = "10s"

// wrkRun is wrk's command line for one shape against one server.
type wrkRun struct {
	cfg    config
	addr   string
	sh     httpShape
	script string
}

// args returns wrk's command line, behind taskset's, for a run of secs
// seconds.
func (w wrkRun) args(secs int) []string {
	return []string{"-c", w.cfg.client.spec, "wrk", "-t", w.cfg.client.n(), "-c", strconv.Itoa(w.sh.conns),
		"-d", strconv.Itoa(secs) + "s", "--timeout", wrkTimeout, "-s", w.script, "http://" + w.addr + w.sh.path}
}

// run runs wrk for secs seconds and returns what it counted; any error it
// counted (a connection refused or reset, a status other than 2xx or 3xx,
// a timeout) fails the run.
func (w wrkRun) run(secs int) (wrkResult, error) {
	cmd := exec.Command("taskset", w.args(secs)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return wrkResult{}, fmt.Errorf("%w: wrk: %v: %s", errLoad, err, stderr.Bytes())
	}
	return parseWrk(out)
}

// countSyscalls runs wrk for secs seconds with the server's system calls
// counted, and returns them per request, and wrk's counts.
func (w wrkRun) countSyscalls(pid, secs int) (float64, wrkResult, error) {
	c, err := syscount.Start(pid)
	if err != nil {
		return 0, wrkResult{}, err
	}
	if err := c.Enable(); err != nil {
		c.Stop()
		return 0, wrkResult{}, err
	}
	res, runErr := w.run(secs)
	if err := c.Disable(); err != nil {
		c.Stop()
		return 0, res, err
	}
	calls, err := c.Stop()
	if err := errors.Join(runErr, err); err != nil {
		return 0, res, err
	}
	return float64(calls) / float64(res.Requests), res, nil
}

// wrkResult is what the script's done function prints: wrk's own counts.
type wrkResult struct {
	Requests   int64   `json:"requests"`
	DurationUS int64   `json:"duration_us"`
	Bytes      int64   `json:"bytes"`
	Connect    int64   `json:"connect"` // connections that could not be opened
	Read       int64   `json:"read"`    // read errors: resets, closes mid-answer
	Write      int64   `json:"write"`
	Status     int64   `json:"status"` // answers with a status of 400 or more
	Timeout    int64   `json:"timeout"`
	P99        float64 `json:"p99_us"`
}

// errWrkSaw reports a wrk run that counted errors, or no answers.
var errWrkSaw = errors.New("wrk saw errors")

// parseWrk finds the done function's line in wrk's output and checks it.
func parseWrk(out []byte) (wrkResult, error) {
	var r wrkResult
	i := bytes.LastIndex(out, []byte(`{"requests":`))
	if i < 0 {
		return r, fmt.Errorf("%w: no summary in wrk's output: %s", errLoad, out)
	}
	line, _, _ := bytes.Cut(out[i:], []byte("\n"))
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("%w: %v: %s", errLoad, err, line)
	}
	if r.Connect+r.Read+r.Write+r.Status+r.Timeout > 0 || r.Requests == 0 || r.DurationUS <= 0 {
		return r, fmt.Errorf("%w: %s", errWrkSaw, line)
	}
	return r, nil
}

// wrkDone is the Lua done function every script ends with: it prints
// wrk's counts as one line of JSON, which parseWrk reads.
const wrkDone = `done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(99)))
end
`

// wrkScript returns the Lua script for requests pipelined depth deep: for
// depth above 1, wrk's pipelining idiom, init building one string of depth
// requests (wrk.format, the URL's method and path) that request returns
// for each write; wrk counts each answer as a request.
func wrkScript(depth int) string {
	if depth <= 1 {
		return wrkDone
	}
	return fmt.Sprintf(`local depth = %d
local batch

init = function(args)
  local r = {}
  for i = 1, depth do
    r[i] = wrk.format()
  end
  batch = table.concat(r)
end

request = function()
  return batch
end

`, depth) + wrkDone
}

// writeWrkScript writes wrkScript(depth) into dir and returns its path.
func writeWrkScript(dir string, depth int) (string, error) {
	path := filepath.Join(dir, fmt.Sprintf("wrk-%d.lua", max(depth, 1)))
	return path, os.WriteFile(path, []byte(wrkScript(depth)), 0o644)
}

// httpPreamble says how the HTTP table was made.
func httpPreamble(cfg config, wrk string, shapes []httpShape) string {
	var warm, window, count, idle int
	quick, pipelined, inWindow := false, false, false
	for _, sh := range shapes {
		warm, window, count, idle = max(warm, sh.warm), max(window, sh.window), max(count, sh.syscalls), max(idle, sh.idle)
		quick, pipelined, inWindow = quick || sh.quick, pipelined || sh.pipeline > 1, inWindow || sh.syscalls < 0
	}
	method := []string{fmt.Sprintf("HTTP. Each server on CPUs %s (GOMAXPROCS %s, -loops %s), a fresh one for each measurement; %s on CPUs %s (-t %s). "+
		"Every server answers the TechEmpower plaintext and JSON tests: net/http, nbhttp and sluicehttp the same http.Handler, fasthttp its own RequestHandler, examples/http its own LoopHandler (examples/http-handler its own http.Handler); "+
		"each is checked before it is measured (status, body, Content-Type, Server and Date of both answers), and any error wrk counts (connect, read, write, a status of 400 or more, a timeout) fails the run.",
		cfg.server.spec, cfg.server.n(), cfg.server.n(), wrk, cfg.client.spec, cfg.client.n())}
	if window > 0 {
		warmUp := fmt.Sprintf("wrk runs %d s to warm the server up, then the %d s window", warm, window)
		if warm == 0 {
			warmUp = fmt.Sprintf("wrk runs the %d s window with no warm-up", window)
		}
		method = append(method, warmUp+": requests/s is wrk's count over its duration; server CPU µs/request is the server's CPU time over that run (schedstat, every thread) over wrk's count.")
	}
	if pipelined {
		method = append(method, fmt.Sprintf("Pipelined: every write carries %d requests (wrk's pipelining script).", httpPipeline))
	}
	switch {
	case inWindow:
		method = append(method, "syscalls/request: the server's system calls (perf) over the window itself, over wrk's count (-quick: a smoke test; perf's counting costs the server CPU).")
	case count > 0:
		method = append(method, fmt.Sprintf("syscalls/request: the server's system calls (perf) over a %d s run of its own between the two, over wrk's count.", count))
	}
	if idle > 0 {
		method = append(method, fmt.Sprintf("Memory: a separate client process (cmd/httpidle) opens %s keep-alive connections, each sends one GET /plaintext and reads its answer, and holds them idle: the server's VmRSS growth over the connections.",
			table.Format(float64(idle))))
	}
	if quick {
		method = append(method, "-quick leaves the 1,000-connection and JSON rows out.")
	}
	lines := []string{
		strings.Join(method, " "),
		fmt.Sprintf("Cells: median over rounds (median per-round ratio to %s, low–high). requests/s: higher is better; µs, syscalls and B: lower is better.", httpBase),
	}
	return strings.Join(lines, "\n") + "\n"
}

// pickHTTP returns the HTTP shapes cfg asks for that this machine can
// measure (perf: system calls can be counted; full: the full run, which
// leaves the table out), wrk's version, and notes with its own added.
func pickHTTP(cfg config, t timing, perf, full bool, notes []string) ([]httpShape, string, []string) {
	if len(cfg.https) == 0 {
		return nil, "", notes
	}
	if full {
		return nil, "", append(notes, "The HTTP table is left out of the full run; -only http runs it.")
	}
	var picked []httpShape
	for _, sh := range httpShapes(t, perf) {
		if matches(sh.name, cfg.only) {
			picked = append(picked, sh)
		}
	}
	if len(picked) == 0 {
		return nil, "", notes
	}
	wrk, err := wrkAvailable()
	if err != nil { // the memory row needs no wrk
		picked = slices.DeleteFunc(picked, func(sh httpShape) bool { return sh.idle == 0 })
		notes = append(notes, fmt.Sprintf("HTTP rows but the memory row skipped: %v.", err))
	}
	return picked, wrk, notes
}
