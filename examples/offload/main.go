// Command offload is a request/response server on Sluice whose requests do
// blocking work, and a client that drives it and checks every answer. It
// shows, end to end, the pattern for any handler with slow work to do:
//
//  1. OnTraffic decodes whole requests with codec.Each and codec.LengthField.
//     Each request aliases the loop's read buffer and is gone once the
//     callback returns, so it is copied into a pooled buffer.
//  2. The copy is handed to a bounded goroutine pool, which never blocks
//     the loop: when every worker is busy, Submit fails at once with
//     pool.ErrPoolOverload, and the loop answers that the request was shed.
//  3. A worker does the blocking work (here, sleeping -delay, as a slow
//     backend would make it wait) and answers with Conn.AsyncWrite, which
//     any goroutine may call. The buffer goes back to the pool in the
//     AsyncWrite callback, on the loop, once the answer is queued.
//
// Every request and answer is a frame: a 4-byte big-endian length, then
// that many bytes. A request's bytes are any payload. Its answer is a
// status byte, 0, and the payload with its ASCII letters upper-cased; or,
// for a request the server shed, status 1 and why. A request frame larger
// than -max-frame closes the connection. Workers answer in the order they
// finish, not the order requests came in, so the client keeps one request
// in flight per connection; a protocol that pipelines would tag requests
// with an ID.
//
//	go run ./examples/offload -delay 10ms
//	go run ./examples/offload -client -n 1000 -c 50
//
// The server stops gracefully on SIGINT or SIGTERM: requests already
// running still answer, and what is queued is sent before the connections
// close, each step for at most 5 s. It says how the stop went before it
// exits: "offload: stopped", or what it cut short, with exit status 1.
//
// Started by systemd's socket activation (or systemd-socket-activate), the
// server serves every socket it was handed, and without -addr only them.
//
// With -debug-addr, it serves the standard library's expvar page,
// /debug/vars, with the engine's counters under "sluice".
//
// With -poller, the event loops run on epoll (the default), io_uring
// ("uring"; the server refuses to start where the kernel lacks it), or
// "auto": io_uring where it can serve, else epoll, logging which.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
)

func main() {
	var (
		srv    serverConfig
		cli    clientConfig
		client bool
	)
	flag.StringVar(&srv.addr, "addr", "tcp://127.0.0.1:9001", "address to serve or, with -client, to dial: tcp://host:port or unix:///path")
	flag.IntVar(&srv.loops, "loops", runtime.NumCPU(), "number of event loops")
	flag.IntVar(&srv.workers, "workers", 0, "most requests worked on at once (0: the pool's default)")
	flag.DurationVar(&srv.delay, "delay", 10*time.Millisecond, "time each request waits on the simulated backend")
	flag.IntVar(&srv.maxFrame, "max-frame", 1<<20, "largest request frame in bytes, its length included")
	flag.TextVar(&srv.poller, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	flag.StringVar(&srv.debugAddr, "debug-addr", "", "serve /debug/vars (expvar, the engine's counters under \"sluice\") on host:port")
	flag.BoolVar(&client, "client", false, "run the client instead of the server")
	flag.IntVar(&cli.requests, "n", 1000, "client: requests to send")
	flag.IntVar(&cli.conns, "c", 50, "client: connections, each with one request in flight")
	flag.IntVar(&cli.size, "size", 64, "client: payload bytes per request")
	flag.Parse()
	cli.addr = srv.addr
	if !client {
		if err := activated(&srv); err != nil {
			log.Fatalf("offload: %v", err)
		}
	}
	srv.listening = func(addr net.Addr) { fmt.Printf("offload: listening on %s\n", addr) }

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, client, srv, cli)
	stop()
	if err != nil {
		log.Fatalf("offload: %v", err)
	}
}

// run runs the server until ctx ends, or the client until it is done.
func run(ctx context.Context, client bool, srv serverConfig, cli clientConfig) error {
	if client {
		r, err := runClient(ctx, cli)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		fmt.Printf("offload: %v\n", r)
		return nil
	}
	s, err := newServer(srv)
	if err != nil {
		return err
	}
	if err := s.run(ctx); err != nil {
		return err
	}
	fmt.Println("offload: stopped")
	return nil
}

// activated gives the server the listening sockets the process was handed
// by socket activation, if any: without -addr, it serves only those.
func activated(srv *serverConfig) error {
	files, err := sluice.ListenFDs()
	if err != nil || len(files) == 0 {
		return err
	}
	srv.files = files
	addrSet := false
	flag.Visit(func(f *flag.Flag) { addrSet = addrSet || f.Name == "addr" })
	if !addrSet {
		srv.addr = ""
	}
	return nil
}
