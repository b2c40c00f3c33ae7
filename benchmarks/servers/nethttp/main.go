// Command nethttp is the HTTP table's base: net/http's Server serving the
// shared handler (internal/hello) as a Go user writes it, a goroutine per
// connection, every setting its default. -loops is ignored beyond the
// runner's GOMAXPROCS.
package main

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct{ srv *http.Server }

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	s.srv.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			m.Opened()
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	return s.srv.Serve(ln)
}

// Stop shuts down gracefully: idle connections close, requests in flight
// are answered first.
func (s server) Stop(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func main() {
	serve.Main(server{srv: &http.Server{Handler: hello.Handler}})
}
