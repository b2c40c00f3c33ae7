// Command proxy is a TCP (layer 4) proxy on Sluice's event loops, to put in
// front of Redis or any other TCP service: every client it accepts is
// relayed, byte for byte, to one of its backends.
//
//	go run ./examples/proxy -addr 127.0.0.1:7000 -backend 127.0.0.1:6379
//	go run ./examples/proxy -addr :7000,:7001 -backend 10.0.0.1:6379 -backend 10.0.0.2:6379 -balance leastconn
//	go run ./examples/proxy -addr :7000 -backend unix:///run/redis.sock -send-proxy v2
//	go run ./examples/proxy -addr :7000 -backend 127.0.0.1:9000 -stats-interval 5s -poller uring
//	go run ./examples/proxy -addr :7000 -backend 127.0.0.1:6379 -tls-cert cert.pem -tls-key key.pem
//	go run ./examples/proxy -addr :7000 -backend redis.internal:6380 -backend-tls -backend-ca ca.pem
//
// Each client is paired with a connection the proxy dials to a backend
// from the client's own event loop, so the two never cross threads. Until
// the backend answers, the client is not read: what it sends waits and is
// relayed once the backend connects. Then what either side sends is
// written to the other at once. When one side holds more unsent bytes than
// -buffer (its peer reads slower than the other side writes), the side
// feeding it is not read until that drains to half, so a pair holds about
// -buffer and one read per direction, whatever its peers do: a client that
// never reads cannot make the proxy buffer a backend's replies without
// bound, nor a slow backend a client's uploads.
//
// An end of stream is passed on (half-close): a client that shuts down its
// write side still receives all the backend sends until the backend ends
// too, as with a direct connection. A side that resets, or fails, resets
// the other; one that closes cleanly, or idles past -idle-timeout, closes
// the other gracefully, once it has sent what it holds.
//
// Backends are chosen by -balance: roundrobin (in turn), leastconn (the
// fewest clients now, those connecting included) or source (a hash of the
// client's IP address, so that a client keeps to one backend while the
// same backends are up). A connect that fails is retried on the next
// backend, until the client's -connect-timeout runs out; each attempt gets
// an even share of what is left, so that a backend that swallows connects
// without answering leaves time for the others. A backend whose connects
// fail -max-fails times in a row is marked down for -down-time, then one
// client probes it: success brings it back, failure keeps it down for
// another -down-time. A client that no backend can take, because all are
// down or none answered in time, is reset at once rather than left
// waiting. So is a client past -maxconn.
//
// With -proxy-protocol optional or required the proxy sits behind a load
// balancer that sends the PROXY protocol header, and reads it; with
// -send-proxy v1 or v2 it sends one to its backends, as HAProxy's
// send-proxy and send-proxy-v2 do, naming the original client: with both,
// a backend learns the address of the client in front of the balancer.
//
// TLS: with -tls-cert and -tls-key (PEM files), or -tls-self-signed (an
// ECDSA P-256 certificate for localhost, 127.0.0.1 and ::1 made at start,
// for trying it out), the proxy terminates TLS on every -addr: clients
// speak TLS to it, after the PROXY header if -proxy-protocol reads one,
// and their plaintext is relayed. With -backend-tls it originates TLS to
// its backends, each verified against the system's roots, or the
// certificates in -backend-ca, for the host of its -backend address, or
// -backend-server-name; -backend-tls-insecure verifies nothing, for
// backends with self-signed certificates. So it terminates, originates,
// or with both re-encrypts. Backend sessions are resumed. A backend whose
// handshake fails counts as a failed connect toward -max-fails, and the
// client is tried on the next; a handshake is bounded by 10 s
// (sluice.DefaultTLSHandshakeTimeout), apart from -connect-timeout. A
// -send-proxy header would travel inside TLS, where backends do not look
// for it, so -send-proxy and -backend-tls are refused together.
//
// It prints the addresses it listens on; with -stats-interval, every
// interval, a line of its own totals, one of the engine's counters and one
// per backend, each stamped with the time (RFC 3339) and with byte counts
// in bytes ("up 1024 B"). A line that reads as it did when last printed is
// left out, so a proxy with nothing happening prints nothing. On
// SIGINT or SIGTERM it stops accepting at once and lets the pairs it has
// finish by themselves for up to -drain (5 s), so that replies on their
// way from a backend still reach their clients. Then it closes every pair
// left gracefully: each connection sends what the proxy holds for it, then
// its end of stream; what a backend sends after that is dropped. Pairs
// still open after a further -grace (a client that does not read what it
// is sent) are reset. A second signal ends the proxy at once. It says how
// the stop went before it exits: "proxy: stopped", or that it reset
// connections, with exit status 1.
//
// Started with listening sockets (systemd's socket activation, or an
// upgrade) it serves each of them; without -addr, only them. With
// -upgrade-on SIGHUP, that signal starts a new process of the same
// executable and arguments, which takes the listeners over: once it
// serves, this one stops as on SIGTERM, its pairs finishing on it.
// -pid-file names a file that holds the ID of the process serving. See
// package upgrade.
//
// With -debug-addr, it serves the standard library's expvar page,
// /debug/vars, with the engine's counters under "sluice"; after an
// upgrade the new process serves it once the old one has let it go.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"runtime"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/tlsflag"
	"github.com/sluicenet/sluice/poller"
)

