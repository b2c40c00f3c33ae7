// Command sluicehttp is this repository's sluicehttp.Server serving the
// shared http.Handler (internal/hello), the same one net/http and nbhttp
// serve, as its documentation starts it: -loops event loops, the
// handlers on its goroutine pool (the default), every other setting its
// default. -inline runs them on the event loops instead (Server.Inline),
// -poller uring runs the engine on io_uring, and -pool N gives the pool N
// workers (the default, pool.DefaultSizePerCPU per GOMAXPROCS, answers 503
// to a request that finds them all busy).
//
// sluicehttp has no hook on each accepted connection, so its report
// line counts none.
package main

import (
	"context"
	"flag"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/pool"
	"github.com/sluicenet/sluice/sluicehttp"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct {
	srv  *serve.Handoff[*sluicehttp.Server]
	kind *poller.Kind
	// inline: run the handler on the event loops (Server.Inline)
	inline   *bool
	poolSize *int // workers in the handlers' pool; 0: the default
}

func (s server) Serve(cfg serve.Config, _ *serve.Meter) error {
	srv := &sluicehttp.Server{Handler: hello.Handler, Inline: *s.inline}
	if *s.poolSize > 0 {
		p, err := pool.New(pool.WithSize(*s.poolSize))
		if err != nil {
			return err
		}
		defer p.Release()
		srv.Pool = p
	}
	eng, err := srv.Start("tcp://"+cfg.Addr, sluice.WithNumEventLoop(cfg.Loops), sluice.WithPoller(*s.kind))
	if err != nil {
		return err
	}
	s.srv.Put(srv)
	return eng.Wait()
}

// Stop shuts down gracefully: requests in flight are answered first.
func (s server) Stop(ctx context.Context) error {
	srv, err := s.srv.Take(ctx)
	if err != nil {
		return err
	}
	return srv.Shutdown(ctx)
}

func main() {
	var kind poller.Kind
	flag.TextVar(&kind, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	inline := flag.Bool("inline", false, "run the handlers on the event loops rather than on the goroutine pool")
	poolSize := flag.Int("pool", 0, "`workers` in the handlers' pool; 0: sluicehttp's default")
	serve.Main(server{srv: serve.NewHandoff[*sluicehttp.Server](), kind: &kind, inline: inline, poolSize: poolSize})
}
