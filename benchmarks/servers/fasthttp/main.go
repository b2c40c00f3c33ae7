// Command fasthttp is github.com/valyala/fasthttp's Server answering the
// HTTP table's two tests with its own RequestHandler, as fasthttp's
// documentation writes one: the path compared as bytes, the body set on
// the RequestCtx, the JSON serialized for each request; fasthttp adds the
// Server and Date headers itself. A goroutine per connection from its
// worker pool, every setting its default. -loops is ignored beyond the
// runner's GOMAXPROCS.
package main

import (
	"context"
	"encoding/json"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

var (
	plaintextPath = []byte(hello.PlaintextPath)
	jsonPath      = []byte(hello.JSONPath)
)

// handle answers /plaintext and /json as internal/hello's Handler does.
func handle(ctx *fasthttp.RequestCtx) {
	switch path := ctx.Path(); {
	case string(path) == string(plaintextPath):
		ctx.SetContentType("text/plain")
		ctx.SetBodyString(hello.Plaintext)
	case string(path) == string(jsonPath):
		b, err := json.Marshal(hello.Message{Message: hello.Plaintext})
		if err != nil {
			ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(b)
	default:
		ctx.NotFound()
	}
}

type server struct{ srv *fasthttp.Server }

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	s.srv.ConnState = func(_ net.Conn, st fasthttp.ConnState) {
		if st == fasthttp.StateNew {
			m.Opened()
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	return s.srv.Serve(ln)
}

// Stop shuts down gracefully, as net/http's Shutdown does.
func (s server) Stop(ctx context.Context) error { return s.srv.ShutdownWithContext(ctx) }

func main() {
	serve.Main(server{srv: &fasthttp.Server{Handler: handle, Name: "fasthttp"}})
}
