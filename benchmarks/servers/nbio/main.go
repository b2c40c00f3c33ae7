// Command nbio is the echo server on github.com/lesismal/nbio: -loops pollers
// (NPoller), a 64 KiB read buffer, level-triggered epoll and the callbacks run
// on the poller goroutine, all nbio's defaults, as in nbio's echo example.
package main

import (
	"context"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct{ eng *serve.Handoff[*nbio.Engine] }

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	logging.SetLevel(logging.LevelError)
	eng := nbio.NewEngine(nbio.Config{
		Network:        "tcp",
		Addrs:          []string{cfg.Addr},
		NPoller:        cfg.Loops,
		ReadBufferSize: 64 << 10,
	})
	eng.OnOpen(func(*nbio.Conn) { m.Opened() })
	eng.OnData(func(c *nbio.Conn, data []byte) { c.Write(data) })
	if err := eng.Start(); err != nil {
		return err
	}
	s.eng.Put(eng)
	eng.Wait()
	return nil
}

func (s server) Stop(ctx context.Context) error {
	eng, err := s.eng.Take(ctx)
	if err != nil {
		return err
	}
	return eng.Shutdown(ctx)
}

func main() {
	serve.Main(server{eng: serve.NewHandoff[*nbio.Engine]()})
}
