// Package churn is the contract every dialing client in benchmarks/clients
// keeps with the runner: the same command line, the same work per dial, and
// one line of JSON (a measure.Report) on standard output.
//
// A dial is: connect to the next address of -addr, send one message of -size
// bytes, read its echo and check it byte for byte, close. A client keeps
// -conns dials in flight, starting the next as soon as one ends, for -warmup
// and then for the measured window of -duration. The client reads its own
// CPU time (package proc: the scheduler's clock, summed over its threads) at
// both ends of the window, so the report's CPUPerRT is the dialer's CPU per
// completed dial and its Rate the dials per second.
//
// The clients on event loops, whose callbacks see the echo arrive in
// pieces, judge it with an Echo, so that they count the same dial the same
// way.
package churn

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/proc"
)

// Config is what the runner tells a client on its command line.
type Config struct {
	Addrs []string // host:port to dial, each dial taking the next in turn
	Conns int      // dials in flight at once
	Size  int      // message bytes
	Loops int      // event loops, for the stacks that have them
}

// A Dialer is one stack's client.
type Dialer interface {
	// Start starts cfg.Conns dials and returns once they are under way.
	// From then until Stop it keeps that many in flight, reporting each
	// one's end to t.
	Start(cfg Config, t *Tally) error
	// Stop stops dialing and closes what is open, within ctx.
	Stop(ctx context.Context) error
}

// A Tally counts dials as they end. Its methods are safe from any goroutine.
// Once the window has closed the harness freezes it: failures from then on
// are the client stopping, not errors.
type Tally struct {
	done     atomic.Int64
	mismatch atomic.Int64
	closed   atomic.Int64
	dial     atomic.Int64
	frozen   atomic.Bool
}

// Done counts a dial whose echo came back whole and right.
func (t *Tally) Done() { t.done.Add(1) }

// Mismatch counts an echo that differs from what was sent.
func (t *Tally) Mismatch() { t.count(&t.mismatch) }

// Closed counts a connection that closed or failed before its echo was back.
func (t *Tally) Closed() { t.count(&t.closed) }

// DialFailed counts a connect that failed.
func (t *Tally) DialFailed() { t.count(&t.dial) }

// Stopping reports whether the window has closed, so that the client
// should start no more dials.
func (t *Tally) Stopping() bool { return t.frozen.Load() }

func (t *Tally) count(n *atomic.Int64) {
	if !t.frozen.Load() {
		n.Add(1)
	}
}

func (t *Tally) errors() loadgen.Errors {
	return loadgen.Errors{Mismatch: t.mismatch.Load(), Closed: t.closed.Load(), Dial: t.dial.Load()}
}

// Stamp writes dial number n into msg, a message of at least 8 bytes filled
// by Fill, so that an echo that belongs to another dial shows as a mismatch.
func Stamp(msg []byte, n uint64) { binary.LittleEndian.PutUint64(msg, n) }

// Fill fills msg with a pattern that differs from slot to slot.
func Fill(msg []byte, slot int) {
	for i := range msg {
		msg[i] = byte(i*7 + slot*13)
	}
}

// MinSize is the smallest message: room for Stamp's number.
const MinSize = 8

// stopTimeout bounds a client's stop.
const stopTimeout = 5 * time.Second

// ErrUsage reports a bad command line.
var ErrUsage = errors.New("churn: bad command line")

// Main parses the command line, runs d for the warm-up and the window,
// prints the report as JSON and stops d. It exits 1 if d fails to start or
// stop, 2 on a bad command line. Errors seen during the run are in the
// report, for the runner to judge.
func Main(d Dialer) {
	var cfg Config
	addrs := flag.String("addr", "127.0.0.1:9000", "comma-separated `host:port` list to dial, in turn")
	flag.IntVar(&cfg.Conns, "conns", 50, "dials in flight at once")
	flag.IntVar(&cfg.Size, "size", 64, "message `bytes`")
	flag.IntVar(&cfg.Loops, "loops", 1, "event loops")
	warm := flag.Duration("warmup", 500*time.Millisecond, "warm-up before the measured window")
	window := flag.Duration("duration", 2*time.Second, "measured window")
	flag.Parse()
	cfg.Addrs = strings.Split(*addrs, ",")
	if cfg.Conns < 1 || cfg.Size < MinSize || cfg.Loops < 1 || *window <= 0 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	r, err := Run(d, cfg, *warm, *window)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

// Run runs d in this process for warm, then measures it for window, then
// stops it.
func Run(d Dialer, cfg Config, warm, window time.Duration) (measure.Report, error) {
	r := measure.Report{Mode: "dials", Conns: cfg.Conns, Size: cfg.Size}
	var t Tally
	if err := d.Start(cfg, &t); err != nil {
		return r, fmt.Errorf("churn: start: %w", err)
	}
	time.Sleep(warm)
	n0, cpu0, t0, err := snapshot(&t)
	if err == nil {
		time.Sleep(window)
		var n1 int64
		var cpu1 time.Duration
		var t1 time.Time
		n1, cpu1, t1, err = snapshot(&t)
		r.RoundTrips, r.Total, r.Seconds = n1-n0, n1, t1.Sub(t0).Seconds()
		r.Rate = float64(r.RoundTrips) / r.Seconds
		if r.RoundTrips > 0 {
			r.CPUPerRT = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(r.RoundTrips)
		}
	}
	t.frozen.Store(true)
	r.Errors = t.errors()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if stopErr := d.Stop(ctx); stopErr != nil {
		err = errors.Join(err, fmt.Errorf("churn: stop: %w", stopErr))
	}
	return r, err
}

// snapshot reads the dials done so far, this process's CPU time and the
// clock, together.
func snapshot(t *Tally) (int64, time.Duration, time.Time, error) {
	cpu, err := proc.CPUTime(os.Getpid())
	return t.done.Load(), cpu, time.Now(), err
}
