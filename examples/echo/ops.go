package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/ops"
	"github.com/sluicenet/sluice/upgrade"
)

// drain is the flag of running in production that echo has beside
// package ops's (upgrades, the PID file, the debug endpoint).
var drain = flag.Duration("drain", 30*time.Second, "after an upgrade, how long connections may take to finish on the old process")

// stopTimeout bounds a graceful stop: connections still sending what they
// have queued after it are reset.
const stopTimeout = 5 * time.Second

// serve runs the server on addr (and on the sockets the process was
// handed, with TLS when tlsConfig is not nil) until a signal stops it or a successor takes over, stops it,
// and says how that went; it exits with status 1 if the stop had to reset
// connections, or the server could not start.
func serve(h *echo, addr string, tlsConfig *tls.Config, opts ...sluice.Option) {
	up := ops.Upgrader("echo")
	defer up.Close()
	if files := up.Files(); len(files) > 0 {
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Name()
		}
		fmt.Printf("echo: handed listening sockets %s\n", strings.Join(names, ", "))
	}
	if !ops.FlagSet("addr") {
		addr = up.Default(addr)
	}
	eng, err := sluice.Start(h, addr, append(opts, sluice.WithListenerFiles(up.Files(), sluice.ListenTLS(tlsConfig)))...)
	if err != nil {
		log.Fatalf("echo: %v", err)
	}
	if why := ops.Serve("echo", up, eng); why == upgrade.HandedOver {
		ctx, cancel := context.WithTimeout(context.Background(), *drain)
		err := eng.StopAccepting(ctx)
		cancel()
		if err != nil {
			log.Printf("echo: %d connections still open after %v are closed now", eng.CountConnections(), *drain)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err = eng.Stop(ctx)
	fmt.Println("echo:", &h.accepts)
	if err != nil {
		up.Close()
		log.Fatalf("echo: stop: connections still open after %v were reset: %v", stopTimeout, err)
	}
	fmt.Println("echo: stopped")
}

// accepts counts the connections the server accepted, and when the first
// and the last came (Unix nanoseconds): an upgrade hands over between the
// last of the old process and the first of the new.
type accepts struct {
	n, first, last atomic.Int64
}

// opened counts a connection accepted now.
func (a *accepts) opened() {
	now := time.Now().UnixNano()
	a.first.CompareAndSwap(0, now)
	a.last.Store(now)
	a.n.Add(1)
}

// String says how many connections came, and when.
func (a *accepts) String() string {
	n := a.n.Load()
	if n == 0 {
		return "accepted no connection"
	}
	at := func(ns int64) string { return time.Unix(0, ns).Format(time.RFC3339Nano) }
	return fmt.Sprintf("accepted %d connections, the first at %s, the last at %s", n, at(a.first.Load()), at(a.last.Load()))
}
