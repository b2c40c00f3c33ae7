package sluice

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/sluicenet/sluice/poller"
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

// ProxyMode says whether connections begin with a PROXY protocol header,
// which load balancers such as HAProxy send to pass on the original
// client's address (WithProxyProtocol).
type ProxyMode int

const (
	// ProxyOff reads no header: the bytes a connection brings are all
	// traffic. It is the default.
	ProxyOff ProxyMode = iota
	// ProxyOptional reads a header when the first bytes begin one, and
	// otherwise takes them as plain traffic, for listeners that both a
	// load balancer and clients reach directly.
	ProxyOptional
	// ProxyRequired closes, unopened, a connection that does not begin with
	// a header.
	ProxyRequired
)

var proxyModes = [...]string{ProxyOff: "off", ProxyOptional: "optional", ProxyRequired: "required"}

// String returns the mode's name: "off", "optional" or "required".
func (m ProxyMode) String() string {
	if m < 0 || int(m) >= len(proxyModes) {
		return fmt.Sprintf("ProxyMode(%d)", int(m))
	}
	return proxyModes[m]
}

// MarshalText returns the mode's name, so that a ProxyMode can be a
// command-line flag (flag.TextVar) or a field of a configuration file.
func (m ProxyMode) MarshalText() ([]byte, error) {
	return []byte(m.String()), nil
}

// UnmarshalText sets m from its name: "off", "optional" or "required".
// Another name is an error wrapping ErrInvalidProxyMode.
func (m *ProxyMode) UnmarshalText(b []byte) error {
	for mode, name := range proxyModes {
		if string(b) == name {
			*m = ProxyMode(mode)
			return nil
		}
	}
	return fmt.Errorf("%w: %q (want off, optional or required)", ErrInvalidProxyMode, b)
}

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
	pauseMark     int // reading pauses past it; zero: the default; math.MaxInt WithBackpressure(false)
	maxOutbound   int // zero: no limit
	softOutbound  int // zero: no soft limit
	softFor       time.Duration
	noDelay       bool
	keepAlive     time.Duration
	recvBuf       int
	sendBuf       int
	logger        *slog.Logger

	idleTimeout  time.Duration
	readTimeout  time.Duration
	writeTimeout time.Duration

	shutdownTimeout time.Duration // bounds a stop the handler asks for
	lingerTimeout   time.Duration // bounds a lingering close; zero or less: none
	lingerBytes     int

	maxConns          int // zero: the descriptor limit, at most maxTableSlots
	maxConnsPerSource int // zero: no limit
	dgramRate         int // WithDatagramRateLimit's (udp.go); zero: no limit
	dgramBurst        int
	sessionIdle       time.Duration // WithDatagramSessions' (udp_session.go)
	sessionMax        int           // zero: no sessions
	maxInbound        int           // zero: no limit
	inBudget          int           // zero: no budget; below zero: defaultBudget, settled by Run
	outBudget         int           // the same
	wipe              bool
	keepMemory        bool // WithReleaseMemory(false)

	proxy            ProxyMode
	proxyTimeout     time.Duration
	tls              *tls.Config // Run's address's (WithTLS)
	tlsTimeout       time.Duration
	tlsMaxHandshakes int
	listeners        []listenSpec  // WithListener's, after Run's own
	handed           []handedFiles // WithListenerFiles'

	halfClose    bool
	backpressure bool

	poller     poller.Kind
	gatherWait time.Duration // WithGatherWait's; zero: off
}

func defaultOptions() options {
	return options{
		loops:         runtime.NumCPU(),
		lockOSThread:  true,
		readBufferCap: 64 << 10,
		writeBufCap:   64 << 10,
		maxOutbound:   DefaultMaxOutbound,
		noDelay:       true,
		logger:        slog.Default(),
		maxInbound:    DefaultMaxInboundBuffered,
		inBudget:      -1,
		outBudget:     -1,
		backpressure:  true,
		writeTimeout:  DefaultWriteTimeout,

		shutdownTimeout: DefaultShutdownTimeout,
		lingerTimeout:   DefaultLingerTimeout,
		lingerBytes:     DefaultLingerBytes,

		tlsTimeout:       DefaultTLSHandshakeTimeout,
		tlsMaxHandshakes: DefaultTLSMaxHandshakes,
	}
}

