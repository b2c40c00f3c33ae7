// Package serve is the contract every benchmark echo server keeps with the
// runner: the same command line (-addr, -loops), a graceful stop on SIGTERM or
// SIGINT, and one line on standard output before it exits that says what it
// can cheaply say about its run (connections accepted, heap allocations since
// the first connection).
//
// A server that can also dial (a [DialingServer]) runs with -dial host:port
// -conns N instead: it opens N connections to that address, which the load
// generator accepts, and echoes on them as it does on accepted ones, so that
// the cost of a dialed connection can be set beside an accepted one's.
//
// Each server under benchmarks/servers wires its stack into a [Server] and
// calls [Main]; the runner reads the line back with [ParseReport].
package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Config is what the runner tells a server on its command line.
type Config struct {
	Addr  string // host:port to listen on
	Loops int    // event loops (or pollers) to run; the runner pins the process to as many cores
	Dial  string // host:port to dial instead of listening (DialingServer only)
	Conns int    // connections to dial
}

// A Server is one stack's echo server.
type Server interface {
	// Serve listens on cfg.Addr and echoes until it fails or Stop is called.
	// It calls m.Opened for every accepted connection.
	Serve(cfg Config, m *Meter) error
	// Stop shuts the server down gracefully within ctx.
	Stop(ctx context.Context) error
}

// A DialingServer can echo on connections it dials as well as on those it
// accepts.
type DialingServer interface {
	Server
	// ServeDialed dials cfg.Conns connections to cfg.Dial, with the same
	// settings Serve gives accepted ones, and echoes on them until it fails
	// or Stop is called. It calls m.Opened for every connection open.
	ServeDialed(cfg Config, m *Meter) error
}

// ErrNoDial reports -dial given to a server that cannot dial.
var ErrNoDial = errors.New("serve: this server cannot dial")

// stopTimeout bounds a graceful stop: a stack that cannot stop by then has
// broken, and the runner reports it.
const stopTimeout = 5 * time.Second

// Main parses the command line, serves with s until SIGTERM or SIGINT, then
// prints the report line and stops s. It exits 1 if s fails to serve or to
// stop, 2 on a bad command line.
func Main(s Server) {
	var cfg Config
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:9000", "`host:port` to listen on")
	flag.IntVar(&cfg.Loops, "loops", 1, "event loops to run")
	flag.StringVar(&cfg.Dial, "dial", "", "dial -conns connections to `host:port` and echo on them, instead of listening")
	flag.IntVar(&cfg.Conns, "conns", 100, "connections to dial with -dial")
	flag.Parse()
	if cfg.Loops < 1 || cfg.Conns < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if _, ok := s.(DialingServer); cfg.Dial != "" && !ok {
		fmt.Fprintln(os.Stderr, ErrNoDial)
		os.Exit(2)
	}
	if err := run(s, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// ErrServeEnded reports a server whose Serve returned before it was told to stop.
var ErrServeEnded = errors.New("serve: server stopped on its own")

func run(s Server, cfg Config) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	var m Meter
	served := make(chan error, 1)
	serve := s.Serve
	if cfg.Dial != "" {
		serve = s.(DialingServer).ServeDialed
	}
	go func() { served <- serve(cfg, &m) }()
	select {
	case err := <-served:
		return fmt.Errorf("%w: %v", ErrServeEnded, err)
	case <-sig:
	}
	// The report goes out first: it describes the run, not the stop.
	fmt.Println(m.Report())
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		return fmt.Errorf("serve: stop: %w", err)
	}
	return nil
}
