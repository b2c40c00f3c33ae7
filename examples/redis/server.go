package main

import (
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

	readTimeout  time.Duration // zero means none
	writeTimeout time.Duration // zero means sluice.DefaultWriteTimeout; below zero, none
	output       outputLimit   // the zero limit means the engine's defaults

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
		sluice.WithMaxOutbound(c.output.hardBytes()),
		sluice.WithOutboundSoftLimit(c.output.soft, c.output.softFor),
		sluice.WithListenerFiles(c.files),
	}
}

// writeLimit returns how long a client's replies may wait on it to read.
func (c *config) writeLimit() time.Duration {
	if c.writeTimeout == 0 {
		return sluice.DefaultWriteTimeout
	}
	return max(c.writeTimeout, 0)
}

// sweepEvery is how often active expiry runs, as Redis does at hz 10.
const sweepEvery = 100 * time.Millisecond

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
	clients registry
	started time.Time
	booted  chan struct{} // closed by OnBoot, once eng is set
	eng     sluice.Engine

	commands    atomic.Int64 // commands processed, added once per batch
	connections atomic.Int64 // connections accepted
	sweepFrom   int          // the shard active expiry starts at; OnTick's alone
}

func newServer(cfg config) *server {
	s := &server{cfg: cfg, started: time.Now(), booted: make(chan struct{})}
	s.db.init()
	s.clients.init()
	return s
}

// run serves until the engine stops.
func (s *server) run() error {
	return sluice.Run(s, s.cfg.addr, s.cfg.options()...)
}

func (s *server) OnBoot(eng sluice.Engine) sluice.Action {
	s.eng = eng
	close(s.booted)
	return sluice.None
}

func (s *server) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	cl := newClient(s, c)
	c.SetContext(cl)
	s.clients.add(cl)
	s.connections.Add(1)
	return nil, sluice.None
}

func (s *server) OnClose(c sluice.Conn, _ error) sluice.Action {
	if cl, ok := c.Context().(*client); ok {
		s.clients.remove(cl)
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
	k := &cl.call
	k.begin()
	defer k.end()
	n := int64(0)
	for !k.quit {
		_, err := cl.resp.Decode(c)
		if errors.Is(err, codec.ErrIncomplete) {
			break
		}
		if err != nil {
			k.protocolError(c, err)
			break
		}
		k.exec(cl.resp.Args())
		n++
		if len(k.out) >= flushAt {
			c.Write(k.out)
			k.out = k.out[:0]
			if c.OutboundBuffered() >= maxPendingReplies {
				// Leave the rest of the pipeline unread: the engine calls
				// again once the socket has taken this much, so a pipeline
				// of GETs of a large value cannot take unbounded memory.
				break
			}
		}
	}
	c.Write(k.out)
	s.commands.Add(n)
	if k.quit {
		return sluice.Close
	}
	return sluice.None
}

// OnTick expires keys nobody reads.
func (s *server) OnTick() (time.Duration, sluice.Action) {
	s.sweepFrom = s.db.sweep(s.sweepFrom, time.Now().UnixMilli())
	return sweepEvery, sluice.None
}

// replyBufs holds the buffers batches gather replies in, so an idle
// connection holds none.
var replyBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPendingReplies bounds the replies one call queues before it leaves
// the rest of the pipeline for the next.
const maxPendingReplies = 4 << 20

// maxKeptReply bounds the reply buffers kept for reuse.
const maxKeptReply = 2 * flushAt
