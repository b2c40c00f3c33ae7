// Command netpoll is the echo server on github.com/cloudwego/netpoll: -loops
// pollers, OnRequest run on netpoll's goroutine pool (its default), reading
// with the no-copy Reader and writing with Malloc and Flush as netpoll's guide
// shows.
package main

import (
	"context"

	"github.com/cloudwego/netpoll"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct {
	loop *serve.Handoff[netpoll.EventLoop]
}

func echo(_ context.Context, c netpoll.Connection) error {
	r, w := c.Reader(), c.Writer()
	in, err := r.Next(r.Len())
	if err != nil {
		return err
	}
	out, err := w.Malloc(len(in))
	if err != nil {
		return err
	}
	copy(out, in)
	if err := r.Release(); err != nil {
		return err
	}
	return w.Flush()
}

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	if err := netpoll.Configure(netpoll.Config{PollerNum: cfg.Loops}); err != nil {
		return err
	}
	ln, err := netpoll.CreateListener("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	loop, err := netpoll.NewEventLoop(echo,
		netpoll.WithOnConnect(func(ctx context.Context, _ netpoll.Connection) context.Context {
			m.Opened()
			return ctx
		}))
	if err != nil {
		return err
	}
	s.loop.Put(loop)
	return loop.Serve(ln)
}

func (s server) Stop(ctx context.Context) error {
	loop, err := s.loop.Take(ctx)
	if err != nil {
		return err
	}
	return loop.Shutdown(ctx)
}

func main() {
	serve.Main(server{loop: serve.NewHandoff[netpoll.EventLoop]()})
}
