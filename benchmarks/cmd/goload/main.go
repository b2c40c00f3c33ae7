// Command goload is the second client shape of the benchmarks: a Go
// client as Go users write one, a goroutine per connection with blocking
// net.Conn calls, paced. Where cmd/loadgen sends from one epoll loop in
// tight batches, each goroutine here sleeps until its own next send time,
// writes, and blocks in its read, so sends reach the server spread out
// as the runtime's timers and scheduler release them.
//
//	goload -addr 127.0.0.1:9000 -pid $(pgrep -n gnet) -conns 100 -rate 30000
//
// Each of -conns connections sends a -size message every conns/rate
// seconds, the connections' schedules staggered evenly over that period,
// and reads the echo back, checking every byte. A round trip's latency
// counts from its intended send time, as loadgen's paced mode does: a
// goroutine that falls behind sends at once and the delay shows (no
// coordinated omission). After -warmup it reads the server's CPU time
// (package proc) over the -duration window, over the round trips
// intended in it, and prints one measure.Report as JSON, as cmd/loadgen
// does, so cmd/bench reads either.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/proc"
)

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:9000", "server `host:port`")
	flag.IntVar(&c.pid, "pid", 0, "server process id, for its CPU time")
	flag.IntVar(&c.conns, "conns", 100, "connections, a goroutine each")
	flag.IntVar(&c.size, "size", 64, "message size in bytes")
	flag.IntVar(&c.rate, "rate", 30000, "round trips per second in all")
	flag.DurationVar(&c.warm, "warmup", 500*time.Millisecond, "warm-up before the measured window")
	flag.DurationVar(&c.window, "duration", 2*time.Second, "measured window")
	flag.Parse()
	if c.pid <= 0 || c.conns <= 0 || c.size <= 0 || c.rate <= 0 || c.window <= 0 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	r, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goload:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

type config struct {
	addr              string
	pid               int
	conns, size, rate int
	warm, window      time.Duration
}

// client is one connection's goroutine and what it measured.
type client struct {
	c       net.Conn
	msg     []byte
	echo    []byte
	lat     loadgen.Histogram // round trips intended in the window
	counted int64             // their number
	total   int64             // every round trip, warm-up included
	errs    loadgen.Errors
}

// run dials every connection, paces them through the warm-up and the
// window, and reports.
func run(c config) (measure.Report, error) {
	r := measure.Report{Mode: "paced-go", Conns: c.conns, Size: c.size}
	clients := make([]*client, c.conns)
	for i := range clients {
		nc, err := net.Dial("tcp", c.addr)
		if err != nil {
			for _, cl := range clients[:i] {
				cl.c.Close()
			}
			return r, fmt.Errorf("%w: %v", loadgen.ErrDial, err)
		}
		msg := bytes.Repeat([]byte{byte('a' + i%26)}, c.size)
		clients[i] = &client{c: nc, msg: msg, echo: make([]byte, c.size)}
	}
	period := time.Duration(int64(time.Second) * int64(c.conns) / int64(c.rate))
	start := time.Now().Add(10 * time.Millisecond)
	from, until := start.Add(c.warm), start.Add(c.warm+c.window)
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() {
			offset := period * time.Duration(i) / time.Duration(c.conns)
			cl.pace(start.Add(offset), period, from, until)
		})
	}
	time.Sleep(time.Until(from))
	cpu0, err := proc.CPUTime(c.pid)
	if err != nil {
		return r, err
	}
	time.Sleep(time.Until(until))
	cpu1, err := proc.CPUTime(c.pid)
	if err != nil {
		return r, err
	}
	wg.Wait()
	var lat loadgen.Histogram
	for _, cl := range clients {
		cl.c.Close()
		lat.Merge(&cl.lat)
		r.RoundTrips += cl.counted
		r.Total += cl.total
		r.Errors.Add(cl.errs)
	}
	r.Seconds = c.window.Seconds()
	r.Rate = float64(r.RoundTrips) / r.Seconds
	r.P50 = micros(lat.Quantile(0.50))
	r.P99 = micros(lat.Quantile(0.99))
	r.P999 = micros(lat.Quantile(0.999))
	if r.RoundTrips > 0 {
		r.CPUPerRT = micros(cpu1-cpu0) / float64(r.RoundTrips)
	}
	return r, nil
}

// pace sends a message at first, first+period, and so on until until,
// each once the echo of the last is in, and records the latency of those
// intended at or after from.
func (cl *client) pace(first time.Time, period time.Duration, from, until time.Time) {
	cl.c.SetDeadline(until.Add(5 * time.Second))
	for due := first; due.Before(until); due = due.Add(period) {
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if !cl.roundTrip() {
			return
		}
		cl.total++
		if !due.Before(from) {
			cl.lat.Record(time.Since(due))
			cl.counted++
		}
	}
}

// roundTrip sends the message and reads its echo, counting what went
// wrong; false ends the connection's run.
func (cl *client) roundTrip() bool {
	if _, err := cl.c.Write(cl.msg); err != nil {
		cl.fail(err)
		return false
	}
	if _, err := io.ReadFull(cl.c, cl.echo); err != nil {
		cl.fail(err)
		return false
	}
	if !bytes.Equal(cl.echo, cl.msg) {
		cl.errs.Mismatch++
		return false
	}
	return true
}

func (cl *client) fail(err error) {
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		cl.errs.Timeout++
		return
	}
	cl.errs.Closed++
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
