// Command sluice is the echo server on Sluice, built the way the other
// stacks are: -loops event loops, 64 KiB read and write buffers, one
// listener (no SO_REUSEPORT). It runs on epoll, or on io_uring with
// -poller uring. -read-buffer sets the read buffer's size, which on
// io_uring is also the size of each provided buffer (a loop has about 4
// MiB of them, at least 16): 256 KiB gives the fewest buffers.
package main

import (
	"context"
	"flag"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type echo struct {
	sluice.BuiltinEventEngine
	meter *serve.Meter
	eng   *serve.Handoff[sluice.Engine]
}

func (e *echo) OnBoot(eng sluice.Engine) sluice.Action {
	e.eng.Put(eng)
	return sluice.None
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
}

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	return sluice.Run(&echo{meter: m, eng: s.eng}, "tcp://"+cfg.Addr,
		sluice.WithNumEventLoop(cfg.Loops),
		sluice.WithReusePort(false),
		sluice.WithReadBufferCap(*s.readBuf),
		sluice.WithWriteBufferCap(64<<10),
		sluice.WithPoller(*s.kind))
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
	serve.Main(server{eng: serve.NewHandoff[sluice.Engine](), kind: &kind, readBuf: readBuf})
}
