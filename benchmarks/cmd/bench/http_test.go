package main

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/measure"
)

func TestHTTPStacks(t *testing.T) {
	assert.Equal(t, httpBase, httpStacks[0].name)
	assert.Equal(t, []string{"net/http", "fasthttp", "nbhttp", "sluicehttp", "sluicehttp-inline", "sluicehttp-uring", "examples/http", "examples/http-handler"}, httpColumns(httpStacks))
	for _, st := range httpStacks {
		if st.root {
			assert.Equal(t, httpExample, st.pkg)
			assert.Equal(t, "tcp://", st.scheme, "examples/http takes a Sluice address")
		}
	}
}

func TestHTTPShapes(t *testing.T) {
	names, rows := map[string]bool{}, map[string]bool{}
	full := httpShapes(fullTiming, true)
	for _, sh := range full {
		assert.True(t, matches(sh.name, "http"), "-only http picks %q", sh.name)
		assert.False(t, names[sh.name], "shape %q twice", sh.name)
		names[sh.name] = true
		for _, r := range sh.rows {
			assert.False(t, rows[r.name], "row %q twice", r.name)
			rows[r.name] = true
		}
		assert.False(t, sh.quick)
		if sh.idle == 0 {
			assert.Equal(t, 1, sh.warm, sh.name)
			assert.Equal(t, 2, sh.window, sh.name)
		}
	}
	assert.True(t, rows["Plaintext, 100 conns: syscalls/request"])
	assert.True(t, rows["10,000 idle keep-alive conns: resident B/conn"])
	assert.Equal(t, 1, full[0].syscalls, "a run of its own")
	assert.True(t, slices.ContainsFunc(full, func(sh httpShape) bool { return sh.pipeline == httpPipeline }))

	others := append(append(shapes(fullTiming), proxyShapes(fullTiming)...), tlsShapes(fullTiming)...)
	for _, sh := range others {
		assert.False(t, matches(sh.name, "http"), "-only http would pick %q", sh.name)
	}
	for _, sh := range clientShapes(fullTiming) {
		assert.False(t, matches(sh.name, "http"), "-only http would pick %q", sh.name)
	}

	noPerf := httpShapes(fullTiming, false)
	assert.Zero(t, noPerf[0].syscalls)
	assert.Len(t, noPerf[0].rows, 2, "no syscalls row without perf")

	quick := httpShapes(quickTiming, true)
	var quickNames []string
	for _, sh := range quick {
		assert.True(t, sh.quick)
		assert.Zero(t, sh.warm)
		quickNames = append(quickNames, sh.name)
	}
	assert.Equal(t, []string{"http plaintext 100 conns", "http plaintext pipelined", "http memory"}, quickNames)
	assert.Equal(t, -1, quick[0].syscalls, "counted over the window")
	assert.Equal(t, 1000, quick[2].idle)
}

func TestPickHTTP(t *testing.T) {
	cfg := config{https: httpStacks}
	picked, _, notes := pickHTTP(cfg, fullTiming, true, true, nil)
	assert.Empty(t, picked, "the full run leaves the table out")
	assert.Equal(t, []string{"The HTTP table is left out of the full run; -only http runs it."}, notes)

	cfg.only = "json,memory"
	picked, version, notes := pickHTTP(cfg, fullTiming, true, false, nil)
	if _, err := exec.LookPath("wrk"); err != nil {
		require.Len(t, picked, 1)
		assert.Equal(t, "http memory", picked[0].name, "the memory row needs no wrk")
		assert.Len(t, notes, 1)
		return
	}
	assert.Empty(t, notes)
	assert.Contains(t, version, "wrk")
	require.Len(t, picked, 2)
	assert.Equal(t, "http json 100 conns", picked[0].name)
	assert.Equal(t, "http memory", picked[1].name)

	cfg.https = nil
	picked, _, _ = pickHTTP(cfg, fullTiming, true, false, nil)
	assert.Empty(t, picked, "no HTTP servers chosen")
}

func TestWrkScript(t *testing.T) {
	assert.Equal(t, wrkDone, wrkScript(1))
	s := wrkScript(16)
	assert.True(t, strings.HasPrefix(s, "local depth = 16\n"))
	assert.Contains(t, s, "r[i] = wrk.format()")
	assert.Contains(t, s, "request = function()\n  return batch\nend")
	assert.True(t, strings.HasSuffix(s, wrkDone))
}

