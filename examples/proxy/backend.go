package main

import (
	"net"
	"sync/atomic"
	"time"
)

// backend is one server clients are relayed to. Every loop reads and
// updates it, so its state is atomic; a loop's pairs keep their own
// state, which no other loop touches.
type backend struct {
	idx  int
	addr string

	// active counts the pairs relaying to it now, those still connecting
	// included: leastconn compares it, and a connect in flight is load
	// that is already on its way.
	active atomic.Int64

	// Passive health. fails counts connects that failed in a row; once it
	// reaches maxFails the backend is down until downUntil (Unix
	// nanoseconds), after which the next client to pick it is its probe:
	// picking pushes downUntil on by another downTime, so that no other
	// client tries it meanwhile, and the probe's success resets both.
	fails     atomic.Int64
	downUntil atomic.Int64

	// Totals for the stats: connects that succeeded, connects that failed,
	// and pairs whose backend side ended in an error (a reset).
	connected, failed, errored atomic.Uint64
	downs                      atomic.Uint64 // times marked down
}

// pool is the set of backends and how clients are spread over them.
type pool struct {
	backends []*backend
	balance  balance
	maxFails int64
	downTime time.Duration
	rr       atomic.Uint64 // the next start for roundrobin and leastconn's ties
	logf     func(string, ...any)
}

// newPool makes the pool of cfg's backends, all up.
func newPool(cfg *config) *pool {
	p := &pool{balance: cfg.balance, maxFails: int64(cfg.maxFails), downTime: cfg.downTime, logf: cfg.logf}
	for i, addr := range cfg.backends {
		p.backends = append(p.backends, &backend{idx: i, addr: addr})
	}
	return p
}

// health is what a backend's passive health says of it now.
type health int

const (
	up        health = iota // fewer than maxFails connects have failed in a row
	probeable               // down, and its time down is over: one client may try it
	down                    // down, and no client tries it until downUntil
)

// health says whether b is up, down, or down and due for a probe at now.
func (p *pool) health(b *backend, now int64) health {
	if b.fails.Load() < p.maxFails {
		return up
	}
	if now >= b.downUntil.Load() {
		return probeable
	}
	return down
}

// pick chooses the backend for a client's next connect, among those it
// has not tried (bits of tried) and that are up, or down but due for a
// probe. It returns nil when there is none, and how many candidates it
// chose from, so that the caller can share the client's connect budget
// among them. client is the client's address, for source hashing.
func (p *pool) pick(tried uint64, client net.Addr, now int64) (*backend, int) {
	n := len(p.backends)
	start := 0
	switch p.balance {
	case source:
		start = int(hashIP(client) % uint32(n))
	default:
		start = int(p.rr.Add(1) % uint64(n))
	}
	// A probe claimed by another client meanwhile makes the candidate
	// down; look again without it. Each backend can be lost so only once.
	for range n + 1 {
		var best *backend
		candidates := 0
		for i := range n {
			b := p.backends[(start+i)%n]
			if tried&(1<<b.idx) != 0 || p.health(b, now) == down {
				continue
			}
			candidates++
			switch {
			case best == nil:
				best = b
			case p.balance == leastConn && b.active.Load() < best.active.Load():
				best = b
			}
		}
		if best == nil {
			return nil, 0
		}
		if p.health(best, now) == up || p.claimProbe(best, now) {
			return best, candidates
		}
		tried |= 1 << best.idx
	}
	return nil, 0
}

// claimProbe makes the caller b's one probe, if no other client has
// become it since the caller looked: it pushes b's time down on, so that
// others pass b by until the probe's outcome is known.
func (p *pool) claimProbe(b *backend, now int64) bool {
	until := b.downUntil.Load()
	return now >= until && b.downUntil.CompareAndSwap(until, now+int64(p.downTime))
}

// connectOK records a connect to b that succeeded: it is up.
func (p *pool) connectOK(b *backend) {
	b.connected.Add(1)
	if b.fails.Swap(0) >= p.maxFails {
		b.downUntil.Store(0)
		p.logf("proxy: backend %s is up", b.addr)
	}
}

// connectFailed records a connect to b that failed; maxFails of them in
// a row mark it down for downTime, and so does a probe that fails.
func (p *pool) connectFailed(b *backend, err error, now int64) {
	b.failed.Add(1)
	if n := b.fails.Add(1); n >= p.maxFails {
		b.downUntil.Store(now + int64(p.downTime))
		if n == p.maxFails {
			b.downs.Add(1)
			p.logf("proxy: backend %s is down for %v after %d failed connects: %v", b.addr, p.downTime, n, err)
		}
	}
}

// hashIP is FNV-1a over a client's IP address in its 16-byte form, so
// that a client hashes alike over IPv4 and IPv4-mapped IPv6. A unix
// socket's clients have no address, and all hash alike.
func hashIP(addr net.Addr) uint32 {
	var ip [16]byte
	if ta, ok := addr.(*net.TCPAddr); ok {
		ip = ta.AddrPort().Addr().As16()
	}
	h := uint32(2166136261)
	for _, b := range ip {
		h = (h ^ uint32(b)) * 16777619
	}
	return h
}
