// Package ops gives the examples their flags of running in production,
// -upgrade-on, -pid-file and -debug-addr, and does alike in each what
// they ask: take over the listening sockets a predecessor hands on, tell
// it (and systemd) once the new process serves, serve /debug/vars while
// it does, and wait for the signal that stops it or hands it over to a
// successor.
package ops

import (
	"flag"
	"log"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/debug"
	"github.com/sluicenet/sluice/upgrade"
)

// The flags, on the command line's flag set.
var (
	upgradeOn = flag.String("upgrade-on", "none", "signal that hands the listeners to a new process: SIGHUP, SIGUSR1, SIGUSR2 or none")
	pidFile   = flag.String("pid-file", "", "file to hold the ID of the process serving")
	debugAddr = flag.String("debug-addr", "", "serve /debug/vars (expvar, the engine's counters under \"sluice\") on host:port")
)

// Upgrader returns the upgrader the flags ask for, holding the sockets
// the process was handed. Where they ask for what cannot be, the command
// exits saying why, its message headed by name.
func Upgrader(name string) *upgrade.Upgrader {
	on, err := upgrade.ParseSignal(*upgradeOn)
	if err != nil {
		log.Fatalf("%s: %v", name, err)
	}
	up, err := upgrade.New(upgrade.Config{PIDFile: *pidFile, Signal: on, Logf: log.Printf})
	if err != nil {
		log.Fatalf("%s: %v", name, err)
	}
	return up
}

// Serve tells up that eng serves, serves /debug/vars on -debug-addr, and
// waits until a signal stops eng or a successor takes over, which it
// returns; the debug endpoint is closed by then, so that a successor can
// take its address up.
func Serve(name string, up *upgrade.Upgrader, eng sluice.Engine) upgrade.Reason {
	if err := up.Ready(); err != nil {
		log.Printf("%s: telling that it serves: %v", name, err)
	}
	stopDebug := debug.Serve(name, *debugAddr, eng.Stats)
	defer stopDebug()
	return up.Wait(eng)
}

// FlagSet reports whether the flag name was given on the command line.
func FlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
