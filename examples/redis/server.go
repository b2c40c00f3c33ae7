package main

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/codec"
	"github.com/sluicenet/sluice/poller"
)

// config is what the command line sets.
type config struct {
	addr        string
	loops       int
	maxRequest  int           // bytes; zero means codec.DefaultMaxFrameSize
	maxClients  int           // zero means as many as the process may open
	idleTimeout time.Duration // zero means none
	proxy       sluice.ProxyMode
	poller      poller.Kind // the zero Kind is epoll
	tls         *tls.Config // nil: plain TCP

	readTimeout  time.Duration // zero means none
	writeTimeout time.Duration // zero means sluice.DefaultWriteTimeout; below zero, none
	output       outputLimit   // the zero limit means the defaults

	files []*os.File // listening sockets handed to the process (package upgrade)
}

// requestLimit returns the largest command accepted, in bytes.
func (c *config) requestLimit() int {
	if c.maxRequest <= 0 {
		return codec.DefaultMaxFrameSize
	}
	return c.maxRequest
}

// inboundLimit returns how many unread bytes the engine lets a connection
// hold: enough for the largest command, the commands before it in its
// read, and the read after it, as the engine's default is for codec's.
func (c *config) inboundLimit() int {
	return max(sluice.DefaultMaxInboundBuffered, 2*c.requestLimit())
}

// options returns the engine options the configuration asks for.
func (c *config) options() []sluice.Option {
	return []sluice.Option{
		sluice.WithNumEventLoop(c.loops),
		sluice.WithTicker(true), // drives active expiry
		sluice.WithMaxConnections(c.maxClients),
		sluice.WithIdleTimeout(c.idleTimeout),
		sluice.WithProxyProtocol(c.proxy, 0),
		sluice.WithMaxInboundBuffered(c.inboundLimit()),
		sluice.WithPoller(c.poller),
		sluice.WithReadTimeout(c.readTimeout),
		sluice.WithWriteTimeout(c.writeLimit()),
		sluice.WithMaxOutbound(c.output.engineBound()),
		sluice.WithOutboundSoftLimit(c.output.normalLimit().soft, c.output.normalLimit().softFor),
		sluice.WithTLS(c.tls),
		sluice.WithListenerFiles(c.files, sluice.ListenTLS(c.tls)),
		// Unlocked: no other thread can run a loop locked to its own, so
		// each of its passes through the Go scheduler (every few
		// milliseconds, to keep the runtime from taking it for stuck) and
		// each return from a wait whose P the runtime took meanwhile hands
		// the P from one thread to another and back, waking both. The
		// server never dials from a callback, the one thing locking serves
		// on epoll; io_uring's loops stay locked whatever this says.
		sluice.WithLockOSThread(false),
	}
}

// writeLimit returns how long a client's replies may wait on it to read.
func (c *config) writeLimit() time.Duration {
	if c.writeTimeout == 0 {
		return sluice.DefaultWriteTimeout
	}
	return max(c.writeTimeout, 0)
}

// defaultHz is how often a second active expiry runs, as Redis's hz,
// which CONFIG SET changes.
const defaultHz = 10

// flushAt is how much reply a batch of commands gathers before handing it
// to the connection, so that one huge batch does not grow the buffer.
const flushAt = 64 << 10

// server is the event handler: every event loop runs its callbacks, so
// what it holds is either safe for concurrent use or set before the first
// connection.
type server struct {
	sluice.BuiltinEventEngine
	cfg     config
	db      keyspace
	pubsub  pubsub
	clients registry
	started time.Time
	booted  chan struct{} // closed by OnBoot, once eng is set
	eng     sluice.Engine
	loops   []*loopState // by index, set by OnBoot

	// shutdown is closed, once, when a client's SHUTDOWN asks the server
	// to stop; serve stops the engine then, off the loops, whose
	// callbacks must not call Stop.
	shutdown     chan struct{}
	shutdownOnce sync.Once

	// checkNormal says whether normal clients need holding to their class's
	// hard bound, which is tighter than the engine's when the pub/sub
	// class's is looser.
	checkNormal bool
	outputDrops atomic.Int64 // clients disconnected for their output limit

	// What CONFIG SET changes while the server runs.
	output      atomic.Pointer[outputLimit]
	idleTimeout atomic.Int64 // nanoseconds
	hz          atomic.Int64
	limits      limitVars
	blocked     atomic.Int64 // clients blocked in a command

	lastID      atomic.Uint64 // the last client's ID
	commands    atomic.Int64  // commands processed, added once per batch
	connections atomic.Int64  // connections accepted
	sweepFrom   int           // the shard active expiry starts at; OnTick's alone
}

func newServer(cfg config) *server {
	cfg.poller = settlePoller(cfg.poller)
	cfg.output.maxRequest = cfg.requestLimit()
	s := &server{cfg: cfg, started: time.Now(), booted: make(chan struct{}), shutdown: make(chan struct{})}
	s.db.init()
	s.pubsub.init()
	s.clients.init()
	s.output.Store(&cfg.output)
	s.idleTimeout.Store(int64(cfg.idleTimeout))
	s.hz.Store(defaultHz)
	s.limits.init()
	normal := cfg.output.normalLimit().hard
	s.checkNormal = normal > 0 && normal != cfg.output.engineBound()
	return s
}

