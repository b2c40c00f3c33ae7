package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicenet/sluice/benchmarks/table"
)

// The proxy rows measure examples/proxy, the TCP proxy on Sluice's public
// API, beside HAProxy. For each measurement the runner starts a fresh C
// epoll floor as the backend, pinned to the client CPUs beside the load
// generator, then a fresh proxy pinned to the server CPUs relaying to it,
// and runs the load generator against the proxy, reading the proxy's CPU
// time and memory: every load generator connection is one proxied pair,
// client side and backend side.
//
// The TLS proxy shapes have the proxy terminate TLS (the load generator
// speaks it, the backend does not): HAProxy with bind ... ssl crt,
// examples/proxy with -tls-cert and -tls-key. A run whose examples/proxy
// has no -tls-cert flag leaves them out, with a note (proxyTLS).

// proxyBase is the proxy every ratio in the proxy table is to.
const proxyBase = "haproxy"

// proxyPkg is examples/proxy, built from the root module: go build names it
// "proxy" in -bin.
const proxyPkg = "./examples/proxy"

// haproxyMaxConn is HAProxy's maxconn: it must raise its descriptor limit
// to about twice this, and this machine allows 20,000 per process.
const haproxyMaxConn = 9000

// haproxyMaxPipes bounds the pipes HAProxy splices through, so that its
// descriptors stay within the limit too: more than the large-message rows'
// connections can use at once, two pipes each.
const haproxyMaxPipes = 500

// A proxyStack is one TCP proxy the proxy table compares.
type proxyStack struct {
	name string
	// haproxy: HAProxy, run from a configuration written for each
	// measurement; else examples/proxy.
	haproxy bool
	splice  bool     // HAProxy with option splice-auto
	flags   []string // examples/proxy's further flags
	// largeOnly: measured only in the shapes that move large messages,
	// where splicing can matter.
	largeOnly bool
}

// proxies lists every proxy, in the proxy table's column order.
var proxies = []proxyStack{
	{name: "haproxy", haproxy: true},
	{name: "haproxy-splice", haproxy: true, splice: true, largeOnly: true},
	{name: "sluice-proxy", flags: []string{"-poller", "epoll"}},
	{name: "sluice-proxy-uring", flags: []string{"-poller", "uring"}},
}

// proxyShapes returns the proxy table's measurements, in the order it
// lists their rows.
func proxyShapes(t timing) []shape {
	mbps := func(m measurement) (float64, bool) { return m.load.Rate * float64(m.load.Size) / 1e6, true }
	cpuPerMB := func(m measurement) (float64, bool) {
		return m.load.CPUPerRT * 1e6 / float64(m.load.Size), m.load.Size > 0
	}
	return []shape{
		{name: "proxy paced 100 conns", args: t.pacedArgs(100), rows: []row{
			{"Paced 30k rt/s, 100 conns, 64 B: proxy CPU µs/rt", cpu},
			{"Paced 30k rt/s, 100 conns, 64 B: p99 µs", p99},
		}},
		{name: "proxy paced 1,000 conns", args: t.pacedArgs(1000), rows: []row{
			{"Paced 30k rt/s, 1,000 conns, 64 B: proxy CPU µs/rt", cpu},
			{"Paced 30k rt/s, 1,000 conns, 64 B: p99 µs", p99},
		}},
		{name: "proxy closed 100 conns", args: t.closed(100, 64), rows: []row{
			{"Closed loop, 100 conns, 64 B: rt/s", rate},
			{"Closed loop, 100 conns, 64 B: proxy CPU µs/rt", cpu},
		}},
		{name: "proxy 16 KiB", large: true, args: t.closed(100, 16<<10), rows: []row{
			{"Closed loop, 100 conns, 16 KiB: MB/s", mbps},
			{"Closed loop, 100 conns, 16 KiB: proxy CPU µs/MB", cpuPerMB},
		}},
		{name: "proxy 1 MiB", large: true, args: t.closed(10, 1<<20), rows: []row{
			{"Closed loop, 10 conns, 1 MiB: MB/s", mbps},
			{"Closed loop, 10 conns, 1 MiB: proxy CPU µs/MB", cpuPerMB},
		}},
		{name: "proxy accepts", args: t.accepts(50), rows: []row{
			{"New pairs/s (connect, 64 B round trip, close; 50 at a time)", rate},
			{"New pairs: proxy CPU µs/pair", cpu},
		}},
		{name: "proxy memory", args: loadArgs("memory", proxyIdlePairs, 64), rows: []row{
			{"5,000 idle pairs: proxy resident B/pair", perConn},
		}},
		{name: "proxy syscalls 100 conns", perf: true, args: t.counted(100), rows: []row{
			{"Closed loop, 100 conns, 64 B: proxy syscalls/rt", syscalls},
		}},
		{name: "proxy tls paced 100 conns", tls: true, args: t.pacedArgs(100), rows: []row{
			{"TLS terminated: paced 30k rt/s, 100 conns, 64 B: proxy CPU µs/rt", cpu},
			{"TLS terminated: paced 30k rt/s, 100 conns, 64 B: p99 µs", p99},
		}},
		{name: "proxy tls handshakes", tls: true, args: loadArgs("handshakes", handshakesInFlight, 64, "-warmup", t.warm.String(), "-duration", t.handshakes.String()), rows: []row{
			{"TLS terminated: full handshakes/s (connect, handshake, 64 B round trip, close; 50 at a time)", rate},
			{"TLS terminated: proxy CPU µs/handshake, its dial to the floor included", cpu},
		}},
	}
}

