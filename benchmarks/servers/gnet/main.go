// Command gnet is the echo server on github.com/panjf2000/gnet/v2, set up as
// gnet's documentation recommends for a pinned process: one event loop per
// core given (-loops), multicore only when there is more than one, 64 KiB read
// and write buffers, the load balancer and TCP_NODELAY left at their defaults.
//
// With -udp it serves "udp://" on -addr with the same handler and options:
// gnet runs OnTraffic per datagram, and Write answers its sender; -rcvbuf
// sets its socket's receive buffer (WithSocketRecvBuffer).
//
// With -dial host:port -conns N it runs gnet's Client instead, with the same
// options and echo handler, and dials N connections with Client.Dial.
package main

import (
	"context"

	"github.com/panjf2000/gnet/v2"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type echo struct {
	gnet.BuiltinEventEngine
	meter *serve.Meter
	stop  *serve.Handoff[func(context.Context) error] // nil with -dial: ServeDialed hands the client's over
}

func (e *echo) OnBoot(eng gnet.Engine) gnet.Action {
	if e.stop != nil {
		e.stop.Put(eng.Stop)
	}
	return gnet.None
}

func (e *echo) OnOpen(gnet.Conn) ([]byte, gnet.Action) {
	e.meter.Opened()
	return nil, gnet.None
}

func (e *echo) OnTraffic(c gnet.Conn) gnet.Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return gnet.None
}

type server struct {
	stop *serve.Handoff[func(context.Context) error]
}

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	network := "tcp://"
	if cfg.UDP {
		network = "udp://"
	}
	return gnet.Run(&echo{meter: m, stop: s.stop}, network+cfg.Addr, append(options(cfg), gnet.WithSocketRecvBuffer(cfg.RecvBuf))...)
}

// ServesUDP: Serve reads -udp.
func (server) ServesUDP() {}

// ServeDialed runs a gnet Client with the same options and handler, dials,
// and waits for Stop. (The client's engine, which OnBoot sees, has a Stop of
// its own that waits for loops only Client.Stop stops.)
func (s server) ServeDialed(cfg serve.Config, m *serve.Meter) error {
	cli, err := gnet.NewClient(&echo{meter: m}, options(cfg)...)
	if err != nil {
		return err
	}
	if err := cli.Start(); err != nil {
		return err
	}
	for range cfg.Conns {
		if _, err := cli.Dial("tcp", cfg.Dial); err != nil {
			cli.Stop()
			return err
		}
	}
	stopped := make(chan struct{})
	s.stop.Put(func(context.Context) error {
		defer close(stopped)
		return cli.Stop()
	})
	<-stopped
	return nil
}

func options(cfg serve.Config) []gnet.Option {
	return []gnet.Option{
		gnet.WithMulticore(cfg.Loops > 1),
		gnet.WithNumEventLoop(cfg.Loops),
		gnet.WithReusePort(false),
		gnet.WithReadBufferCap(64 << 10),
		gnet.WithWriteBufferCap(64 << 10),
	}
}

func (s server) Stop(ctx context.Context) error {
	stop, err := s.stop.Take(ctx)
	if err != nil {
		return err
	}
	return stop(ctx)
}

func main() {
	serve.Main(server{stop: serve.NewHandoff[func(context.Context) error]()})
}
