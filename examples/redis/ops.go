package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/debug"
	"github.com/sluicenet/sluice/upgrade"
)

// The flags of running in production: upgrades, the PID file.
var (
	upgradeOn = flag.String("upgrade-on", "none", "signal that hands the listeners to a new process: SIGHUP, SIGUSR1, SIGUSR2 or none")
	pidFile   = flag.String("pid-file", "", "file to hold the ID of the process serving")
	drain     = flag.Duration("drain", 30*time.Second, "after an upgrade, how long clients may take to finish on the old process")
	debugAddr = flag.String("debug-addr", "", "serve /debug/vars (expvar, the engine's counters under \"sluice\") on host:port")
)

// stopTimeout bounds a graceful stop: clients still sending what they
// have queued after it are reset.
const stopTimeout = 5 * time.Second

// serve runs the server cfg describes, on cfg.addr and on the sockets the
// process was handed, until a signal stops it or a successor takes over,
// stops it, and says how that went; it exits with status 1 if the stop
// had to reset clients, or the server could not start.
func serve(cfg config) {
	on, err := upgrade.ParseSignal(*upgradeOn)
	if err != nil {
		log.Fatalf("redis: %v", err)
	}
	up, err := upgrade.New(upgrade.Config{PIDFile: *pidFile, Signal: on, Logf: log.Printf})
	if err != nil {
		log.Fatalf("redis: %v", err)
	}
	defer up.Close()
	cfg.files = up.Files()
	if !flagSet("addr") {
		cfg.addr = up.Default(cfg.addr)
	}
	s := newServer(cfg)
	stopped := make(chan error, 1)
	go func() {
		<-s.booted
		for _, a := range s.eng.Addrs() {
			fmt.Printf("redis: listening on %s\n", a)
		}
		if err := up.Ready(); err != nil {
			log.Printf("redis: telling that it serves: %v", err)
		}
		stopDebug := debug.Serve("redis", *debugAddr, s.eng.Stats)
		why := up.Wait(s.eng)
		stopDebug() // a successor takes the address up
		stopped <- stop(s.eng, why)
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

// flagSet reports whether the flag name was given.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
