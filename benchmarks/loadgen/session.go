package loadgen

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"time"
)

// Config says what to connect to and how.
type Config struct {
	Addr    netip.AddrPort
	Conns   int // connections (for Accepts: connections in progress at once)
	Size    int // message size in bytes; each connection holds a message this big
	Workers int // epoll loops, each on its own thread; give each a core
	// TLS, if set, is the client configuration every connection speaks
	// TLS with (see ClientTLS); nil for plain TCP.
	TLS *tls.Config
	// InFlight, for a DatagramSession, is how many datagrams each peer
	// keeps in flight in the closed loop, sent and received in batches;
	// 0 or 1, one at a time. Streams keep one message in flight.
	InFlight int
	// Segmented, with InFlight above 1, has each peer send a batch with
	// one sendmsg(2) and UDP generic segmentation offload (UDP_SEGMENT)
	// in place of a sendmmsg, as a QUIC stack does: the kernel hands the
	// batch on as one buffer, which a server that coalesces receives
	// (UDP_GRO) takes in one piece, and one that does not, datagram by
	// datagram.
	Segmented bool
}

func (c Config) check() error {
	if !c.Addr.IsValid() {
		return fmt.Errorf("%w: %+v", ErrConfig, c)
	}
	return c.checkLoad()
}

// checkLoad checks all but the address, which Accept does not use.
func (c Config) checkLoad() error {
	if c.Conns < 1 || c.Size < 1 || c.Workers < 1 || c.InFlight < 0 {
		return fmt.Errorf("%w: %+v", ErrConfig, c)
	}
	return nil
}

// dialTimeout bounds opening a session's connections.
const dialTimeout = 30 * time.Second

// A Session is a set of open connections to one server, spread over workers.
// Its runs follow one another; a Session is not for concurrent use.
type Session struct {
	workers []*worker
}

// Dial opens cfg.Conns connections to cfg.Addr. It fails with ErrDial if any
// cannot be opened.
func Dial(cfg Config) (*Session, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := new(Session)
	deadline, tlsDeadline := now()+int64(dialTimeout), time.Now().Add(dialTimeout)
	for i := range cfg.Workers {
		w, err := newWorker()
		if err != nil {
			s.Close()
			return nil, err
		}
		s.workers = append(s.workers, w)
		from, to := share(cfg.Conns, cfg.Workers, i)
		if cfg.TLS != nil {
			w.dialSecure(cfg, to-from, from, tlsDeadline)
			continue
		}
		w.dial(cfg.Addr, to-from, cfg.Size, from, deadline)
	}
	if res := s.collect(0); res.Errors.Dial > 0 {
		s.Close()
		return nil, fmt.Errorf("%w: %d of %d connections to %v failed", ErrDial, res.Errors.Dial, cfg.Conns, cfg.Addr)
	}
	return s, nil
}

// Negotiated says what the session's TLS handshakes settled on (see
// Negotiated); empty for plain TCP.
func (s *Session) Negotiated() string {
	for _, w := range s.workers {
		if w.negotiated != "" {
			return w.negotiated
		}
	}
	return ""
}

// share returns the half-open range of n items that part i of parts gets.
func share(n, parts, i int) (from, to int) {
	return n * i / parts, n * (i + 1) / parts
}

// Resize gives every connection messages of size bytes from the next run
// on: for a run of one size after another on the same connections.
func (s *Session) Resize(size int) {
	for _, w := range s.workers {
		for i := range w.conns {
			c := &w.conns[i]
			c.msg = newMsg(size, c.id)
		}
	}
}

// Close closes every connection.
func (s *Session) Close() {
	for _, w := range s.workers {
		w.close()
	}
}

// Run runs the closed loop for d: each connection sends a message, waits for
// its echo, and sends the next at once.
func (s *Session) Run(d time.Duration) Result { return s.runPlans(closedFor(d)) }

// Exchange runs the closed loop for exactly n round trips, shared among the
// connections.
func (s *Session) Exchange(n int64) Result { return s.runPlans(exactly(n, len(s.workers))) }

// Pace runs the open loop for d: rate messages per second in all, the
// connections taking turns at even intervals, whether or not earlier echoes
// are back. A connection keeps one message in flight: one that is due while
// it waits goes out when the echo arrives, and its latency still counts from
// when it was due. Every message due within d is sent, rate*d in all, even
// when the generator itself falls behind the schedule.
func (s *Session) Pace(rate int, d time.Duration) Result {
	return s.runPlans(pacedAt(rate, d, len(s.workers)))
}

// runPlans runs plans(i) on worker i.
func (s *Session) runPlans(plans func(i int) plan) Result {
	return s.each(func(i int, w *worker) { w.run(plans(i)) })
}

// each runs fn on every worker at once and merges what they measured.
func (s *Session) each(fn func(i int, w *worker)) Result {
	start := now()
	onThreads(s.workers, fn)
	return s.collect(time.Duration(now() - start))
}

// onThreads runs fn on every worker at once, each on its own locked thread,
// and returns when all have returned.
func onThreads[W any](workers []W, fn func(i int, w W)) {
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			fn(i, w)
		})
	}
	wg.Wait()
}

// collect merges the workers' results of the last run.
func (s *Session) collect(elapsed time.Duration) Result {
	res := Result{Elapsed: elapsed}
	for _, w := range s.workers {
		res.merge(&w.res)
	}
	return res
}