// main reads the flags, and runs the proxy until a signal stops it.
func main() {
	var cfg config
	var addrs, backends listFlag
	flag.Var(&addrs, "addr", "address to listen on, tcp://host:port, host:port or unix:///path; repeat it, or list several with commas (default 127.0.0.1:7000)")
	flag.Var(&backends, "backend", "backend to relay to, host:port or unix:///path; repeat it, or list several with commas")
	flag.TextVar(&cfg.balance, "balance", roundRobin, "how clients are spread over backends: roundrobin, leastconn or source")
	flag.IntVar(&cfg.loops, "loops", runtime.NumCPU(), "number of event loops")
	flag.TextVar(&cfg.poller, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	flag.TextVar(&cfg.proxyProtocol, "proxy-protocol", sluice.ProxyOff, "read a PROXY protocol header from a load balancer in front: off, optional or required")
	flag.TextVar(&cfg.sendProxy, "send-proxy", sendProxyOff, "send backends a PROXY protocol header naming the client: off, v1 or v2")
	flag.DurationVar(&cfg.connectTimeout, "connect-timeout", defaultConnectTimeout, "a client's time to reach a backend, every attempt included")
	flag.DurationVar(&cfg.idleTimeout, "idle-timeout", 0, "close a pair that moves no bytes for this long (0: never)")
	flag.IntVar(&cfg.maxConn, "maxconn", 0, "most clients at once (0: as many as the descriptor limit allows, two each)")
	flag.IntVar(&cfg.buffer, "buffer", defaultBuffer, "unsent bytes one side of a pair may hold before the other side is paused")
	flag.IntVar(&cfg.maxFails, "max-fails", defaultMaxFails, "failed connects in a row that mark a backend down")
	flag.DurationVar(&cfg.downTime, "down-time", defaultDownTime, "how long a backend stays down before a client probes it")
	flag.DurationVar(&cfg.drain, "drain", defaultDrain, "how long a stop, having stopped accepting, lets pairs finish by themselves before it closes them")
	flag.DurationVar(&cfg.grace, "grace", defaultGrace, "how long a graceful stop then waits for pairs to close before resetting them")
	flag.DurationVar(&cfg.statsInterval, "stats-interval", 0, "print statistics this often, the lines that changed (0: never)")
	var tlsFlags tlsflag.Server
	tlsFlags.Register(flag.CommandLine)
	flag.BoolVar(&cfg.backendTLS, "backend-tls", false, "speak TLS to the backends")
	flag.StringVar(&cfg.backendCA, "backend-ca", "", "with -backend-tls, trust the certificates in this PEM file rather than the system's")
	flag.StringVar(&cfg.backendServerName, "backend-server-name", "", "with -backend-tls, the name backends' certificates must bear (default: each backend's host)")
	flag.BoolVar(&cfg.backendInsecure, "backend-tls-insecure", false, "with -backend-tls, verify no backend's certificate (self-signed backends, for trying it out)")
	flag.Parse()
	cfg.addrs, cfg.backends = addrs, backends
	var err error
	if cfg.tls, err = tlsFlags.Config(); err != nil {
		log.Fatalf("proxy: %v", err)
	}
	cfg.out = os.Stdout
	cfg.logf = log.Printf
	cfg.listening = func(addrs []net.Addr) {
		for _, a := range addrs {
			fmt.Printf("proxy: listening on %s://%s\n", a.Network(), a)
		}
	}
	serveProxy(cfg)
}
