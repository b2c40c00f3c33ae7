// Command gnet is the echo server on github.com/panjf2000/gnet/v2, set up as
// gnet's documentation recommends for a pinned process: one event loop per
// core given (-loops), multicore only when there is more than one, 64 KiB read
// and write buffers, the load balancer and TCP_NODELAY left at their defaults.
package main

import (
	"context"

	"github.com/panjf2000/gnet/v2"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type echo struct {
	gnet.BuiltinEventEngine
	meter *serve.Meter
	eng   *serve.Handoff[gnet.Engine]
}

func (e *echo) OnBoot(eng gnet.Engine) gnet.Action {
	e.eng.Put(eng)
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

type server struct{ eng *serve.Handoff[gnet.Engine] }

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	return gnet.Run(&echo{meter: m, eng: s.eng}, "tcp://"+cfg.Addr,
		gnet.WithMulticore(cfg.Loops > 1),
		gnet.WithNumEventLoop(cfg.Loops),
		gnet.WithReusePort(false),
		gnet.WithReadBufferCap(64<<10),
		gnet.WithWriteBufferCap(64<<10))
}

func (s server) Stop(ctx context.Context) error {
	eng, err := s.eng.Take(ctx)
	if err != nil {
		return err
	}
	return eng.Stop(ctx)
}

func main() {
	serve.Main(server{eng: serve.NewHandoff[gnet.Engine]()})
}