// timed reports whether the options give connections a deadline from the
// start, so that every loop needs a timing wheel at once. A PROXY header's
// timeout is one. The write timeout and the soft outbound limit are not:
// they are armed only once output is queued, and a loop makes its wheel
// then (timers), so an echo that never queues output keeps none.
func (o *options) timed() bool {
	if o.idleTimeout > 0 || o.readTimeout > 0 || o.proxy != ProxyOff {
		return true
	}
	for _, s := range o.listeners {
		if s.proxy != ProxyOff {
			return true
		}
	}
	return false
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
// default). Turn it off to measure what locking costs, or for loops that
// yield to other goroutines each turn (sluicehttp's, with handlers on its
// pool, run unlocked): a locked loop passes its P to another thread and
// back for each yield. Unlocked, Engine.Dial called from a callback
// dials from the loop with the fewest connections, not the callback's
// (Loop.Dial names it). io_uring's loops stay locked whatever it says.
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
// output (default 64 KiB): past it Conn.Writable reports false, and a
// DrainHandler hears when the output has drained to half of it. It is
// also how much output a handler that answers one frame per call gathers
// before the loop sends it. Reading pauses at a mark of its own,
// WithBackpressureMark's.
func WithWriteBufferCap(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.writeBufCap = n
		}
	}
}

// DefaultBackpressureMark is how much unsent output a connection may hold
// before the engine stops reading it, unless WithBackpressureMark says
// otherwise: enough that a client which writes a batch of requests before
// it reads any answer, as load generators and pipelining clients do, gets
// its answers, as it would from a server without the bound, up to batches
// of about this size beyond what the sockets hold. A WithMaxOutbound below
// twice this lowers the default to half of that bound, so that reading
// pauses before writes are refused.
const DefaultBackpressureMark = 16 << 20

// WithBackpressureMark sets the mark at which backpressure
// (WithBackpressure) stops reading a connection: once its unsent output
// passes n bytes, no more of its input is read until the output drains
// to half of n, so a peer that sends requests but never reads the
// answers holds at most n bytes of server memory, plus what one callback
// writes. The default is DefaultBackpressureMark, or half of
// WithMaxOutbound's bound where that is lower: a mark at or above the
// bound would have writes refused (ErrOutboundFull) before reading ever
// paused.
//
// A low mark bounds memory more tightly, but a client that writes more
// than the mark (and what the sockets hold) before it reads stalls: the
// server waits for it to read, and it waits for the server to read. The
// write timeout (WithWriteTimeout) then closes the connection rather than
// leaving both waiting for ever.
func WithBackpressureMark(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.pauseMark = n
		}
	}
}

// DefaultMaxOutbound is the most output a connection may hold queued
// unless WithMaxOutbound says otherwise: Redis's hard limit for a
// pub/sub subscriber.
const DefaultMaxOutbound = 32 << 20

// WithMaxOutbound bounds the output a connection may hold queued for its
// peer: what its handler wrote and the socket has yet to take, what
// other connections wrote to it, and what AsyncWrite and AsyncWritev
// posted for it from other goroutines, counted when they are posted (with
// the task each posting takes, and an AsyncWritev's slice headers). A
// write that would take it past n is refused whole, before anything is
// queued: Write returns ErrOutboundFull, and so do AsyncWrite and
// AsyncWritev (whose callback then never runs), so a publisher can drop
// the message or close the connection; Stats.OutboundRefused counts it.
// A single write larger than n always fails. Zero or less means no bound.
// The default is DefaultMaxOutbound. Over TLS it counts the records
// queued, the bytes as they go out; a callback's output as plaintext until
// the loop seals it, which adds a record's header and tag (22 to 29 bytes
// with the usual cipher suites) to each callback's output and each write
// made outside one; and a posted write as the records it will be sealed
// into, header and tag included, since each is sealed on its own: a
// million posted writes of one byte count some 23 MB, as they will take
// once sealed, not 1 MB. The records the
// record layer writes on its own, the key updates a TLS 1.3 peer asks
// for, count too: the handler never sees them, so a peer whose requests
// take the output past n is closed, with an error that wraps
// ErrOutboundFull (backpressure stops reading such a peer long before,
// unless it is off).
func WithMaxOutbound(n int) Option {
	return func(o *options) { o.maxOutbound = max(n, 0) }
}

