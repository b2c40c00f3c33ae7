package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/sluicenet/sluice/examples/internal/debug"
	"github.com/sluicenet/sluice/upgrade"
)

// The flags of running in production: upgrades, the PID file.
var (
	upgradeOn = flag.String("upgrade-on", "none", "signal that hands the listeners to a new process: SIGHUP, SIGUSR1, SIGUSR2 or none")
	pidFile   = flag.String("pid-file", "", "file to hold the ID of the process serving")
	debugAddr = flag.String("debug-addr", "", "serve /debug/vars (expvar, the engine's counters under \"sluice\") on host:port")
)

// defaultAddr is where the proxy listens without -addr, unless it was
// handed sockets of its own.
const defaultAddr = "127.0.0.1:7000"

// serveProxy runs the proxy cfg describes, on cfg.addrs and on the sockets the
// process was handed, until a signal stops it or a successor takes over,
// stops it, and says how that went; it exits with status 1 if the stop
// had to reset connections, or the proxy could not start.
func serveProxy(cfg config) {
	on, err := upgrade.ParseSignal(*upgradeOn)
	if err != nil {
		log.Fatalf("proxy: %v", err)
	}
	up, err := upgrade.New(upgrade.Config{PIDFile: *pidFile, Signal: on, Logf: log.Printf})
	if err != nil {
		log.Fatalf("proxy: %v", err)
	}
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
		if err := up.Ready(); err != nil {
			log.Printf("proxy: telling that it serves: %v", err)
		}
		stopDebug := debug.Serve("proxy", *debugAddr, px.eng.Stats)
		up.Wait(px.eng)
		stopDebug() // a successor takes the address up
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
