// Package measure takes one benchmark measurement of an echo server running
// in another process: it drives the load with package loadgen and reads the
// server's cost around the measured window, its CPU time and resident memory
// with package proc, its system calls with package syscount.
//
// Each function warms the server up before its window and counts in
// Report.Total every round trip it drove, so the caller can divide what the
// server reports about its whole life (heap allocations) by it.
package measure

import (
	"time"

	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/proc"
	"github.com/sluicenet/sluice/benchmarks/syscount"
)

// Target is the server to measure and the load's shape.
type Target struct {
	loadgen.Config
	PID int // the server's process, for its CPU time, memory and system calls
	// Listener, when above 0, is a listening socket's descriptor: the
	// closed, paced and syscalls modes then accept their connections on it,
	// dialed by the server, instead of dialing Addr.
	Listener int
	// UDP: the closed, paced, syscalls and loss modes drive a UDP echo
	// server with a loadgen.DatagramSession, each of Conns peers a socket
	// of its own, and a round trip is a datagram echoed.
	UDP bool
}

// Report is what one measurement found. cmd/loadgen prints it as JSON and
// cmd/bench reads it back. Figures a mode does not measure are zero.
type Report struct {
	Mode       string  `json:"mode"`
	Conns      int     `json:"conns"`
	Size       int     `json:"size"`
	RoundTrips int64   `json:"round_trips"`       // in the measured window
	Total      int64   `json:"total_round_trips"` // warm-up included
	Seconds    float64 `json:"seconds"`           // the window's length
	Rate       float64 `json:"rate"`              // round trips (or connections) per second
	P50        float64 `json:"p50_us"`            // latency percentiles, microseconds
	P99        float64 `json:"p99_us"`
	P999       float64 `json:"p999_us"`
	CPUPerRT   float64 `json:"cpu_us_per_rt"` // server CPU per round trip, microseconds
	RSSBefore  int64   `json:"rss_before"`    // server resident bytes
	RSSAfter   int64   `json:"rss_after"`
	PerConn    float64 `json:"bytes_per_conn"` // resident bytes per connection
	// Memory mode with a second message: its size, and resident bytes per
	// connection after it.
	ThenSize    int            `json:"then_size,omitempty"`
	ThenPerConn float64        `json:"then_bytes_per_conn,omitempty"`
	Syscalls    int64          `json:"syscalls"`
	PerRT       float64        `json:"syscalls_per_rt"`
	Errors      loadgen.Errors `json:"errors"`
	// TLS: what the handshakes negotiated, and how many of the measured
	// window's handshakes resumed a session (handshakes mode).
	TLS     string `json:"tls,omitempty"`
	Resumed int64  `json:"resumed,omitempty"`
	// Datagrams: those of the measured window not echoed within
	// loadgen.LossTimeout, and echoes that came after that.
	Lost int64 `json:"lost,omitempty"`
	Late int64 `json:"late,omitempty"`
}

// LossRate returns the share of the window's datagrams that were lost.
func (r Report) LossRate() float64 {
	if r.RoundTrips+r.Lost == 0 {
		return 0
	}
	return float64(r.Lost) / float64(r.RoundTrips+r.Lost)
}

// window records a measured run into r: its rate, latency, errors and the
// server's CPU per round trip from cpu0, read just before the run.
func (r *Report) window(t Target, res *loadgen.Result, cpu0 time.Duration) error {
	cpu1, err := proc.CPUTime(t.PID)
	if err != nil {
		return err
	}
	r.RoundTrips = res.RoundTrips
	r.Seconds = res.Elapsed.Seconds()
	r.Rate = res.Rate()
	r.P50 = micros(res.Latency.Quantile(0.50))
	r.P99 = micros(res.Latency.Quantile(0.99))
	r.P999 = micros(res.Latency.Quantile(0.999))
	r.Lost, r.Late, r.Resumed = res.Lost, res.Late, res.Resumed
	if res.RoundTrips > 0 {
		r.CPUPerRT = micros(cpu1-cpu0) / float64(res.RoundTrips)
	}
	r.add(res)
	return nil
}