// WithOutboundSoftLimit resets a connection whose unsent output stays
// over n bytes for d, as Redis's client-output-buffer-limit does for its
// soft limit: its queued output is dropped and its memory freed at once,
// its peer sees a TCP reset, OnClose receives ErrOutboundOverLimit, and
// Stats.OutboundOverLimit counts it. Closing such a connection (the Close
// action, Conn.Close) resets it at once rather than waiting to send what
// it holds. It is off by default (n zero or less); d of zero or less
// resets it as soon as it is over, within the deadlines' 10ms resolution.
func WithOutboundSoftLimit(n int, d time.Duration) Option {
	return func(o *options) {
		o.softOutbound = max(n, 0)
		o.softFor = max(d, 0)
	}
}

// WithTCPNoDelay sets TCP_NODELAY on every connection, accepted or dialed
// (default true; DialNoDelay overrides it for one): small replies leave at
// once instead of waiting on Nagle's algorithm.
func WithTCPNoDelay(noDelay bool) Option {
	return func(o *options) { o.noDelay = noDelay }
}

// WithTCPKeepAlive turns on TCP keep-alive on every connection, accepted
// or dialed (default off; DialKeepAlive and Conn.SetKeepAlive override it
// for one): after d without traffic the kernel sends a probe every
// d/5 (at least a second), and declares the peer dead after 5 go
// unanswered, about 2d after it went quiet, as gnet does.
func WithTCPKeepAlive(d time.Duration) Option {
	return func(o *options) { o.keepAlive = d }
}

// WithSocketRecvBuffer sets SO_RCVBUF on the listeners, UDP sockets
// included, and every connection (DialReadBuffer overrides it for a
// dial). Zero, the default, keeps the kernel's default, except on UDP
// listeners, which ask for DefaultPacketRecvBuffer. Linux doubles what it
// is asked for, to leave room for its bookkeeping, and caps what it
// grants at net.core.rmem_max (212,992 bytes unless raised with sysctl).
//
// A UDP listener's receive buffer is what holds datagrams while its loop
// is busy or its process stalled; once it is full the kernel drops what
// arrives. Each datagram takes its bytes and about 770 of the kernel's:
// the kernel's default 212,992 bytes hold 256 datagrams of 64 bytes,
// 2.5 ms at 100,000 a second, which a busy machine or a virtual
// machine's pause outlasts; 8 MiB, what Linux grants for
// DefaultPacketRecvBuffer where net.core.rmem_max allows it, holds 10,000
// of them. The buffer bounds the kernel's memory for the socket, taken
// only as datagrams wait in it: under a flood, up to twice the size
// asked for per loop's socket.
func WithSocketRecvBuffer(n int) Option {
	return func(o *options) { o.recvBuf = n }
}

// WithSocketSendBuffer sets SO_SNDBUF on the listeners and every
// connection (DialWriteBuffer overrides it for a dial); zero keeps the
// kernel's default.
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

// WithIdleTimeout closes a connection that moves no bytes, in or out, for
// d; OnClose receives ErrIdleTimeout. Zero, the default, means no idle
// timeout. Conn.SetIdleTimeout overrides it per connection. Deadlines are
// kept on a timing wheel with a resolution of 10ms, on a clock each loop
// reads once per turn, so a connection closes between d and d+10ms after
// the turn of its loop that moved its last byte.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) { o.idleTimeout = max(d, 0) }
}

