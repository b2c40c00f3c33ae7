package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/ops"
	"github.com/sluicenet/sluice/upgrade"
)

// drain is the flag of running in production that redis has beside
// package ops's (upgrades, the PID file, the debug endpoint).
var drain = flag.Duration("drain", 30*time.Second, "after an upgrade, how long clients may take to finish on the old process")

// stopTimeout bounds a graceful stop: clients still sending what they
// have queued after it are reset.
const stopTimeout = 5 * time.Second

// serve runs the server cfg describes, on cfg.addr and on the sockets the
// process was handed, until a signal or a client's SHUTDOWN stops it or a
// successor takes over, stops it, and says how that went; it exits with
// status 1 if the stop had to reset clients, or the server could not
// start.
func serve(cfg config) {
	up := ops.Upgrader("redis")
	defer up.Close()
	cfg.files = up.Files()
	if !ops.FlagSet("addr") {
		cfg.addr = up.Default(cfg.addr)
	}
	s := newServer(cfg)
	stopped := make(chan error, 1)
	go func() {
		<-s.booted
		for _, a := range s.eng.Addrs() {
			fmt.Printf("redis: listening on %s\n", a)
		}
		stopped <- serveUntilStopped(s, up)
	}()
	if err := s.run(); err != nil {
		log.Fatalf("redis: %v", err)
	}
	if err := <-stopped; err != nil {
		up.Close()
		log.Fatalf("redis: stop: %v", err)
	}
	fmt.Println("redis: stopped")
}

// serveUntilStopped waits until a signal or a client's SHUTDOWN stops s,
// or a successor takes over, then stops the engine as stop does and
// returns how that went. SHUTDOWN stops it as SIGTERM does; then the
// engine's end lets ops.Serve return, which lets go of the signals and
// of the debug endpoint before the process exits.
func serveUntilStopped(s *server, up *upgrade.Upgrader) error {
	why := make(chan upgrade.Reason, 1)
	go func() { why <- ops.Serve("redis", up, s.eng) }()
	select {
	case r := <-why:
		return stop(s.eng, r)
	case <-s.shutdown:
		err := stop(s.eng, upgrade.Stopped)
		<-why
		return err
	}
}

// stop stops the engine gracefully, for why, and returns how that went.
// After a hand-over it first lets the clients finish by themselves, for
// at most -drain.
func stop(eng sluice.Engine, why upgrade.Reason) error {
	if why == upgrade.HandedOver {
		ctx, cancel := context.WithTimeout(context.Background(), *drain)
		err := eng.StopAccepting(ctx)
		cancel()
		if err != nil {
			log.Printf("redis: %d clients still connected after %v are closed now", eng.CountConnections(), *drain)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		return fmt.Errorf("clients still connected after %v were reset: %w", stopTimeout, err)
	}
	return nil
}