// requestShutdown asks whoever serves s (serve) to stop it, as SIGTERM
// does. It may be called from any goroutine, any number of times.
func (s *server) requestShutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

// run serves until the engine stops.
func (s *server) run() error {
	return sluice.Run(s, s.cfg.addr, s.cfg.options()...)
}

// multiplexingAPI names the poller serving the loops, as INFO reports it.
func (s *server) multiplexingAPI() string { return multiplexingAPI(s.cfg.poller) }

func (s *server) OnBoot(eng sluice.Engine) sluice.Action {
	s.eng = eng
	if eng.NumLoops() == 1 {
		s.db.serveAlone()
	}
	s.loops = make([]*loopState, eng.NumLoops())
	for i := range s.loops {
		s.loops[i] = newLoopState(s, eng.Loop(i))
	}
	close(s.booted)
	return sluice.None
}

func (s *server) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	cl := newClient(s, c)
	c.SetContext(cl)
	if d, set := s.idleTimeoutSet(); set {
		c.SetIdleTimeout(d)
	}
	s.clients.add(cl)
	s.connections.Add(1)
	return nil, sluice.None
}

func (s *server) OnClose(c sluice.Conn, _ error) sluice.Action {
	if cl, ok := c.Context().(*client); ok {
		s.clients.remove(cl)
		cl.closed = true
		cl.pending.Add(-int64(len(cl.outbox)))
		cl.outbox = nil
		for kind := range numSubKinds {
			cl.unsubscribeAll(kind, nil)
		}
		cl.closeBlocked()
		cl.discard()
	}
	return sluice.None
}

// maxClientsReply is Redis's answer to a client past maxclients.
var maxClientsReply = []byte("-ERR max number of clients reached\r\n")

// OnRefuse answers a client refused for -maxclients as Redis does, so
// that the client, which may have sent a command already, reports why
// rather than a dropped connection.
func (s *server) OnRefuse(_ net.Addr, reason error) []byte {
	if errors.Is(reason, sluice.ErrTooManyConns) {
		return maxClientsReply
	}
	return nil
}

// OnTraffic answers every whole command buffered, in order. The replies
// are gathered and written once; the engine sends them in one write.
func (s *server) OnTraffic(c sluice.Conn) sluice.Action {
	cl := c.Context().(*client)
	if len(cl.outbox) > 0 {
		cl.writeOutbox()
		if c.InboundBuffered() == 0 {
			return sluice.None // called for the messages alone (gather)
		}
	}
	if cl.block != nil {
		return sluice.None // its commands wait until it is unblocked
	}
	k := &cl.call
	k.begin()
	defer k.end()
	n := int64(0)
	// The commands are read from one look at the buffered bytes, which are
	// discarded once, after them: the arguments alias them, and stay valid
	// until the callback returns.
	buf, _ := c.Peek(0)
	read := 0
	// Leave the rest of the pipeline unread once this much waits to be
	// sent: the engine calls again once the socket has taken it, so a
	// pipeline of GETs of a large value cannot take unbounded memory. Only
	// a flush changes what waits.
	full := c.OutboundBuffered() >= maxPendingReplies
	for !k.quit && !full {
		used, ok, err := cl.req.parse(buf[read:])
		if err != nil {
			k.protocolError(c, err) // which discards every byte
			read = 0
			break
		}
		if used == 0 {
			break
		}
		read += used
		if !ok {
			continue // an empty command
		}
		k.exec(cl.req.args)
		n++
		if cl.block != nil {
			break
		}
		if len(k.out) >= flushAt {
			s.reply(cl, k.out)
			k.out = k.out[:0]
			full = c.OutboundBuffered() >= maxPendingReplies
		}
	}
	if read > 0 {
		c.Discard(read)
	}
	s.reply(cl, k.out)
	s.commands.Add(n)
	if q := int64(c.InboundBuffered()); cl.qbuf.Load() != q {
		cl.qbuf.Store(q) // not stored when unchanged: an atomic store is dear
	}
	if k.quit {
		return sluice.Close
	}
	return sluice.None
}

// reply writes replies to cl, and disconnects it, as Redis does, once
// they take it past its class's hard bound.
func (s *server) reply(cl *client, b []byte) {
	_, err := cl.conn.Write(b)
	switch {
	case errors.Is(err, sluice.ErrOutboundFull):
		s.drop(cl)
	case s.checkNormal && !cl.inPubSub() && cl.conn.OutboundBuffered() > s.cfg.output.normalLimit().hard:
		s.drop(cl)
	}
}

// OnShutdown stops the loops' timers.
func (s *server) OnShutdown(sluice.Engine) {
	for _, ls := range s.loops {
		ls.stop()
	}
}

// OnTick expires keys nobody reads.
func (s *server) OnTick() (time.Duration, sluice.Action) {
	s.sweepFrom = s.db.sweep(s.sweepFrom, time.Now().UnixMilli())
	return time.Second / time.Duration(s.hz.Load()), sluice.None
}

// maxPendingReplies bounds the replies one call queues before it leaves
// the rest of the pipeline for the next.
const maxPendingReplies = 4 << 20

// maxKeptReply bounds the reply buffer a loop keeps for its next batch.
const maxKeptReply = 2 * flushAt