// WithReadTimeout closes a connection whose frame takes longer than d to
// arrive; OnClose receives ErrReadTimeout. Zero, the default, means no read
// timeout.
//
// The handler tells the engine that a frame has started by leaving its
// bytes unread: the deadline is set when OnTraffic returns with inbound
// bytes still buffered, set afresh whenever OnTraffic consumes some of them
// (a frame completed) and leaves others, and cleared once the buffer is
// empty. A peer that trickles a frame a byte at a time is closed d after
// the frame began, however often it sends. A handler that copies partial
// frames out of the Conn instead of leaving them there gets no read
// timeout for them.
func WithReadTimeout(d time.Duration) Option {
	return func(o *options) { o.readTimeout = max(d, 0) }
}

// DefaultWriteTimeout is how long queued output may make no progress
// before the connection is closed, unless WithWriteTimeout says
// otherwise: nginx's send_timeout.
const DefaultWriteTimeout = 60 * time.Second

// WithWriteTimeout closes a connection whose queued output makes no
// progress for d, such as one whose peer stopped reading; OnClose receives
// ErrWriteTimeout. It bounds every wait on a peer that does not read: a
// reply waiting to be sent, a graceful close waiting to send what is
// queued, and a connection whose reading backpressure paused, which would
// otherwise wait on a peer that waits on it. The default is
// DefaultWriteTimeout; zero or less means none.
//
// Output makes progress when the socket takes more of it, or, for TCP on
// Linux, when the peer acknowledges output past the window it had
// offered, which it can only by reading. It is a bound on each wait, as
// nginx's send_timeout is, not on the whole answer, as a net.Conn's write
// deadline and net/http's WriteTimeout are: a peer that reads a large
// answer slowly but steadily is not cut. A peer can read
// steadily and still leave the socket full for longer than a short
// timeout, since TCP learns that it made room only when it acknowledges
// or when TCP probes its closed window, at least 200 ms (on Linux) after
// it closed and twice as late each time after. So when the deadline
// passes on a TCP connection on Linux, the kernel is asked (one system
// call, only then): the deadline waits once more unless TCP has already
// found the peer's window closed twice in a row, and again only while the
// peer acknowledges output past its window within each wait. A peer that
// stopped reading is closed within 2*d, and after d when d is longer than
// TCP's first two window probes (about 600 ms over loopback). Elsewhere
// (Unix sockets, the BSDs, Windows) the kernel is not asked and the
// connection is closed when the deadline passes, so there a d shorter
// than TCP's window probes can cut a peer that reads steadily.
func WithWriteTimeout(d time.Duration) Option {
	return func(o *options) { o.writeTimeout = max(d, 0) }
}

// DefaultShutdownTimeout is how long a stop the handler asks for waits for
// connections to send what they have queued, unless WithShutdownTimeout
// says otherwise: the grace period process managers such as Kubernetes
// give by default.
const DefaultShutdownTimeout = 30 * time.Second

// WithShutdownTimeout bounds a stop the handler asks for by returning
// Shutdown, which is graceful: once d has passed, connections still
// sending what they have queued, such as one whose peer stopped reading,
// are reset (OnClose receives ErrEngineStopped), as when Engine.Stop's
// context ends. Zero or less waits without a bound. A stop Engine.Stop
// began is bounded by its context instead, even if a callback returns
// Shutdown during it.
func WithShutdownTimeout(d time.Duration) Option {
	return func(o *options) { o.shutdownTimeout = d }
}

// DefaultPacketRecvBuffer is the receive buffer a UDP listener's socket
// asks for when WithSocketRecvBuffer sets none: large enough that a
// stall of tens of milliseconds at 100,000 datagrams a second loses
// none, where the kernel's default loses what arrives after 2.5 ms. Linux
// grants it where net.core.rmem_max allows (raise it with sysctl to 4 MiB
// or more), and otherwise as much as that allows.
const DefaultPacketRecvBuffer = 4 << 20

// Defaults for WithLingeringClose: nginx's lingering_timeout, and as much
// as a peer on loopback sends in about a millisecond.
const (
	DefaultLingerTimeout = 5 * time.Second
	DefaultLingerBytes   = 1 << 20
)

