//go:build unix

package upgrade

import (
	"fmt"
	"os"
	"syscall"
)

// closeOnExec keeps fd, handed to the process, from the processes it
// starts.
func closeOnExec(fd int) { syscall.CloseOnExec(fd) }

// signals are the signals ParseSignal knows: those a process may be sent
// to ask for an upgrade.
var signals = map[string]os.Signal{
	"SIGHUP":  syscall.SIGHUP,
	"SIGUSR1": syscall.SIGUSR1,
	"SIGUSR2": syscall.SIGUSR2,
}

// ParseSignal returns the signal name names, for a flag that chooses the
// upgrade signal: SIGHUP, SIGUSR1 or SIGUSR2 (the "SIG" may be left out),
// or nil for "" or "none".
func ParseSignal(name string) (os.Signal, error) {
	switch name {
	case "", "none":
		return nil, nil
	}
	if s, ok := signals[name]; ok {
		return s, nil
	}
	if s, ok := signals["SIG"+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("upgrade: signal %q: want SIGHUP, SIGUSR1, SIGUSR2 or none", name)
}
