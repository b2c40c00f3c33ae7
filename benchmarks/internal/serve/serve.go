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
// A server that can serve TLS (a [TLSServer]) runs with -tls-cert FILE
// -tls-key FILE: it terminates TLS with that certificate on the connections
// it accepts and echoes the plaintext.
//
// A server that can serve UDP (a [UDPServer]) runs with -udp: it echoes
// each datagram to its sender from one UDP socket on -addr instead of
// listening for TCP connections.
//
// Each server under benchmarks/servers wires its stack into a [Server] and
// calls [Main]; the runner reads the line back with [ParseReport].
package serve

import (
	"context"
	"crypto/tls"
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
	// TLSCert and TLSKey are PEM files: the certificate and key to serve
	// TLS with (TLSServer only); empty for plain TCP.
	TLSCert, TLSKey string
	// UDP: echo datagrams on a UDP socket at Addr (UDPServer only).
	UDP bool
	// RecvBuf, with UDP, is the SO_RCVBUF to ask for the UDP socket; 0
	// keeps the kernel's default.
	RecvBuf int
}

// TLS reports whether the server is to serve TLS.
func (c Config) TLS() bool { return c.TLSCert != "" }

// StdTLS returns crypto/tls's configuration for c's certificate, for the
// servers built on crypto/tls: the certificate, crypto/tls's defaults for
// the rest, as a user configures a server.
func (c Config) StdTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
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

// A TLSServer can serve TLS: given Config.TLSCert and TLSKey, its Serve
// terminates TLS on every connection it accepts and echoes the plaintext.
type TLSServer interface {
	Server
	// ServesTLS marks the servers that read Config.TLSCert and TLSKey.
	ServesTLS()
}

// A UDPServer can serve UDP: given Config.UDP, its Serve echoes each
// datagram that comes to Addr to its sender.
type UDPServer interface {
	Server
	// ServesUDP marks the servers that read Config.UDP.
	ServesUDP()
}

// ErrNoUDP reports -udp given to a server that cannot serve UDP, or with
// -dial or -tls-cert.
var ErrNoUDP = errors.New("serve: -udp needs a UDP server, and neither -dial nor TLS; -rcvbuf needs -udp")

// ErrNoDial reports -dial given to a server that cannot dial.
var ErrNoDial = errors.New("serve: this server cannot dial")

// ErrNoTLS reports -tls-cert given to a server that cannot serve TLS, or
// with -dial, or without -tls-key.
var ErrNoTLS = errors.New("serve: TLS needs a TLS server, -tls-cert and -tls-key both, and no -dial")

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
	flag.StringVar(&cfg.TLSCert, "tls-cert", "", "serve TLS with the certificate in this PEM `file` (needs -tls-key)")
	flag.StringVar(&cfg.TLSKey, "tls-key", "", "the PEM `file` of -tls-cert's private key")
	flag.BoolVar(&cfg.UDP, "udp", false, "echo datagrams on a UDP socket at -addr instead of serving TCP")
	flag.IntVar(&cfg.RecvBuf, "rcvbuf", 0, "with -udp: the UDP socket's receive buffer (SO_RCVBUF) in `bytes`; 0 keeps the kernel's default")
	flag.Parse()
	if cfg.Loops < 1 || cfg.Conns < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if _, ok := s.(DialingServer); cfg.Dial != "" && !ok {
		fmt.Fprintln(os.Stderr, ErrNoDial)
		os.Exit(2)
	}
	if err := checkUDP(s, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := checkTLS(s, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(s, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// checkUDP checks -udp against s and the other flags.
func checkUDP(s Server, cfg Config) error {
	if _, ok := s.(UDPServer); cfg.UDP && (!ok || cfg.Dial != "" || cfg.TLS()) || cfg.RecvBuf != 0 && !cfg.UDP {
		return ErrNoUDP
	}
	return nil
}

// checkTLS checks the TLS flags against s.
func checkTLS(s Server, cfg Config) error {
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		return nil
	}
	if _, ok := s.(TLSServer); !ok || cfg.TLSCert == "" || cfg.TLSKey == "" || cfg.Dial != "" {
		return ErrNoTLS
	}
	return nil
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