// WithLingeringClose bounds the last step of a graceful close, which the
// Close action, Conn.Close, the peer's end of stream and a graceful stop
// all take. Once a connection has sent all it had queued, the engine
// shuts down its write side, so the peer reads the end of the stream, and
// then reads and discards what the peer still sends until the peer's own
// end of stream, for at most timeout and maxBytes; then OnClose runs and
// the descriptor closes. A socket closed with unread input answers the
// peer with a TCP reset, which throws away whatever of the last reply the
// kernel had yet to deliver; lingering so is what nginx's lingering close
// and net/http do against it.
//
// A connection whose peer has already finished sending closes at once,
// and so does one closed once a stop has begun (Stop, or StopAccepting
// before it) that holds no unread input and no output its peer has yet to
// acknowledge: a stop does not wait for idle peers. A timeout of zero or
// less turns lingering off: connections close as soon as their output is
// sent. OnClose receives nil for a close that lingered, however it ended.
// Engine.Kill, the deadlines and a stop whose time is up never linger. The
// defaults are DefaultLingerTimeout and DefaultLingerBytes.
func WithLingeringClose(timeout time.Duration, maxBytes int) Option {
	return func(o *options) {
		o.lingerTimeout = timeout
		o.lingerBytes = max(maxBytes, 0)
	}
}

// WithMaxConnections bounds how many connections the engine holds at once.
// Past the bound, a new connection is accepted and closed at once, without
// OnOpen, and counted in Stats.RejectedMaxConns (a RefusalHandler can
// answer it first, with ErrTooManyConns as the reason); a dial or enrollment
// fails, and OnDialFailed receives ErrTooManyConns. A dial counts from the
// start of its connect.
//
// The bound is the capacity of the engine's connection table, whose slots
// cost 24 bytes each and are allocated when the engine starts. Without this
// option the capacity is the process's limit on open descriptors
// (RLIMIT_NOFILE), which no more connections than that could pass anyway,
// and at most 1<<20 (24 MiB of slots); set it to spend less.
func WithMaxConnections(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = n
		}
	}
}

// WithMaxConnectionsPerSource bounds how many connections one source holds
// at once. A source is a client IPv4 address, or an IPv6 /64, which one
// subscriber usually holds whole. Past the bound, a new connection from the
// source is accepted and closed at once, without OnOpen, and counted in
// Stats.RejectedPerSource (a RefusalHandler can answer it first, with
// ErrTooManyFromSource as the reason). Zero, the default, means no bound. Unix socket
// connections have no source and are not bounded.
func WithMaxConnectionsPerSource(n int) Option {
	return func(o *options) { o.maxConnsPerSource = max(n, 0) }
}

// DefaultMaxInboundBuffered is how many unread inbound bytes a connection
// may hold unless WithMaxInboundBuffered says otherwise: twice the largest
// frame the codec package accepts by default, so that such a frame, its
// header and the read after it always fit.
const DefaultMaxInboundBuffered = 128 << 20

// WithMaxInboundBuffered bounds the inbound bytes the engine holds for a
// connection: those the handler leaves unread, and on io_uring those a
// receive brought after reading was paused, which wait for the handler
// until it resumes. A peer that sends more than the handler consumes is
// closed once OnTraffic returns with more than n bytes buffered, or once
// held bytes pass n, rather than growing the server's memory: at once,
// without sending what is queued or lingering, so its peer, still
// sending, sees a TCP reset. OnClose receives ErrInboundTooLarge and
// Stats.InboundTooLarge counts it. A protocol whose frames may be larger
// (a 150 MiB upload with the default) needs a larger n, or a handler
// that consumes a frame as it arrives. A frame that outgrows the
// connection's buffer moves it to one a quarter larger, but never larger
// than n unless the unread bytes are. On
// io_uring a paused connection holds at most two read buffers' worth
// (WithReadBufferCap) where the kernel can cap a multishot receive; where
// it cannot, a connection's first pause may hold up to the loop's 4 MiB of
// receive buffers. Keep n well above that. Zero or less means no bound. The default
// is DefaultMaxInboundBuffered.
func WithMaxInboundBuffered(n int) Option {
	return func(o *options) { o.maxInbound = max(n, 0) }
}

