// Command http serves the TechEmpower Framework Benchmarks' plaintext and
// JSON tests with sluicehttp:
//
//	go run ./examples/http -addr tcp://127.0.0.1:8080
//	curl -i http://127.0.0.1:8080/plaintext
//	curl -i http://127.0.0.1:8080/json
//	go run ./examples/http -poller uring -loops 4
//	go run ./examples/http -tls-cert cert.pem -tls-key key.pem
//
// /plaintext answers "Hello, World!" as text/plain, /json the object
// {"message":"Hello, World!"}, serialized for each request, both with a
// Server header and a Date header, as the benchmark's rules ask. The
// Date is the server's: formatted once a second by the first event loop,
// not for each request.
//
// The handlers never block, so they run inline, on the event loops; with
// -inline=false they run on the goroutine pool, as a handler that waits
// on a database would.
//
// With -tls-cert and -tls-key (PEM files), or -tls-self-signed, it serves
// HTTPS, offering http/1.1 by ALPN.
//
// It stops gracefully on SIGINT or SIGTERM: requests in flight are
// answered, then the connections close.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/tlsflag"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/sluicehttp"
)

// The header values every answer shares: set as they are, never changed.
var (
	serverName = []string{"Sluice"}
	textPlain  = []string{"text/plain"}
	appJSON    = []string{"application/json"}
	helloWorld = []byte("Hello, World!")
)

// techEmpower answers the plaintext and JSON tests.
func techEmpower(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Server"] = serverName
	switch r.URL.Path {
	case "/plaintext":
		h["Content-Type"] = textPlain
		w.Write(helloWorld)
	case "/json":
		b, err := json.Marshal(struct {
			Message string `json:"message"`
		}{"Hello, World!"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h["Content-Type"] = appJSON
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// config is what the flags set.
type config struct {
	addr             string
	loops            int
	poller           poller.Kind
	inline           bool
	tls              tlsflag.Server
	shutdownDeadline time.Duration
}

// options returns the engine's options for cfg: its loops, its poller,
// and TLS when a certificate is given.
func options(cfg config) ([]sluice.Option, error) {
	opts := []sluice.Option{sluice.WithNumEventLoop(cfg.loops), sluice.WithPoller(cfg.poller)}
	tc, err := cfg.tls.Config()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		tc.NextProtos = []string{"http/1.1"}
		opts = append(opts, sluice.WithTLS(tc))
	}
	return opts, nil
}

// start starts the server cfg describes.
func start(cfg config) (*sluicehttp.Server, sluice.Engine, error) {
	opts, err := options(cfg)
	if err != nil {
		return nil, sluice.Engine{}, err
	}
	s := &sluicehttp.Server{Handler: http.HandlerFunc(techEmpower), Inline: cfg.inline}
	eng, err := s.Start(cfg.addr, opts...)
	return s, eng, err
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "tcp://127.0.0.1:8080", "address to listen on: tcp://host:port or unix:///path")
	flag.IntVar(&cfg.loops, "loops", runtime.NumCPU(), "number of event loops")
	flag.TextVar(&cfg.poller, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	flag.BoolVar(&cfg.inline, "inline", true, "run the handlers on the event loops rather than on the goroutine pool")
	cfg.tls.Register(flag.CommandLine)
	flag.DurationVar(&cfg.shutdownDeadline, "shutdown-timeout", 30*time.Second, "how long a graceful stop waits for requests in flight")
	flag.Parse()

	s, eng, err := start(cfg)
	if err != nil {
		log.Fatalf("http: %v", err)
	}
	fmt.Printf("http: listening on %s\n", eng.Addrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
		ctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownDeadline)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			log.Printf("http: shutdown: %v", err)
		}
	case <-eng.Done():
	}
	if err := eng.Wait(); err != nil {
		log.Fatalf("http: %v", err)
	}
}
