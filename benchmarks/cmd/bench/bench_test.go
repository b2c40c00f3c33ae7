package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/certs"
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
	all, allProxies, allHTTP, err := selectStacks("all")
	require.NoError(t, err)
	assert.Equal(t, stacks, all)
	assert.Equal(t, proxies, allProxies)
	assert.Equal(t, httpStacks, allHTTP)

	picked, pickedProxies, pickedHTTP, err := selectStacks("sluice-proxy,C-floor,gnet,haproxy,examples/http,net/http")
	require.NoError(t, err)
	assert.Equal(t, []string{"net/http", "examples/http"}, httpColumns(pickedHTTP))
	require.Len(t, picked, 2)
	assert.Equal(t, "gnet", picked[0].name, "table order, not the list's")
	assert.Equal(t, "C floor", picked[1].name)
	assert.Equal(t, []string{"haproxy", "sluice-proxy"}, proxyColumns(pickedProxies))

	_, _, _, err = selectStacks("gnet,nope")
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
	proxyRows := map[string]bool{} // a table of its own
	for _, sh := range proxyShapes(fullTiming) {
		assert.False(t, names[sh.name], "shape %q twice", sh.name)
		names[sh.name] = true
		assert.True(t, matches(sh.name, "proxy"), "-only proxy picks %q", sh.name)
		for _, r := range sh.rows {
			assert.False(t, proxyRows[r.name], "row %q twice", r.name)
			proxyRows[r.name] = true
		}
	}
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
	picked, _, _, err := selectStacks("evio,C-floor")
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

func TestProxies(t *testing.T) {
	assert.Equal(t, proxyBase, proxies[0].name)
	splice := proxies[slices.IndexFunc(proxies, func(p proxyStack) bool { return p.splice })]
	assert.True(t, splice.haproxy && splice.largeOnly)
	assert.True(t, slices.ContainsFunc(proxyShapes(quickTiming), func(sh shape) bool { return sh.large }),
		"the splice column has rows")

	conf := haproxyConfig(proxies[0], 1, "127.0.0.1:7000", "127.0.0.1:9000", "")
	for _, want := range []string{"nbthread 1\n", "mode tcp\n", "bind 127.0.0.1:7000\n", "server floor 127.0.0.1:9000\n"} {
		assert.Contains(t, conf, want)
	}
	assert.NotContains(t, conf, "splice")
	assert.NotContains(t, conf, "ssl")
	assert.Contains(t, haproxyConfig(splice, 2, "127.0.0.1:7000", "127.0.0.1:9000", ""), "option splice-auto\n")
	secure := haproxyConfig(proxies[0], 1, "127.0.0.1:7000", "127.0.0.1:9000", "/b/combined.pem")
	assert.Contains(t, secure, "bind 127.0.0.1:7000 ssl crt /b/combined.pem\n")
	assert.Contains(t, secure, "ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:")
}

func TestProxyTLS(t *testing.T) {
	bin := t.TempDir()
	all := proxyShapes(quickTiming)
	tlsRows := func(list []shape) int {
		return len(slices.DeleteFunc(slices.Clone(list), func(sh shape) bool { return !sh.tls }))
	}
	require.Positive(t, tlsRows(all))
	for _, sh := range all {
		if sh.tls {
			assert.True(t, matches(sh.name, "tls") && matches(sh.name, "proxy"), "-only tls and -only proxy pick %q", sh.name)
		}
	}

	// A stand-in examples/proxy whose -h lists the flags it has.
	fake := func(flags string) {
		script := "#!/bin/sh\necho 'Usage of proxy:\n  -backend value\n" + flags + "' >&2\nexit 2\n"
		require.NoError(t, os.WriteFile(filepath.Join(bin, "proxy"), []byte(script), 0o755))
	}
	fake("  -addr value")
	kept, note := proxyTLS(bin, proxies, slices.Clone(all))
	assert.Zero(t, tlsRows(kept), "no -tls-cert: no TLS rows")
	assert.Equal(t, len(all)-tlsRows(all), len(kept), "the others stay")
	assert.Contains(t, note, "-tls-cert")

	fake("  -tls-cert string\n  -tls-key string")
	kept, note = proxyTLS(bin, proxies, slices.Clone(all))
	assert.Equal(t, all, kept)
	assert.Empty(t, note)

	onlyHAProxy := proxies[:1]
	fake("  -addr value")
	kept, note = proxyTLS(bin, onlyHAProxy, slices.Clone(all))
	assert.Equal(t, all, kept, "HAProxy alone needs no examples/proxy")
	assert.Empty(t, note)
}