// proxyTLS returns shapes without the TLS ones, and a note, when the
// examples/proxy built into bin cannot terminate TLS (has no -tls-cert
// flag) and list measures it; else shapes as they are.
func proxyTLS(bin string, list []proxyStack, shapes []shape) ([]shape, string) {
	if !slices.ContainsFunc(list, func(p proxyStack) bool { return !p.haproxy }) ||
		!slices.ContainsFunc(shapes, func(sh shape) bool { return sh.tls }) {
		return shapes, ""
	}
	// -h prints the flags and exits, 0 or 2 by Go's version: read the text.
	out, _ := exec.Command(filepath.Join(bin, path.Base(proxyPkg)), "-h").CombinedOutput()
	if strings.Contains(string(out), "-tls-cert") {
		return shapes, ""
	}
	return slices.DeleteFunc(shapes, func(sh shape) bool { return sh.tls }),
		"TLS proxy rows skipped: this examples/proxy has no -tls-cert flag."
}

// proxyIdlePairs is how many pairs the memory row holds open: the proxy
// holds two descriptors for each, and a process may hold 20,000.
const proxyIdlePairs = 5000

// haproxyPath returns where HAProxy is installed: on the PATH, or in
// /usr/sbin, where Debian puts it and which a user's PATH may leave out.
func haproxyPath() (string, error) {
	path, err := exec.LookPath("haproxy")
	if err == nil {
		return path, nil
	}
	if _, statErr := os.Stat("/usr/sbin/haproxy"); statErr == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", err
}

// availableProxies returns those of list that can run here, and a note on
// any it leaves out: HAProxy's columns need haproxy installed.
func availableProxies(list []proxyStack) ([]proxyStack, string) {
	_, err := haproxyPath()
	if err == nil {
		return list, ""
	}
	var kept []proxyStack
	for _, p := range list {
		if !p.haproxy {
			kept = append(kept, p)
		}
	}
	if len(kept) == len(list) {
		return list, ""
	}
	return kept, fmt.Sprintf("HAProxy columns skipped: %v (Debian package haproxy).", err)
}

// measureProxy runs shape sh through a fresh proxy of stack st, relaying to
// a fresh C epoll floor.
func measureProxy(cfg config, st proxyStack, sh shape) (measurement, error) {
	backend, err := startServer(floor, cfg.bin, cfg.client)
	if err != nil {
		return measurement{}, fmt.Errorf("backend: %w", err)
	}
	px, err := startProxy(cfg, st, backend.addr, sh.tls)
	if err != nil {
		backend.kill()
		return measurement{}, err
	}
	if sh.tls {
		sh.args = cfg.clientTLS(sh.args)
	}
	load, loadErr := runLoad(cfg, px, sh)
	haltErr := px.halt()
	_, backendErr := backend.stop()
	if backendErr != nil {
		backendErr = fmt.Errorf("backend: %w", backendErr)
	}
	if err := errors.Join(loadErr, haltErr, backendErr); err != nil {
		return measurement{}, err
	}
	return measurement{load: load}, nil
}

// startProxy starts st pinned to the server CPUs, relaying to backend and
// terminating TLS if secure is set, and waits until its port accepts
// connections.
func startProxy(cfg config, st proxyStack, backend string, secure bool) (*server, error) {
	return startListening(func(addr string) (*server, error) {
		if st.haproxy {
			crt := ""
			if secure {
				crt = cfg.certs.Combined
			}
			return startHAProxy(cfg, st, addr, backend, crt)
		}
		sluice := stack{name: st.name, pkg: proxyPkg, loops: true, flags: st.flags}
		args := []string{"-addr", addr, "-backend", backend}
		if secure {
			args = append(args, cfg.serverTLS()...)
		}
		return launch(sluice, cfg.bin, cfg.server, args...)
	})
}