// WithInboundBudget bounds the inbound bytes all connections together
// hold, as Redis's maxmemory-clients does, so that many connections, each
// within WithMaxInboundBuffered, cannot together exhaust the machine: the
// bytes each connection's own inbound buffer holds (partial frames the
// handler left unread, and on io_uring bytes received while it was
// paused), counted by the buffer's capacity. Stats.InboundHeld reports the
// total. When it passes n, the connections that hold the most, across all
// loops, are reset, largest first, until the rest hold no more than n;
// OnClose receives ErrInboundOverBudget and Stats.InboundOverBudget counts
// them. The others are served as before. The total may pass n briefly,
// by what the loops read in the moment the closes take. Zero or less
// means no budget.
//
// The default is a quarter of the memory the process may use: the least
// of the machine's physical memory, its cgroup's memory limit (a
// container's), and the Go runtime's soft limit (GOMEMLIMIT,
// debug.SetMemoryLimit), read when Run starts. Where none of them is
// known (Windows without GOMEMLIMIT) there is no budget by default.
func WithInboundBudget(n int) Option {
	return func(o *options) { o.inBudget = max(n, 0) }
}

// WithOutboundBudget bounds the unsent output all connections together
// hold, as WithInboundBudget bounds their inbound bytes, so that many
// connections, each within WithMaxOutbound and its backpressure mark,
// cannot together exhaust the machine: a thousand subscribers that never
// read, or clients that each ask for a large answer and never read it,
// would otherwise hold up to 32 MiB each. It counts what OutboundQueued
// counts once the loop has queued it (not what AsyncWrite posted and the
// loop has yet to take, whose bytes are the poster's; nor on io_uring the
// one send in flight); the buffers that hold it may be up to twice as
// large. Stats.OutboundHeld reports the total. When it passes n, the
// connections that hold the most, across all loops, are reset, largest
// first, until the rest hold no more than n; their queued output is
// dropped, OnClose receives ErrOutboundOverBudget and
// Stats.OutboundOverBudget counts them. The others are served as before.
// The total may pass n briefly, by what the loops queue in the moment the
// closes take, and while it does new connections are refused. Zero or
// less means no budget. The default is WithInboundBudget's: a quarter of
// the memory the process may use, where the system tells it. A UDP
// socket holds no unsent output for it to count: its loop sends each
// datagram, or drops it, when it takes it (PacketConn), so what waits is
// only what AsyncWriteTo posted, each socket's bounded by WithMaxOutbound.
func WithOutboundBudget(n int) Option {
	return func(o *options) { o.outBudget = max(n, 0) }
}

// WithWipeBuffers zeroes every buffer before it is reused for another
// connection: the per-connection buffers before they go back to their
// pools, and each loop's shared read and write buffers after each use. One
// connection's bytes then never linger in memory that another's pass
// through, at the cost of writing over each byte once more. A TLS
// connection's own buffers are zeroed too, as they grow and as it closes:
// the part of a record it has yet to receive whole, what its handshake
// read and wrote, and the plaintext its records opened to. What crypto/tls
// keeps inside its own tls.Conn is beyond the engine's reach: it is never
// pooled, and goes to the garbage collector with the connection.
func WithWipeBuffers(wipe bool) Option {
	return func(o *options) { o.wipe = wipe }
}

// WithReleaseMemory says whether the engine hands the memory of large
// buffers back to the system once they have gone (the default). A buffer
// that grew past four read buffers, at least 256 KiB, for one large
// message is not pooled when it empties, and once 16 MiB of them have
// gone an engine goroutine, never a loop, calls debug.FreeOSMemory: a
// forced collection, then every free page returned, at most once a second
// and after the burst has paused. Without it a loop that allocates nothing
// gives the collector no reason to run, and a burst of large requests
// stays resident until the runtime's periodic collection. Turn it off in a
// program that tunes the collector itself (GOGC, GOMEMLIMIT, its own calls
// to debug.FreeOSMemory) and would rather not have collections forced on it;
// large buffers are still not pooled.
func WithReleaseMemory(release bool) Option {
	return func(o *options) { o.keepMemory = !release }
}

