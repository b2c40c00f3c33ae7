// Command sluice is the echo server on Sluice, built the way the other
// stacks are: -loops event loops, 64 KiB read and write buffers, one
// listener (no SO_REUSEPORT). It runs on epoll, or on io_uring with
// -poller uring. -read-buffer sets the read buffer's size, which on
// io_uring is also the size of each provided buffer (a loop has about 4
// MiB of them, at least 16): 256 KiB gives the fewest buffers.
//
// With -dial host:port -conns N it runs with no listener instead: the same
// engine, options and echo on N connections it dials from OnBoot.
//
// With -udp it echoes datagrams instead, from one UDP socket on -addr
// ("udp://"), with the same handler and options: OnTraffic runs per
// datagram and Write answers its sender; -rcvbuf sets its socket's
// receive buffer (WithSocketRecvBuffer).
//
// With -gather-wait d its io_uring loops gather events for up to d before
// handling them (WithGatherWait; 0, the default, is off).
//
// With -lock-os-thread=false its epoll loops are not locked to their
// threads (WithLockOSThread(false)), to measure what locking costs.
//
// With -tls-cert and -tls-key it serves TLS on its listener (WithTLS, the
// handshake on a goroutine, the records on the loop): the same handler
// echoes the plaintext.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type echo struct {
	sluice.BuiltinEventEngine
	meter  *serve.Meter
	eng    *serve.Handoff[sluice.Engine]
	dial   string // with -dial: where to dial
	conns  int    // and how many connections
	engine sluice.Engine
}

func (e *echo) OnBoot(eng sluice.Engine) sluice.Action {
	e.eng.Put(eng)
	e.engine = eng
	for range e.conns {
		if err := eng.Dial(e.dial, nil); err != nil {
			fmt.Fprintln(os.Stderr, "sluice: dial:", err)
			return sluice.Shutdown
		}
	}
	return sluice.None
}

// OnDialFailed stops the server, which then exits 1; the runner's load
// generator, a connection short, reports the failure too.
func (e *echo) OnDialFailed(addr string, _ any, err error) {
	fmt.Fprintln(os.Stderr, "sluice: dial", addr+":", err)
	go e.engine.Stop(context.Background())
}

func (e *echo) OnOpen(sluice.Conn) ([]byte, sluice.Action) {
	e.meter.Opened()
	return nil, sluice.None
}

func (e *echo) OnTraffic(c sluice.Conn) sluice.Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return sluice.None
}

type server struct {
	eng     *serve.Handoff[sluice.Engine]
	kind    *poller.Kind
	readBuf *int
	gather  *time.Duration
	lock    *bool
}

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	opts := s.options(cfg)
	if cfg.TLS() {
		tc, err := cfg.StdTLS()
		if err != nil {
			return err
		}
		opts = append(opts, sluice.WithTLS(tc))
	}
	network := "tcp://"
	if cfg.UDP {
		network = "udp://"
	}
	return sluice.Run(&echo{meter: m, eng: s.eng}, network+cfg.Addr, append(opts, sluice.WithSocketRecvBuffer(cfg.RecvBuf))...)
}

// ServesUDP: Serve reads -udp.
func (server) ServesUDP() {}

// ServesTLS: Serve reads the TLS flags.
func (server) ServesTLS() {}

// ServeDialed runs the same engine with no listener; OnBoot dials.
func (s server) ServeDialed(cfg serve.Config, m *serve.Meter) error {
	return sluice.Run(&echo{meter: m, eng: s.eng, dial: "tcp://" + cfg.Dial, conns: cfg.Conns}, "", s.options(cfg)...)
}

func (s server) options(cfg serve.Config) []sluice.Option {
	return []sluice.Option{
		sluice.WithNumEventLoop(cfg.Loops),
		sluice.WithReusePort(false),
		sluice.WithReadBufferCap(*s.readBuf),
		sluice.WithWriteBufferCap(64 << 10),
		sluice.WithPoller(*s.kind),
		sluice.WithGatherWait(*s.gather),
		sluice.WithLockOSThread(*s.lock),
	}
}

func (s server) Stop(ctx context.Context) error {
	eng, err := s.eng.Take(ctx)
	if err != nil {
		return err
	}
	return eng.Stop(ctx)
}

func main() {
	var kind poller.Kind
	flag.TextVar(&kind, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	readBuf := flag.Int("read-buffer", 64<<10, "read buffer `bytes`")
	gather := flag.Duration("gather-wait", 0, "io_uring: after an event, wait up to this long for more before handling them (0: off)")
	lock := flag.Bool("lock-os-thread", true, "lock each event loop to its OS thread (io_uring's always are)")
	serve.Main(server{eng: serve.NewHandoff[sluice.Engine](), kind: &kind, readBuf: readBuf, gather: gather, lock: lock})
}