func TestParseWrk(t *testing.T) {
	out := []byte("Running 1s test @ http://127.0.0.1:1/plaintext\n  1 threads and 100 connections\n" +
		`{"requests":5000,"duration_us":1000000,"bytes":600000,"connect":0,"read":0,"write":0,"status":0,"timeout":0,"p99_us":900}` + "\n")
	r, err := parseWrk(out)
	require.NoError(t, err)
	assert.Equal(t, wrkResult{Requests: 5000, DurationUS: 1000000, Bytes: 600000, P99: 900}, r)

	for _, bad := range []string{
		`{"requests":5000,"duration_us":1000000,"bytes":1,"connect":0,"read":0,"write":0,"status":3,"timeout":0,"p99_us":1}`,
		`{"requests":5000,"duration_us":1000000,"bytes":1,"connect":1,"read":0,"write":0,"status":0,"timeout":0,"p99_us":1}`,
		`{"requests":5000,"duration_us":1000000,"bytes":1,"connect":0,"read":2,"write":0,"status":0,"timeout":0,"p99_us":1}`,
		`{"requests":5000,"duration_us":1000000,"bytes":1,"connect":0,"read":0,"write":0,"status":0,"timeout":4,"p99_us":1}`,
		`{"requests":0,"duration_us":1000000,"bytes":0,"connect":0,"read":0,"write":0,"status":0,"timeout":0,"p99_us":0}`,
	} {
		_, err := parseWrk([]byte(bad + "\n"))
		assert.ErrorIs(t, err, errWrkSaw, bad)
	}
	_, err = parseWrk([]byte("unable to connect to 127.0.0.1:1 Connection refused\n"))
	assert.ErrorIs(t, err, errLoad)
}

// TestWrk runs wrk, pipelined as the table runs it, against net/http
// serving the shared handler, then against one that answers 500.
func TestWrk(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip(err)
	}
	client, err := parseCPUs("0")
	require.NoError(t, err)
	cfg := config{bin: t.TempDir(), client: client}
	script, err := writeWrkScript(cfg.bin, httpPipeline)
	require.NoError(t, err)
	count := func(h http.Handler) (int64, error) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		w := wrkRun{cfg: cfg, addr: srv.Listener.Addr().String(), sh: httpShape{path: hello.PlaintextPath, conns: 4}, script: script}
		res, err := w.run(1)
		return res.Requests, err
	}
	n, err := count(hello.Handler)
	require.NoError(t, err)
	assert.Positive(t, n)

	_, err = count(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) }))
	assert.ErrorIs(t, err, errWrkSaw)
}

func TestHTTPPreamble(t *testing.T) {
	server, _ := parseCPUs("0")
	client, _ := parseCPUs("1")
	cfg := config{server: server, client: client}
	full := httpPreamble(cfg, "wrk 4.1.0", httpShapes(fullTiming, true))
	assert.Contains(t, full, "wrk runs 1 s to warm the server up, then the 2 s window")
	assert.Contains(t, full, "over a 1 s run of its own")
	assert.Contains(t, full, "opens 10,000 keep-alive connections")
	assert.Contains(t, full, "Pipelined: every write carries 16 requests")
	quick := httpPreamble(cfg, "wrk 4.1.0", httpShapes(quickTiming, true))
	assert.Contains(t, quick, "with no warm-up")
	assert.Contains(t, quick, "over the window itself")
	assert.Contains(t, quick, "-quick leaves the 1,000-connection and JSON rows out.")
	memory := httpPreamble(cfg, "wrk 4.1.0", httpShapes(fullTiming, true)[4:])
	assert.NotContains(t, memory, "wrk runs", "the memory row alone runs no wrk")
	assert.NotContains(t, memory, "syscalls/request")
	noMemory := httpPreamble(cfg, "wrk 4.1.0", httpShapes(fullTiming, true)[:2])
	assert.NotContains(t, noMemory, "Memory:")
	assert.NotContains(t, noMemory, "Pipelined:")
}

func TestHTTPSummary(t *testing.T) {
	s := summary(measurement{load: measure.Report{Mode: "wrk", Rate: 100000, P99: 900, CPUPerRT: 9.5, PerRT: 2.25}})
	assert.Equal(t, "100,000 requests/s, p99 900 µs, 9.50 µs CPU/request, 2.25 syscalls/request", s)
}
