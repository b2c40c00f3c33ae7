package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/benchmarks/proc"
)

// The client-side rows measure each stack as the side that dials. Two shapes:
//
//   - Dial: the stack's client (benchmarks/clients) pinned to the client
//     CPUs keeps dialInFlight dials in flight against the C epoll floor
//     pinned to the server CPUs; each dial connects, makes one 64 B round
//     trip and closes. The client reads its own CPU time around its window.
//   - Dialed paced: the stack's echo server, pinned to the server CPUs as
//     for every other row, dials dialedConns connections to the load
//     generator (which accepts them on a listener the runner opens) and
//     echoes on them at the paced rows' rate; beside it, in the same round
//     and the order alternating, the same server serves the same load on
//     connections it accepted. The ratio of the two is what a dialed
//     connection costs against an accepted one.

// clientDir is where the clients are built, under -bin: go build names each
// after its package, as it does the servers.
const clientDir = "clients"

const (
	dialInFlight = 50  // dials in flight at once in the Dial rows
	dialAddrs    = 8   // loopback addresses the floor listens on for them
	dialedConns  = 100 // connections the server dials in the dialed rows
)

// ratioRow is the dialed rows' ratio of dialed to accepted CPU.
const ratioRow = "Dialed ÷ accepted CPU/rt (per round)"

var (
	errClient      = errors.New("client failed")
	errClientError = errors.New("client saw errors")
	errUncounted   = errors.New("client counted more dials than the server accepted")
)

// A clientShape is one client-side measurement, taken of every stack that
// has a client in every round.
type clientShape struct {
	name     string
	rows     []row
	ratioRow string // the row whose figures are ratios already, if any
	measure  func(cfg config, st stack, round int) (measurement, error)
}

func clientShapes(t timing) []clientShape {
	dials := func(cfg config, st stack, _ int) (measurement, error) { return measureDials(cfg, st, t) }
	pair := func(cfg config, st stack, round int) (measurement, error) {
		return measurePair(cfg, st, t, round%2 == 1)
	}
	floorCPU := func(m measurement) (float64, bool) { return m.floorCPU, m.floorCPU > 0 }
	acceptedCPU := func(m measurement) (float64, bool) { return m.accepted.CPUPerRT, true }
	dialedOverAccepted := func(m measurement) (float64, bool) {
		return m.load.CPUPerRT / m.accepted.CPUPerRT, m.accepted.CPUPerRT > 0
	}
	return []clientShape{
		{name: "Dial", measure: dials, rows: []row{
			{"Dial: dials/s (connect, 64 B round trip, close; 50 in flight)", rate},
			{"Dial: dialer CPU µs/dial", cpu},
			{"Dial: C floor CPU µs/dial (its whole run)", floorCPU},
		}},
		{name: "Dialed paced", measure: pair, ratioRow: ratioRow, rows: []row{
			{"Paced 30k rt/s, 100 dialed conns, 64 B: echo CPU µs/rt", cpu},
			{"Paced 30k rt/s, 100 accepted conns, 64 B (run beside it): echo CPU µs/rt", acceptedCPU},
			{ratioRow, dialedOverAccepted},
		}},
	}
}

// measureDials runs st's client against a fresh C floor.
func measureDials(cfg config, st stack, t timing) (measurement, error) {
	srv, err := startFloor(cfg)
	if err != nil {
		return measurement{}, err
	}
	cpu0, cpuErr := proc.CPUTime(srv.pid())
	args := append([]string{"-c", cfg.client.spec, filepath.Join(cfg.bin, clientDir, filepath.Base(st.client)),
		"-addr", strings.Join(srv.addrs, ","), "-conns", strconv.Itoa(dialInFlight), "-size", "64",
		"-loops", cfg.client.n(), "-warmup", t.warm.String(), "-duration", t.window.String()}, st.flags...)
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "taskset", args...)
	cmd.Env = append(cmd.Environ(), "GOMAXPROCS="+cfg.client.n())
	load, loadErr := report(cmd, errClient, errClientError)
	cpu1, cpuErr2 := proc.CPUTime(srv.pid())
	floorReport, stopErr := srv.stop()
	if err := errors.Join(loadErr, stopErr, cpuErr, cpuErr2); err != nil {
		return measurement{}, err
	}
	if floorReport.Accepted < load.Total {
		return measurement{}, fmt.Errorf("%w: %d dials, %d accepted", errUncounted, load.Total, floorReport.Accepted)
	}
	m := measurement{load: load, server: floorReport}
	if load.Total > 0 {
		m.floorCPU = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(load.Total)
	}
	return m, nil
}