// add counts a run's round trips and errors, warm-up or measured.
func (r *Report) add(res *loadgen.Result) {
	r.Total += res.RoundTrips
	r.Errors.Add(res.Errors)
	if r.TLS == "" {
		r.TLS = res.TLS
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func newReport(mode string, t Target) Report {
	return Report{Mode: mode, Conns: t.Conns, Size: t.Size}
}

// A session is open connections, or UDP peers, to run loads over: a
// *loadgen.Session or a *loadgen.DatagramSession.
type session interface {
	Run(d time.Duration) loadgen.Result
	Exchange(n int64) loadgen.Result
	Pace(rate int, d time.Duration) loadgen.Result
	Negotiated() string
	Close()
}

// A load is one run over a session; a measurement has a warm-up load and a
// measured one.
type load func(session) (loadgen.Result, error)

// Closed measures the closed loop: every connection keeps one message in
// flight, for d after warm of warm-up.
func Closed(t Target, warm, d time.Duration) (Report, error) {
	return measureSession("closed", t, closedFor(warm), closedFor(d))
}

func closedFor(d time.Duration) load {
	return func(s session) (loadgen.Result, error) { return s.Run(d), nil }
}

// Paced measures the open loop at rate round trips per second, for d after
// warm of warm-up at the same rate. Its CPU per round trip is the table's main
// efficiency figure.
func Paced(t Target, rate int, warm, d time.Duration) (Report, error) {
	pacedFor := func(d time.Duration) load {
		return func(s session) (loadgen.Result, error) { return s.Pace(rate, d), nil }
	}
	return measureSession("paced", t, pacedFor(warm), pacedFor(d))
}

// Syscalls counts the server's system calls over exactly n round trips on
// t.Conns connections, after warm of closed-loop warm-up. perf must be
// installed (Debian package linux-perf).
func Syscalls(t Target, warm time.Duration, n int64) (Report, error) {
	var calls int64
	r, err := measureSession("syscalls", t, closedFor(warm), func(s session) (loadgen.Result, error) {
		c, err := syscount.Start(t.PID)
		if err != nil {
			return loadgen.Result{}, err
		}
		if err := c.Enable(); err != nil {
			c.Stop()
			return loadgen.Result{}, err
		}
		res := s.Exchange(n)
		if err := c.Disable(); err != nil {
			c.Stop()
			return res, err
		}
		calls, err = c.Stop()
		return res, err
	})
	r.Syscalls = calls
	if r.RoundTrips > 0 {
		r.PerRT = float64(calls) / float64(r.RoundTrips)
	}
	return r, err
}

// open opens t's connections: dialed, or accepted on t.Listener; or its
// UDP peers.
func open(t Target) (session, error) {
	switch {
	case t.UDP:
		return loadgen.DialDatagrams(t.Config)
	case t.Listener > 0:
		return loadgen.Accept(t.Listener, t.Config)
	}
	return loadgen.Dial(t.Config)
}

// Loss measures a UDP server just below its saturation: after warm of
// closed-loop warm-up it measures the closed loop's rate over d (every
// peer one datagram in flight), then paces datagrams at fraction of that
// rate for d, and reports that window, its Lost the datagrams the server
// did not echo within loadgen.LossTimeout. Its Rate is the paced rate
// reached.
func Loss(t Target, fraction float64, warm, d time.Duration) (Report, error) {
	return measureSession("loss", t, closedFor(warm), func(s session) (loadgen.Result, error) {
		sat := s.Run(d)
		if sat.Errors.Total() > 0 || sat.Rate() == 0 {
			return sat, nil
		}
		return s.Pace(int(fraction*sat.Rate()), d), nil
	})
}

// measureSession opens t's connections, runs warm, then measures run.
func measureSession(mode string, t Target, warm, run load) (Report, error) {
	r := newReport(mode, t)
	s, err := open(t)
	if err != nil {
		return r, err
	}
	defer s.Close()
	r.TLS = s.Negotiated()
	res, err := warm(s)
	r.add(&res)
	if err != nil {
		return r, err
	}
	cpu0, err := proc.CPUTime(t.PID)
	if err != nil {
		return r, err
	}
	if res, err = run(s); err != nil {
		r.add(&res)
		return r, err
	}
	return r, r.window(t, &res, cpu0)
}

// Accepts measures connection setup: t.Conns connections at a time, each
// connecting, making one round trip and closing, for d after warm.
func Accepts(t Target, warm, d time.Duration) (Report, error) {
	return measureSetups("accepts", t, loadgen.Accepts, warm, d)
}

// Handshakes measures TLS connection setup: t.Conns connections at a time,
// each connecting, completing a handshake with t.TLS, making one round trip
// and closing, for d after warm; resumed ones if t.TLS has a session
// cache, which the warm-up fills.
func Handshakes(t Target, warm, d time.Duration) (Report, error) {
	return measureSetups("handshakes", t, loadgen.Handshakes, warm, d)
}

// measureSetups runs setup (loadgen.Accepts or loadgen.Handshakes) for
// warm, then measures it for d.
func measureSetups(mode string, t Target, setup func(loadgen.Config, time.Duration) (loadgen.Result, error), warm, d time.Duration) (Report, error) {
	r := newReport(mode, t)
	res, err := setup(t.Config, warm)
	if err != nil {
		return r, err
	}
	r.add(&res)
	cpu0, err := proc.CPUTime(t.PID)
	if err != nil {
		return r, err
	}
	if res, err = setup(t.Config, d); err != nil {
		return r, err
	}
	return r, r.window(t, &res, cpu0)
}

// Memory measures resident bytes per idle connection: it opens t.Conns
// connections, sends one message on each, waits for the server's memory to
// settle, and divides the growth by the connections. With thenSize above
// 0 it then sends one message of thenSize bytes on each of the same
// connections and measures again (Report.ThenPerConn): what a connection
// keeps after one large message.
func Memory(t Target, thenSize int) (Report, error) {
	r := newReport("memory", t)
	before, err := proc.RSS(t.PID)
	if err != nil {
		return r, err
	}
	s, err := loadgen.Dial(t.Config)
	if err != nil {
		return r, err
	}
	defer s.Close()
	r.TLS = s.Negotiated()
	res := s.Exchange(int64(t.Conns))
	r.add(&res)
	r.RoundTrips = res.RoundTrips
	after, err := settledRSS(t.PID)
	if err != nil {
		return r, err
	}
	r.RSSBefore, r.RSSAfter = before, after
	r.PerConn = float64(after-before) / float64(t.Conns)
	if thenSize <= 0 {
		return r, nil
	}
	s.Resize(thenSize)
	res = s.Exchange(int64(t.Conns))
	r.add(&res)
	if after, err = settledRSS(t.PID); err != nil {
		return r, err
	}
	r.ThenSize = thenSize
	r.ThenPerConn = float64(after-before) / float64(t.Conns)
	return r, nil
}

// Settling: resident memory counts as settled when two readings settleEvery
// apart differ by at most settleSlack, or at settleTimeout regardless.
const (
	settleEvery   = 100 * time.Millisecond
	settleSlack   = 64 << 10
	settleTimeout = 3 * time.Second
)

// settledRSS waits for the resident memory of process pid to stop moving
// and returns it.
func settledRSS(pid int) (int64, error) {
	prev, err := proc.RSS(pid)
	for deadline := time.Now().Add(settleTimeout); err == nil && time.Now().Before(deadline); {
		time.Sleep(settleEvery)
		var cur int64
		if cur, err = proc.RSS(pid); err == nil && abs(cur-prev) <= settleSlack {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}

func abs(n int64) int64 { return max(n, -n) }

// Idle measures resident bytes per idle connection where another client
// than the load generator opens them (an HTTP client, say): open opens
// conns connections to process pid, each having made one exchange, and
// returns how many it holds open and what went wrong; Idle reads pid's
// memory before, and again once it settles after, and divides the growth
// by conns. The connections must stay open until Idle returns.
func Idle(pid, conns int, open func() (held int, errs loadgen.Errors)) (Report, error) {
	r := Report{Mode: "memory", Conns: conns}
	before, err := proc.RSS(pid)
	if err != nil {
		return r, err
	}
	held, errs := open()
	r.Errors.Add(errs)
	r.RoundTrips, r.Total = int64(held), int64(held)
	after, err := settledRSS(pid)
	if err != nil {
		return r, err
	}
	r.RSSBefore, r.RSSAfter = before, after
	r.PerConn = float64(after-before) / float64(conns)
	return r, nil
}