// DefaultProxyHeaderTimeout is how long a connection may take to send its
// PROXY header when WithProxyProtocol is given no timeout. A load balancer
// sends the header with its first packet, so only a stalled or hostile peer
// comes near it.
const DefaultProxyHeaderTimeout = 5 * time.Second

// WithProxyProtocol makes the engine read the PROXY protocol header (version
// 1 or 2, package proxyproto) that a load balancer sends before a relayed
// connection's first byte. The loop reads and strips the header before
// OnOpen, so the handler never sees it: Conn.RemoteAddr is then the original
// client's address, per-source limits (WithMaxConnectionsPerSource) count
// that client, Conn.ProxyHeader returns the header with its TLVs, and bytes
// that followed the header reach OnTraffic as they came.
//
// A connection whose header is malformed, does not complete within timeout,
// or, in ProxyRequired mode, is missing, is closed before the handler sees
// it, with neither OnOpen nor OnClose, and counted in Stats (ProxyInvalid,
// ProxyTimeouts, ProxyMissing). In ProxyOptional mode a client that sends
// nothing for timeout is not closed but opened as a plain one, so that
// protocols whose server speaks first still work; it waits that long for
// its greeting. A timeout of zero or less means DefaultProxyHeaderTimeout.
// The timeout has the resolution of the other deadlines (WithIdleTimeout).
//
// Only trusted load balancers may reach a listener that reads the header:
// a client that can send one claims any address it likes. The loop a
// connection runs on is chosen before its header is read, so
// SourceAddrHash spreads connections by the balancer's address, not the
// client's.
//
// A UDP listener reads a version 2 header at the start of each datagram,
// as a proxy relaying UDP sends it, with no wait and so no timeout: a
// datagram carries its header whole or is dropped (PacketConn).
func WithProxyProtocol(mode ProxyMode, timeout time.Duration) Option {
	return func(o *options) {
		o.proxy = mode
		o.proxyTimeout = timeout
		if timeout <= 0 {
			o.proxyTimeout = DefaultProxyHeaderTimeout
		}
	}
}

// WithHalfClose sets what a peer's end of stream does to a connection,
// unless Conn.SetHalfClose says otherwise for it. By default (false) the
// connection closes once its queued output is sent. With true it stays
// open for writing: reading stops, OnHalfClose runs (HalfCloseHandler),
// and the handler writes until it closes the connection, or shuts its
// write side down with Conn.CloseWrite, which then closes it: the
// behaviour of a TCP relay, or of a server that answers once its client
// has sent everything.
func WithHalfClose(halfClose bool) Option {
	return func(o *options) { o.halfClose = halfClose }
}

// WithBackpressure sets whether the engine stops reading a connection
// while its own unsent output is past the backpressure mark
// (WithBackpressureMark), until it drains to half of it. It does by
// default: a peer that sends requests but does not read the answers
// stops being read, and cannot grow the server's memory. A relay turns it
// off: it pauses each connection by the output of the other one it feeds
// (Conn.PauseRead, DrainHandler) instead, and pausing a connection for
// its own output as well would deadlock against a peer that stops
// reading while its output is full, as most servers do. Off, the handler
// bounds what it queues, within WithMaxOutbound; WithWriteTimeout still
// bounds a peer that never reads.
func WithBackpressure(on bool) Option {
	return func(o *options) { o.backpressure = on }
}

// WithListener adds a listener on addr, given as Run's is, to the one Run
// opens (or to none, when Run's address is empty): one engine serves
// several ports, or TCP and a unix socket at once. Engine.Addrs lists
// every listener, and Conn.ListenerAddr tells which accepted a connection.
// ListenerOptions set what differs for this listener.
func WithListener(addr string, opts ...ListenerOption) Option {
	return func(o *options) {
		s := listenSpec{addr: addr, proxy: -1}
		for _, opt := range opts {
			opt(&s)
		}
		o.listeners = append(o.listeners, s)
	}
}

// A ListenerOption sets what differs for one listener (WithListener).
type ListenerOption func(*listenSpec)

