// Command loadgen takes one benchmark measurement of an echo server running
// in another process and prints it as one line of JSON (measure.Report).
// benchmarks/run calls it for every cell of its table, pinned to the cores the
// server does not use; it is as useful by hand:
//
//	loadgen -addr 127.0.0.1:9000 -pid $(pgrep -n gnet) -mode paced -conns 100 -rate 30000
//
// Modes: closed (each connection keeps one message in flight), paced (a fixed
// total rate, latency from the intended send time), accepts (connect, one
// round trip, close), memory (resident bytes per idle connection after one
// message each), syscalls (system calls per round trip over -count round
// trips, counted with perf).
//
// With -listen-fd N the closed, paced and syscalls modes accept their -conns
// connections on the listening socket inherited as descriptor N, dialed by
// the server (one started with -dial), instead of dialing -addr.
//
// It exits 1 if the measurement could not be taken; errors seen while taking
// it (mismatched bytes, resets, timeouts) are in the report.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/sluicenet/sluice/benchmarks/measure"
)

var (
	errMode   = errors.New("unknown -mode")
	errListen = errors.New("-listen-fd works with closed, paced and syscalls only")
)

func main() {
	var (
		t     measure.Target
		addr  = flag.String("addr", "127.0.0.1:9000", "server `host:port`")
		mode  = flag.String("mode", "closed", "closed, paced, accepts, memory or syscalls")
		warm  = flag.Duration("warmup", 500*time.Millisecond, "warm-up before the measured window")
		d     = flag.Duration("duration", 2*time.Second, "measured window (closed, paced, accepts)")
		rate  = flag.Int("rate", 30000, "paced: round trips per second in all")
		count = flag.Int64("count", 20000, "syscalls: round trips to count over")
	)
	flag.IntVar(&t.PID, "pid", 0, "server process id, for its CPU time, memory and system calls")
	flag.IntVar(&t.Conns, "conns", 100, "connections (accepts: connections in progress at once)")
	flag.IntVar(&t.Size, "size", 64, "message size in bytes")
	flag.IntVar(&t.Workers, "workers", 1, "epoll loops, one per core the generator may use")
	flag.IntVar(&t.Listener, "listen-fd", 0, "accept the connections on this inherited listening `descriptor` instead of dialing -addr")
	flag.Parse()
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil || t.PID <= 0 || t.Listener < 0 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	t.Addr = ap
	r, err := run(t, *mode, *warm, *d, *rate, *count)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %s: %v\n", *mode, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

func run(t measure.Target, mode string, warm, d time.Duration, rate int, count int64) (measure.Report, error) {
	switch mode {
	case "closed":
		return measure.Closed(t, warm, d)
	case "paced":
		return measure.Paced(t, rate, warm, d)
	case "accepts", "memory":
		if t.Listener > 0 {
			return measure.Report{}, errListen
		}
		if mode == "accepts" {
			return measure.Accepts(t, warm, d)
		}
		return measure.Memory(t)
	case "syscalls":
		return measure.Syscalls(t, warm, count)
	}
	return measure.Report{}, fmt.Errorf("%w %q", errMode, mode)
}