func TestTLSTable(t *testing.T) {
	secure := tlsStacks(stacks)
	assert.Equal(t, []string{"sluice", "sluice-uring", "nbio", "crypto/tls"}, tlsColumns(secure))
	assert.Contains(t, tlsColumns(secure), tlsBase)
	names, rows := map[string]bool{}, map[string]bool{}
	for _, sh := range tlsShapes(fullTiming) {
		assert.True(t, sh.tls, sh.name)
		assert.True(t, matches(sh.name, "tls"), "-only tls picks %q", sh.name)
		assert.False(t, names[sh.name], "shape %q twice", sh.name)
		names[sh.name] = true
		for _, r := range sh.rows {
			assert.False(t, rows[r.name], "row %q twice", r.name)
			rows[r.name] = true
		}
	}
	for _, sh := range append(shapes(fullTiming), proxyShapes(fullTiming)...) {
		assert.False(t, names[sh.name], "shape %q in two tables", sh.name)
		assert.False(t, sh.tls && !matches(sh.name, "proxy"), "%q: only proxy shapes outside the TLS table speak TLS", sh.name)
	}

	cfg := config{certs: certs.Files{Cert: "/b/cert.pem", Key: "/b/key.pem"}}
	assert.Equal(t, []string{"-tls-cert", "/b/cert.pem", "-tls-key", "/b/key.pem"}, cfg.serverTLS())
	args := []string{"-mode", "paced"}
	assert.Equal(t, []string{"-mode", "paced", "-tls-cert", "/b/cert.pem", "-tls-groups", tlsGroups}, cfg.clientTLS(args))
	assert.Equal(t, []string{"-mode", "paced"}, args, "the shape's own flags stay as they are")
	assert.Equal(t, []string{"-tls-groups", "default", "-tls-cert", "/b/cert.pem"}, cfg.clientTLS([]string{"-tls-groups", "default"}), "a shape's own key exchanges")

	seen := newTLSSeen()
	var resumed shape
	for _, sh := range tlsShapes(fullTiming) {
		if slices.Contains(sh.args, "-tls-resume") {
			resumed = sh
		}
	}
	require.NotEmpty(t, resumed.name)
	seen.note("sluice", resumed, measure.Report{TLS: "TLS 1.3 X", RoundTrips: 100, Resumed: 100})
	seen.note("sluice", resumed, measure.Report{TLS: "TLS 1.3 X", RoundTrips: 100, Resumed: 90})
	seen.note("nbio", tlsShapes(fullTiming)[0], measure.Report{TLS: "TLS 1.3 Y", RoundTrips: 100})
	seen.note("nbio", tlsShapes(fullTiming)[0], measure.Report{TLS: "TLS 1.3 Z", RoundTrips: 100})
	seen.note("nbio", tlsShapes(fullTiming)[0], measure.Report{TLS: "TLS 1.3 Y", RoundTrips: 100})
	pre := tlsPreamble(config{}, secure, seen)
	assert.Contains(t, pre, "Negotiated: sluice: TLS 1.3 X; nbio: TLS 1.3 Y, TLS 1.3 Z.")
	assert.Contains(t, pre, "lowest share of handshakes that resumed: sluice 90%.")
}

func TestTLSRows(t *testing.T) {
	byName := map[string]row{}
	for _, sh := range tlsShapes(quickTiming) {
		for _, r := range sh.rows {
			byName[r.name] = r
		}
	}
	then := byName["1,000 idle TLS conns after a 16 KiB one too: resident B/conn"]
	require.NotNil(t, then.value, "quick runs hold 1,000 idle TLS connections")
	_, ok := then.value(measurement{load: measure.Report{PerConn: 5000}})
	assert.False(t, ok, "no second message, no figure")
	v, ok := then.value(measurement{load: measure.Report{PerConn: 5000, ThenSize: tlsFullRecord, ThenPerConn: 20000}})
	assert.True(t, ok)
	assert.Equal(t, 20000.0, v)
}

func TestProxyRows(t *testing.T) {
	m := measurement{load: measure.Report{Size: 1 << 20, Rate: 500, CPUPerRT: 2000}}
	byName := map[string]row{}
	for _, sh := range proxyShapes(fullTiming) {
		for _, r := range sh.rows {
			byName[r.name] = r
		}
	}
	v, ok := byName["Closed loop, 10 conns, 1 MiB: MB/s"].value(m)
	assert.True(t, ok)
	assert.InDelta(t, 524.288, v, 1e-9) // 500 round trips of 1 MiB a second
	v, ok = byName["Closed loop, 10 conns, 1 MiB: proxy CPU µs/MB"].value(m)
	assert.True(t, ok)
	assert.InDelta(t, 2000/1.048576, v, 1e-9)
}

