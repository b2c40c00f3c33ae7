package sluice

import (
	"log/slog"
	"runtime"
	"time"
)

// LoadBalancing is how a shared listener spreads accepted connections
// over the event loops.
type LoadBalancing int

const (
	// RoundRobin hands connections to the loops in turn.
	RoundRobin LoadBalancing = iota
	// LeastConnections hands each connection to the loop with the fewest.
	LeastConnections
	// SourceAddrHash keeps every connection from one client IP on one loop.
	SourceAddrHash
)

// Option configures Run.
type Option func(*options)

type options struct {
	loops         int
	lb            LoadBalancing
	reusePort     bool
	lockOSThread  bool
	ticker        bool
	readBufferCap int
	writeBufCap   int
	noDelay       bool
	keepAlive     time.Duration
	recvBuf       int
	sendBuf       int
	logger        *slog.Logger
}

func defaultOptions() options {
	return options{
		loops:         runtime.NumCPU(),
		lockOSThread:  true,
		readBufferCap: 64 << 10,
		writeBufCap:   64 << 10,
		noDelay:       true,
		logger:        slog.Default(),
	}
}

// WithNumEventLoop sets how many event loops run; the default is one per
// CPU. Values below one mean one.
func WithNumEventLoop(n int) Option {
	return func(o *options) { o.loops = max(n, 1) }
}

// WithMulticore runs one event loop per CPU when true (the default) and a
// single loop when false.
func WithMulticore(multicore bool) Option {
	return func(o *options) {
		o.loops = 1
		if multicore {
			o.loops = runtime.NumCPU()
		}
	}
}

// WithLoadBalancing chooses how a shared listener spreads connections over
// the loops. It has no effect WithReusePort(true), where the kernel does.
func WithLoadBalancing(lb LoadBalancing) Option {
	return func(o *options) { o.lb = lb }
}

// WithReusePort gives every loop its own SO_REUSEPORT listener on the same
// address, so the kernel spreads connections and no loop hands one to
// another. Unix sockets ignore it.
func WithReusePort(reusePort bool) Option {
	return func(o *options) { o.reusePort = reusePort }
}

// WithLockOSThread locks each event loop to its own OS thread (the
// default). Turn it off only to measure what locking costs.
func WithLockOSThread(lock bool) Option {
	return func(o *options) { o.lockOSThread = lock }
}

// WithTicker makes the engine call OnTick.
func WithTicker(ticker bool) Option {
	return func(o *options) { o.ticker = ticker }
}

// WithReadBufferCap sets the size of each loop's read buffer, the most one
// read takes from a socket (default 64 KiB).
func WithReadBufferCap(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.readBufferCap = n
		}
	}
}

// WithWriteBufferCap sets the high-water mark of a connection's unsent
// output (default 64 KiB). Past it the loop stops reading the connection
// until the output drains below half, so a peer that never reads cannot
// grow the server's memory without bound.
func WithWriteBufferCap(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.writeBufCap = n
		}
	}
}

// WithTCPNoDelay sets TCP_NODELAY on accepted connections (default true):
// small replies leave at once instead of waiting on Nagle's algorithm.
func WithTCPNoDelay(noDelay bool) Option {
	return func(o *options) { o.noDelay = noDelay }
}

// WithTCPKeepAlive turns on TCP keep-alive probes with period d on
// accepted connections (default off).
func WithTCPKeepAlive(d time.Duration) Option {
	return func(o *options) { o.keepAlive = d }
}

// WithSocketRecvBuffer sets SO_RCVBUF on the listeners and accepted
// connections; zero keeps the kernel's default.
func WithSocketRecvBuffer(n int) Option {
	return func(o *options) { o.recvBuf = n }
}

// WithSocketSendBuffer sets SO_SNDBUF on the listeners and accepted
// connections; zero keeps the kernel's default.
func WithSocketSendBuffer(n int) Option {
	return func(o *options) { o.sendBuf = n }
}

// WithLogger sets where the engine logs (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}
