package loadgen

import (
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// Accepts measures connection setup for d: cfg.Conns connections in progress
// at once, each of which connects, sends one message of cfg.Size bytes, reads
// the echo and closes, and is followed at once by a new one. A round trip in
// the result is one such connection, its latency counted from the connect.
func Accepts(cfg Config, d time.Duration) (Result, error) {
	if err := cfg.check(); err != nil {
		return Result{}, err
	}
	if cfg.TLS != nil {
		return Result{}, fmt.Errorf("%w: Accepts is plain TCP; Handshakes speaks TLS", ErrConfig)
	}
	s := new(Session)
	defer s.Close()
	for i := range cfg.Workers {
		w, err := newWorker()
		if err != nil {
			return Result{}, err
		}
		s.workers = append(s.workers, w)
		from, to := share(cfg.Conns, cfg.Workers, i)
		for id := from; id < to; id++ {
			w.conns = append(w.conns, conn{id: id, msg: newMsg(cfg.Size, id), dead: true})
		}
	}
	until := now() + int64(d)
	return s.each(func(_ int, w *worker) { w.churn(cfg.Addr, until) }), nil
}

// churn runs Accepts' loop on the worker's connection slots until the given
// time, then waits for the connections still open to finish.
func (w *worker) churn(addr netip.AddrPort, until int64) {
	w.res = Result{}
	open := 0
	for i := range w.conns {
		if w.connect(addr, i) {
			open++
		}
	}
	var drainBy int64
	for open > 0 {
		t := now()
		if t >= until && drainBy == 0 {
			drainBy = t + int64(drainTimeout)
		}
		if drainBy > 0 && t >= drainBy {
			w.abandon()
			return
		}
		for _, ev := range w.wait(max(max(until, drainBy)-t, 0)) {
			i := int(ev.Fd)
			if w.step(i, ev.Events) {
				continue
			}
			open--
			if now() < until && w.connect(addr, i) {
				open++
			}
		}
	}
}

// connect starts a new connection in slot i; it reports whether one is
// under way.
func (w *worker) connect(addr netip.AddrPort, i int) bool {
	c := &w.conns[i]
	w.dials++
	fd, err := openSocket(addr, source(addr, w.dials), false)
	if err != nil {
		w.res.Errors.Dial++
		return false
	}
	c.fd, c.dead, c.dialing, c.start = fd, false, true, now()
	if w.watch(unix.EPOLL_CTL_ADD, i, true) != nil {
		w.res.Errors.Dial++
		w.kill(c)
		return false
	}
	return true
}

// step moves slot i's connection along on the events epoll reported: from
// connected to sending, from sending to reading, from the whole echo to
// closed. It reports whether the connection is still open.
func (w *worker) step(i int, events uint32) bool {
	c := &w.conns[i]
	if c.dialing {
		c.dialing = false
		if !connected(c.fd) {
			w.res.Errors.Dial++
			w.kill(c)
			return false
		}
		c.stamp()
		c.sent, c.got, c.busy = 0, 0, true
	}
	if c.sent < len(c.msg) {
		if r := c.write(); r == failed || (r == complete && w.watch(unix.EPOLL_CTL_MOD, i, false) != nil) {
			w.res.Errors.Closed++
			w.kill(c)
			return false
		}
		return true
	}
	if events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
		return true
	}
	switch c.read(w.buf, &w.res.Errors) {
	case pending:
		return true
	case complete:
		w.res.RoundTrips++
		w.res.Latency.Record(time.Duration(now() - c.start))
		c.seq++
	}
	w.kill(c)
	return false
}