func TestAvailableProxies(t *testing.T) {
	kept, note := availableProxies(proxies)
	if _, err := haproxyPath(); err != nil {
		assert.NotEmpty(t, note)
		assert.False(t, slices.ContainsFunc(kept, func(p proxyStack) bool { return p.haproxy }))
		return
	}
	assert.Empty(t, note)
	assert.Equal(t, proxies, kept)
}

func TestUDPTable(t *testing.T) {
	list := udpStacks(stacks)
	assert.Equal(t, []string{"sluice", "sluice-uring", "gnet", "C floor"}, udpColumns(list))
	assert.Contains(t, udpColumns(list), base)
	assert.NotContains(t, names(serverStacks(stacks)), "C floor UDP", "the server table has no UDP-only column")
	picked, _, _, err := selectStacks("C-floor-UDP,gnet")
	require.NoError(t, err)
	assert.Equal(t, []string{"gnet", "C floor"}, udpColumns(udpStacks(picked)))

	names, rows := map[string]bool{}, map[string]bool{}
	for _, sh := range udpShapes(fullTiming) {
		assert.True(t, sh.udp, sh.name)
		assert.True(t, matches(sh.name, "udp"), "-only udp picks %q", sh.name)
		assert.Equal(t, "-udp", sh.args[0], "%q: the load generator sends datagrams", sh.name)
		assert.False(t, names[sh.name], "shape %q twice", sh.name)
		names[sh.name] = true
		for _, r := range sh.rows {
			assert.False(t, rows[r.name], "row %q twice", r.name)
			rows[r.name] = true
		}
	}
	for _, sh := range append(append(shapes(fullTiming), proxyShapes(fullTiming)...), tlsShapes(fullTiming)...) {
		assert.False(t, names[sh.name], "shape %q in two tables", sh.name)
		assert.False(t, matches(sh.name, "udp"), "-only udp picks only UDP shapes, not %q", sh.name)
	}

	full := pick(config{stacks: stacks})
	assert.Empty(t, full.udp, "the full run leaves the UDP table out")
	assert.Contains(t, full.notes, "The UDP table is left out of the full run; -only udp runs it.")
	quick := pick(config{stacks: stacks, quick: true})
	assert.NotEmpty(t, quick.udp, "-quick runs it")
	only := pick(config{stacks: stacks, only: "udp"})
	assert.Empty(t, only.server, "-only udp runs no server shape")
	assert.NotEmpty(t, only.udp)
}

func TestUDPLossRow(t *testing.T) {
	byName := map[string]row{}
	for _, sh := range udpShapes(quickTiming) {
		for _, r := range sh.rows {
			byName[r.name] = r
		}
	}
	v, ok := byName["Paced at 90% of its own saturation: lost %"].value(measurement{load: measure.Report{RoundTrips: 990, Lost: 10}})
	assert.True(t, ok)
	assert.InDelta(t, 1.0, v, 1e-9)
}

// The C floor for UDP starts, echoes (startUDPServer waits for an echo),
// and stops with its report.
func TestUDPFloor(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip(err)
	}
	bin := t.TempDir()
	st := stacks[slices.IndexFunc(stacks, func(s stack) bool { return s.name == "C floor UDP" })]
	out, err := exec.Command("gcc", "-O2", "-Wall", "-o", filepath.Join(bin, st.exe()), filepath.Join("..", "..", st.c)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	cpus, err := parseCPUs("0")
	require.NoError(t, err)
	srv, err := startUDPServer(st, bin, cpus)
	require.NoError(t, err)
	report, err := srv.stop()
	require.NoError(t, err)
	assert.Zero(t, report.Accepted)

	// With -rcvbuf, as the second loss row starts every server.
	srv, err = startUDPServer(st, bin, cpus, "-rcvbuf", strconv.Itoa(udpBigRecvBuf))
	require.NoError(t, err)
	_, err = srv.stop()
	require.NoError(t, err)
}

// The second loss row asks each server for a larger receive buffer; the
// batched rows keep many datagrams in flight per peer.
func TestUDPRecvBufAndBatchedShapes(t *testing.T) {
	got := map[string]shape{}
	for _, sh := range udpShapes(quickTiming) {
		got[sh.name] = sh
	}
	assert.Equal(t, []string{"-rcvbuf", strconv.Itoa(udpBigRecvBuf)}, got["udp loss rcvbuf"].server)
	assert.Equal(t, got["udp loss"].args, got["udp loss rcvbuf"].args, "the same load, a larger buffer")
	for _, name := range []string{"udp batched saturation", "udp batched syscalls"} {
		args := strings.Join(got[name].args, " ")
		assert.Contains(t, args, "-inflight "+strconv.Itoa(udpInFlight), name)
		assert.Contains(t, args, "-conns "+strconv.Itoa(udpBatchPeers), name)
		assert.Empty(t, got[name].server, name)
	}
	assert.True(t, got["udp batched syscalls"].perf)
}