// startHAProxy writes HAProxy's configuration for one measurement into
// -bin and starts it in the foreground, terminating TLS with the PEM file
// crt if it is not empty. SIGUSR1 is its graceful stop.
func startHAProxy(cfg config, st proxyStack, addr, backend, crt string) (*server, error) {
	path, err := haproxyPath()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(cfg.bin, "haproxy.cfg")
	if err := os.WriteFile(file, []byte(haproxyConfig(st, len(cfg.server.cpus), addr, backend, crt)), 0o644); err != nil {
		return nil, err
	}
	return start(cfg.server, syscall.SIGUSR1, []string{path, "-db", "-f", file})
}

// haproxyConfig returns HAProxy's configuration: threads threads (one per
// server CPU, as examples/proxy gets one loop per CPU), TCP mode, one
// frontend on addr relaying to one backend server, timeouts no
// measurement reaches, and splice-auto if st asks for it. With crt, the
// frontend terminates TLS with that certificate and key, preferring
// AES-128-GCM, the cipher suite crypto/tls picks, to OpenSSL's default
// AES-256-GCM.
func haproxyConfig(st proxyStack, threads int, addr, backend, crt string) string {
	lines := []string{
		"global",
		"\tnbthread " + strconv.Itoa(threads),
		"\tmaxconn " + strconv.Itoa(haproxyMaxConn),
		"\thard-stop-after 5s",
	}
	if st.splice {
		// Each pipe is two more descriptors: the default, a quarter of
		// maxconn, would take HAProxy past the limit.
		lines = append(lines, "\tmaxpipes "+strconv.Itoa(haproxyMaxPipes))
	}
	bind := "\tbind " + addr
	if crt != "" {
		lines = append(lines, "\tssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256")
		bind += " ssl crt " + crt
	}
	lines = append(lines,
		"defaults",
		"\tmode tcp",
		"\tmaxconn "+strconv.Itoa(haproxyMaxConn),
		"\ttimeout connect 5s",
		"\ttimeout client 10m",
		"\ttimeout server 10m",
	)
	if st.splice {
		lines = append(lines, "\toption splice-auto")
	}
	lines = append(lines,
		"frontend bench",
		bind,
		"\tdefault_backend echo",
		"backend echo",
		"\tserver floor "+backend,
	)
	return strings.Join(lines, "\n") + "\n"
}

// proxyPreamble says how the proxy table was made; secure: with TLS rows.
func proxyPreamble(cfg config, secure bool) string {
	tlsRows := ""
	if secure {
		tlsRows = "TLS terminated rows: the proxy terminates TLS 1.3 from the load generator (as in the TLS table: " + strings.ToUpper(tlsGroups) +
			", the run's ECDSA P-256 certificate) and relays plaintext to the floor; HAProxy with bind ... ssl crt, AES-128-GCM preferred as crypto/tls prefers it; examples/proxy with -tls-cert and -tls-key. "
	}
	return fmt.Sprintf("Proxies. Each proxy on CPUs %s (HAProxy: mode tcp, nbthread %s, maxconn %d; examples/proxy: -loops %s, GOMAXPROCS %s), "+
		"relaying each client to its own connection to the C epoll floor, which runs on CPUs %s beside the load generator; "+
		"a fresh proxy and floor for every measurement. CPU and memory are the proxy process's alone. "+
		"MB/s: message bytes echoed per second (each crosses the proxy twice, up and back); µs/MB: proxy CPU per MB echoed. "+
		"%sCells: median over rounds (median per-round ratio to %s, low–high).\n",
		cfg.server.spec, cfg.server.n(), haproxyMaxConn, cfg.server.n(), cfg.server.n(), cfg.client.spec, tlsRows, proxyBase)
}

// proxyColumns returns the proxy table's columns for list.
func proxyColumns(list []proxyStack) []string {
	return columns(list, func(p proxyStack) string { return p.name })
}

// newProxyTable returns the proxy table for shapes and stacks, its rows in
// shape order.
func newProxyTable(shapes []shape, list []proxyStack) *table.Table {
	return newTable(proxyBase, proxyColumns(list), shapes, func(sh shape) []row { return sh.rows })
}
