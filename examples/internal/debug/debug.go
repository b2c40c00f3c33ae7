// Package debug serves an example command's debugging endpoint: the
// standard library's expvar page, /debug/vars, with the engine's counters
// (sluice.Stats) under "sluice", beside the runtime's memory statistics
// and the command line.
package debug

import (
	"context"
	"errors"
	"expvar"
	"log"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/sluicenet/sluice"
)

var (
	mu    sync.Mutex
	stats func() sluice.Stats // what "sluice" shows; nil until Serve
)

func init() {
	expvar.Publish("sluice", expvar.Func(func() any {
		mu.Lock()
		f := stats
		mu.Unlock()
		if f == nil {
			return nil
		}
		return f()
	}))
}

// retryEvery is how often Serve tries again to listen on an address in
// use: an upgrade's old process holds it until it stops.
const retryEvery = 100 * time.Millisecond

// Serve serves /debug/vars on addr ("host:port"), with what stats returns
// under "sluice", and logs the address once it listens, as name does:
// "echo: debug on http://127.0.0.1:6060/debug/vars". An address in use is
// tried again until it is free, so that a process that took over from
// another gets it once the other stops. An empty addr serves nothing.
// Stop, which it returns, stops serving.
func Serve(name, addr string, s func() sluice.Stats) (stop func()) {
	if addr == "" {
		return func() {}
	}
	mu.Lock()
	stats = s
	mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var lc net.ListenConfig
		for {
			ln, err := lc.Listen(ctx, "tcp", addr)
			switch {
			case err == nil:
				log.Printf("%s: debug on http://%s/debug/vars", name, ln.Addr())
				srv.Serve(ln)
				return
			case ctx.Err() != nil:
				return
			case !errors.Is(err, syscall.EADDRINUSE):
				log.Printf("%s: debug: %v", name, err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryEvery):
			}
		}
	}()
	return func() {
		cancel()
		srv.Close()
		<-done
	}
}
