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
// Both tests are answered on the event loops below the http.Handler API:
// the handler is also a sluicehttp.LoopHandler, whose ServeLoop sees a
// view of each request the server has parsed and checked, and writes
// its answer without an *http.Request, an http.ResponseWriter or a heap
// allocation; every other request (a 404, a request with a body) goes to
// its ServeHTTP. With -below=false ServeHTTP answers everything.
//
// ServeHTTP never blocks, so it runs inline, on the event loops; with
// -inline=false it runs on the goroutine pool, as a handler that waits
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
	"unicode/utf8"

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

// message is the JSON test's object, made for each request.
type message struct {
	Message string `json:"message"`
}

// techEmpower answers the plaintext and JSON tests. As a
// sluicehttp.LoopHandler it answers them on the event loop, below the
// http.Handler API, without a heap allocation; ServeHTTP answers
// everything else (404), and the same two tests when they come with a
// body, which ServeLoop is not offered.
type techEmpower struct{}

// ServeLoop answers /plaintext and /json, and leaves the rest to
// ServeHTTP.
func (techEmpower) ServeLoop(w *sluicehttp.LoopResponse, r *sluicehttp.LoopRequest) bool {
	switch r.Path() {
	case "/plaintext":
		w.AddHeader("Server", "Sluice")
		w.AddHeader("Content-Type", "text/plain")
		w.Write(helloWorld)
	case "/json":
		w.AddHeader("Server", "Sluice")
		w.AddHeader("Content-Type", "application/json")
		w.Write(message{Message: "Hello, World!"}.appendJSON(w.AvailableBuffer()))
	default:
		return false
	}
	return true
}

func (techEmpower) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Server"] = serverName
	switch r.URL.Path {
	case "/plaintext":
		h["Content-Type"] = textPlain
		w.Write(helloWorld)
	case "/json":
		b, err := json.Marshal(message{Message: "Hello, World!"})
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

// appendJSON appends m serialized as encoding/json serializes it, without
// the reflection and the allocations of json.Marshal.
func (m message) appendJSON(b []byte) []byte {
	b = append(b, `{"message":`...)
	b = appendJSONString(b, m.Message)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it: quotes, backslashes, control characters, the HTML
// characters <, > and &, and U+2028 and U+2029; invalid UTF-8 becomes
// U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c < ' ' || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// config is what the flags set.
type config struct {
	addr             string
	loops            int
	poller           poller.Kind
	inline           bool
	below            bool
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
	var h http.Handler = techEmpower{}
	if !cfg.below {
		h = http.HandlerFunc(techEmpower{}.ServeHTTP) // hides ServeLoop
	}
	s := &sluicehttp.Server{Handler: h, Inline: cfg.inline}
	eng, err := s.Start(cfg.addr, opts...)
	return s, eng, err
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "tcp://127.0.0.1:8080", "address to listen on: tcp://host:port or unix:///path")
	flag.IntVar(&cfg.loops, "loops", runtime.NumCPU(), "number of event loops")
	flag.TextVar(&cfg.poller, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	flag.BoolVar(&cfg.inline, "inline", true, "run the handlers on the event loops rather than on the goroutine pool")
	flag.BoolVar(&cfg.below, "below", true, "answer /plaintext and /json on the event loops below the http.Handler API (sluicehttp.LoopHandler); false answers them with ServeHTTP")
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
