// Command nbhttp is github.com/lesismal/nbio's HTTP server (nbhttp)
// serving the shared http.Handler (internal/hello), as nbio's examples
// start it: -loops pollers (NPoller), the handlers on nbhttp's goroutine
// pool, every other setting its default.
package main

import (
	"context"
	"net"

	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct {
	eng *serve.Handoff[*nbhttp.Engine]
}

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	logging.SetLevel(logging.LevelError)
	eng := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp",
		Addrs:   []string{cfg.Addr},
		NPoller: cfg.Loops,
		Handler: hello.Handler,
		// The listener, wrapped only to count the connections it accepts.
		Listen: func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			return counted{ln, m}, err
		},
	})
	if err := eng.Start(); err != nil {
		return err
	}
	s.eng.Put(eng)
	eng.Wait()
	return nil
}

// counted is a listener that tells its Meter of every accepted connection.
type counted struct {
	net.Listener
	m *serve.Meter
}

func (l counted) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.m.Opened()
	}
	return c, err
}

func (s server) Stop(ctx context.Context) error {
	eng, err := s.eng.Take(ctx)
	if err != nil {
		return err
	}
	return eng.Shutdown(ctx)
}

func main() {
	serve.Main(server{eng: serve.NewHandoff[*nbhttp.Engine]()})
}