// startFloor starts the C epoll floor pinned to the server CPUs, listening
// on one port of dialAddrs loopback addresses, and waits until it answers.
// Dials spread over the addresses so that the ports the kernel picks for
// them, held in TIME_WAIT after each close, do not run short.
func startFloor(cfg config) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var args, addrs []string
	for i := range dialAddrs {
		addr := net.JoinHostPort(fmt.Sprintf("127.0.0.%d", i+1), strconv.Itoa(port))
		args, addrs = append(args, "-addr", addr), append(addrs, addr)
	}
	s, err := launch(floor, cfg.bin, cfg.server, args...)
	if err != nil {
		return nil, err
	}
	s.addr, s.addrs = addrs[len(addrs)-1], addrs // the last listener opens last
	if err := s.waitReady(); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

// measurePair measures st's echo server on dialed connections and, beside
// it, on accepted ones (dialed first if dialedFirst), at the paced rows'
// rate over dialedConns connections.
func measurePair(cfg config, st stack, t timing, dialedFirst bool) (measurement, error) {
	accepted := func() (measurement, error) {
		return measureOne(cfg, st, shape{name: "accepted", args: t.pacedArgs(dialedConns)})
	}
	var a, d measurement
	var err error
	if dialedFirst {
		if d, err = measureDialed(cfg, st, t); err == nil {
			a, err = accepted()
		}
	} else if a, err = accepted(); err == nil {
		d, err = measureDialed(cfg, st, t)
	}
	if err != nil {
		return measurement{}, err
	}
	d.accepted = &a.load
	return d, nil
}

// measureDialed starts st's server with -dial, aimed at a listener the
// load generator inherits, and runs the paced load over the connections it
// accepts there.
func measureDialed(cfg config, st stack, t timing) (measurement, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return measurement{}, err
	}
	f, err := ln.File() // a duplicate, for the load generator
	ln.Close()
	if err != nil {
		return measurement{}, err
	}
	defer f.Close()
	srv, err := launch(st, cfg.bin, cfg.server, "-dial", ln.Addr().String(), "-conns", strconv.Itoa(dialedConns))
	if err != nil {
		return measurement{}, err
	}
	// A server that fails to dial exits: stop waiting for its connections.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-srv.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	load, loadErr := loadgen(ctx, cfg, srv.pid(), append([]string{"-listen-fd", "3"}, t.pacedArgs(dialedConns)...), []*os.File{f})
	report, stopErr := srv.stop()
	if err := errors.Join(loadErr, stopErr); err != nil {
		return measurement{}, err
	}
	return measurement{load: load, server: report}, nil
}

// clientPreamble says how the client-side table was made.
func clientPreamble(cfg config) string {
	return fmt.Sprintf("Client side. Dial rows: each stack's dialing client on CPUs %s (GOMAXPROCS and loops to match), "+
		"%d dials in flight against the C epoll floor on CPUs %s, listening on %d loopback addresses; the client's own CPU per dial over its window. "+
		"Dialed rows: each stack's echo server on CPUs %s dials %d connections to the load generator on CPUs %s, "+
		"which paces %d round trips per second over them; beside it the same server on %d accepted connections, same load. "+
		"Cells: median over rounds (median per-round ratio to %s, low–high); the ÷ row: median per-round ratio (low–high).\n",
		cfg.client.spec, dialInFlight, cfg.server.spec, dialAddrs, cfg.server.spec, dialedConns, cfg.client.spec, pacedRate, dialedConns, base)
}