// ListenProxyProtocol sets the listener's PROXY protocol mode, in place of
// WithProxyProtocol's: a public port reads none while an internal one,
// behind a load balancer, requires it. The header timeout is
// WithProxyProtocol's, or DefaultProxyHeaderTimeout.
func ListenProxyProtocol(mode ProxyMode) ListenerOption {
	return func(s *listenSpec) { s.proxy = mode }
}

// listen returns the listeners to open: addr, unless empty, then
// WithListener's, each with its PROXY protocol mode settled. A PROXY
// header's wait is bounded even where only a listener asks for one.
func (o *options) listen(addr string) []listenSpec {
	var specs []listenSpec
	if addr != "" {
		specs = append(specs, listenSpec{addr: addr, proxy: o.proxy, tls: o.tls})
	}
	specs = append(specs, o.listeners...)
	specs = o.inherit(specs)
	for i := range specs {
		if specs[i].proxy < 0 {
			specs[i].proxy = o.proxy
		}
	}
	o.listeners = specs
	if o.proxyTimeout <= 0 {
		o.proxyTimeout = DefaultProxyHeaderTimeout
	}
	return specs
}

// listenSpec is one address to listen on and its own options; a proxy
// mode below zero is the engine's.
type listenSpec struct {
	addr  string
	proxy ProxyMode
	tls   *tls.Config // nil: plain TCP

	// Sockets listening already, which the engine serves instead of
	// binding addr (handover.go), and the name they go by.
	handed bool
	files  []*os.File
	nl     net.Listener
	name   string
}

// ListenTLS serves TLS on the listener with cfg, which must hold the
// server's certificate (Certificates or GetCertificate). The handshake
// runs before OnOpen, after the PROXY header if the listener reads one,
// bounded by WithTLSHandshakeTimeout; the handler sees only plaintext,
// and Conn.ConnectionState tells what was agreed. cfg is copied, with
// renegotiation kept off. A connection whose handshake fails is closed
// without OnOpen or OnClose (TLSFailedHandler hears of it).
func ListenTLS(cfg *tls.Config) ListenerOption {
	return func(s *listenSpec) { s.tls = cfg }
}

// WithTLS serves TLS with cfg on the address Run or Start listens on, as
// ListenTLS does for a WithListener.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tls = cfg }
}

// WithTLSHandshakeTimeout bounds each TLS handshake: a client that has not
// finished its handshake d after it was admitted (or after its PROXY
// header) is closed, counted in Stats.TLSHandshakeTimeouts, and reported
// with ErrTLSHandshakeTimeout; so is a server that has not finished its
// handshake d after a DialTLS connection connected, which fails its dial.
// Zero or less means DefaultTLSHandshakeTimeout.
func WithTLSHandshakeTimeout(d time.Duration) Option {
	return func(o *options) {
		o.tlsTimeout = d
		if d <= 0 {
			o.tlsTimeout = DefaultTLSHandshakeTimeout
		}
	}
}

// WithTLSMaxHandshakes bounds how many TLS handshakes the engine runs at
// once, each on a goroutine of its own, those of accepted and of dialed
// connections (DialTLS) together: a connection that would start one more
// is refused, closed unseen, counted in Stats.TLSHandshakeFailures and
// reported with ErrTooManyHandshakes (a dial's to OnDialFailed), rather
// than kept waiting while its client times out. A handshake whose
// connection closes (the timeout, Engine.Kill, a stop) while its
// goroutine runs one of the tls.Config's callbacks (GetCertificate,
// VerifyConnection, ...) counts until the callback returns, and its
// goroutine ends then, which may be after Engine.Wait has returned.
// It also bounds what handshakes hold of their peers' bytes, which
// WithInboundBudget does not count: a connection in its handshake stops
// being read once it holds two records of the largest size (about 36 KiB)
// that the handshake has not read, so the handshakes hold at most n times
// a few records' worth. Zero or less means DefaultTLSMaxHandshakes.
func WithTLSMaxHandshakes(n int) Option {
	return func(o *options) {
		o.tlsMaxHandshakes = n
		if n <= 0 {
			o.tlsMaxHandshakes = DefaultTLSMaxHandshakes
		}
	}
}
