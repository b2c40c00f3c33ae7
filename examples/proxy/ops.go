package main

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicenet/sluice/examples/internal/ops"
)

// defaultAddr is where the proxy listens without -addr, unless it was
// handed sockets of its own.
const defaultAddr = "127.0.0.1:7000"

// serveProxy runs the proxy cfg describes, on cfg.addrs and on the sockets the
// process was handed, until a signal stops it or a successor takes over,
// stops it, and says how that went; it exits with status 1 if the stop
// had to reset connections, or the proxy could not start.
func serveProxy(cfg config) {
	up := ops.Upgrader("proxy")
	defer up.Close()
	cfg.files = up.Files()
	if len(cfg.addrs) == 0 {
		if a := up.Default(defaultAddr); a != "" {
			cfg.addrs = []string{a}
		}
	}
	px, err := newProxy(cfg)
	if err != nil {
		log.Fatalf("proxy: %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		// Once the first signal has begun the stop, Wait has let go of
		// the signals: the next one gets the default action, which ends
		// the process at once.
		defer stop()
		select {
		case <-px.booted:
		case <-px.done:
			return
		}
		ops.Serve("proxy", up, px.eng)
	}()
	if err := px.run(ctx); err != nil {
		log.Fatalf("proxy: %v", err)
	}
	if px.stopErr != nil {
		up.Close()
		log.Fatalf("proxy: stop: %v", px.stopErr)
	}
	fmt.Println("proxy: stopped")
}
