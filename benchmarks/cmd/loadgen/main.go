// Command loadgen takes one benchmark measurement of an echo server running
// in another process and prints it as one line of JSON (measure.Report).
// benchmarks/run calls it for every cell of its table, pinned to the cores the
// server does not use; it is as useful by hand:
//
//	loadgen -addr 127.0.0.1:9000 -pid $(pgrep -n gnet) -mode paced -conns 100 -rate 30000
//
// Modes: closed (each connection keeps one message in flight), paced (a fixed
// total rate, latency from the intended send time), accepts (connect, one
// round trip, close), handshakes (the same over TLS), memory (resident bytes
// per idle connection after one message each), syscalls (system calls per
// round trip over -count round trips, counted with perf).
//
// With -listen-fd N the closed, paced and syscalls modes accept their -conns
// connections on the listening socket inherited as descriptor N, dialed by
// the server (one started with -dial), instead of dialing -addr.
//
// With -udp it drives a UDP echo server instead: -conns peers, each a UDP
// socket of its own, every datagram checked; the closed, paced and
// syscalls modes work as over TCP, a datagram not echoed within half a
// second counting lost (the report's "lost"), and the loss mode measures
// the closed loop's rate, then paces at -fraction of it and reports that
// window's loss:
//
//	loadgen -udp -addr 127.0.0.1:9000 -pid $(pgrep -n sluice) -mode loss -conns 100 -fraction 0.9
//
// With -inflight N (N above 1) each peer of the closed and syscalls modes
// keeps N datagrams in flight, sent and received in batches (sendmmsg,
// recvmmsg), so that a single-core generator saturates a server that
// itself answers in batches:
//
//	loadgen -udp -addr 127.0.0.1:9000 -pid $(pgrep -n sluice) -mode syscalls -conns 4 -inflight 32
//
// With -tls-cert FILE every connection speaks TLS 1.3 to a server that must
// present the certificate in FILE, offering the key exchanges -tls-groups
// names, and the handshakes mode measures TLS connection setup (connect,
// handshake, one round trip, close; with -tls-resume, resuming sessions
// from tickets earlier handshakes were given):
//
//	loadgen -addr 127.0.0.1:9443 -pid $(pgrep -n sluice) -tls-cert cert.pem -mode handshakes -conns 50
//
// It exits 1 if the measurement could not be taken; errors seen while taking
// it (mismatched bytes, resets, timeouts) are in the report.
package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/measure"
)

var (
	errMode   = errors.New("unknown -mode")
	errListen = errors.New("-listen-fd works with closed, paced and syscalls only, over plain TCP")
	errTLS    = errors.New("the handshakes mode needs -tls-cert, and the accepts mode is plain TCP")
	errUDP    = errors.New("-udp works with closed, paced, syscalls and loss, without -tls-cert or -listen-fd; loss and -inflight need -udp, -gso -udp and -inflight above 1")
	errGroup  = errors.New("unknown -tls-groups name")
)

func main() {
	var (
		t      measure.Target
		addr   = flag.String("addr", "127.0.0.1:9000", "server `host:port`")
		mode   = flag.String("mode", "closed", "closed, paced, accepts, handshakes, memory, syscalls or loss (-udp)")
		warm   = flag.Duration("warmup", 500*time.Millisecond, "warm-up before the measured window")
		d      = flag.Duration("duration", 2*time.Second, "measured window (closed, paced, accepts, handshakes)")
		rate   = flag.Int("rate", 30000, "paced: round trips per second in all")
		count  = flag.Int64("count", 20000, "syscalls: round trips to count over")
		cert   = flag.String("tls-cert", "", "speak TLS 1.3 to a server presenting the certificate in this PEM `file`")
		groups = flag.String("tls-groups", "x25519", "TLS key exchanges to offer, comma-separated: x25519, x25519mlkem768, p256, or default (crypto/tls's)")
		then   = flag.Int("then-size", 0, "memory: then send one message of this many `bytes` on each connection and measure again")
		resume = flag.Bool("tls-resume", false, "handshakes: resume sessions from the tickets earlier handshakes were given")
		frac   = flag.Float64("fraction", 0.9, "loss: pace at this `share` of the closed loop's rate")
	)
	flag.BoolVar(&t.UDP, "udp", false, "drive a UDP echo server: -conns peers, a socket each")
	flag.IntVar(&t.PID, "pid", 0, "server process id, for its CPU time, memory and system calls")
	flag.IntVar(&t.Conns, "conns", 100, "connections (accepts: connections in progress at once)")
	flag.IntVar(&t.Size, "size", 64, "message size in bytes")
	flag.IntVar(&t.Workers, "workers", 1, "epoll loops, one per core the generator may use")
	flag.IntVar(&t.InFlight, "inflight", 0, "-udp closed and syscalls: datagrams each peer keeps in flight, sent and received in batches (0 or 1: one at a time)")
	flag.BoolVar(&t.Segmented, "gso", false, "-udp with -inflight: send each peer's batch with one sendmsg and UDP_SEGMENT (generic segmentation offload)")
	flag.IntVar(&t.Listener, "listen-fd", 0, "accept the connections on this inherited listening `descriptor` instead of dialing -addr")
	flag.Parse()
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil || t.PID <= 0 || t.Listener < 0 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	t.Addr = ap
	if *cert != "" {
		curves, err := parseGroups(*groups)
		if err == nil {
			t.TLS, err = loadgen.ClientTLS(*cert, curves, *resume)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(2)
		}
	}
	r, err := run(t, *mode, *warm, *d, *rate, *count, *then, *frac)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %s: %v\n", *mode, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

// parseGroups reads -tls-groups: nil for crypto/tls's default.
func parseGroups(list string) ([]tls.CurveID, error) {
	if list == "default" {
		return nil, nil
	}
	names := map[string]tls.CurveID{"x25519": tls.X25519, "x25519mlkem768": tls.X25519MLKEM768, "p256": tls.CurveP256}
	var curves []tls.CurveID
	for name := range strings.SplitSeq(list, ",") {
		c, ok := names[name]
		if !ok {
			return nil, fmt.Errorf("%w %q", errGroup, name)
		}
		curves = append(curves, c)
	}
	return curves, nil
}

func run(t measure.Target, mode string, warm, d time.Duration, rate int, count int64, then int, frac float64) (measure.Report, error) {
	datagrams := mode == "closed" || mode == "paced" || mode == "syscalls" || mode == "loss"
	if (t.UDP || mode == "loss" || t.InFlight > 1 || t.Segmented) && (t.Segmented && t.InFlight < 2 || !t.UDP || !datagrams || t.TLS != nil || t.Listener > 0) {
		return measure.Report{}, errUDP
	}
	switch mode {
	case "loss":
		return measure.Loss(t, frac, warm, d)
	case "closed":
		return measure.Closed(t, warm, d)
	case "paced":
		return measure.Paced(t, rate, warm, d)
	case "handshakes":
		if t.TLS == nil || t.Listener > 0 {
			return measure.Report{}, errTLS
		}
		return measure.Handshakes(t, warm, d)
	case "accepts", "memory":
		if t.Listener > 0 {
			return measure.Report{}, errListen
		}
		if mode == "accepts" && t.TLS != nil {
			return measure.Report{}, errTLS
		}
		if mode == "accepts" {
			return measure.Accepts(t, warm, d)
		}
		return measure.Memory(t, then)
	case "syscalls":
		return measure.Syscalls(t, warm, count)
	}
	return measure.Report{}, fmt.Errorf("%w %q", errMode, mode)
}
