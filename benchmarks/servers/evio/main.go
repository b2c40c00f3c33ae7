// Command evio is the echo server on github.com/tidwall/evio: -loops loops
// (evio runs single-threaded at 1) and its Data callback returning the input as
// the output, as evio's own echo example does. evio has no buffer-size knob
// (it reads into a 64 KiB packet buffer per loop).
package main

import (
	"context"

	"github.com/tidwall/evio"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct{}

func (server) Serve(cfg serve.Config, m *serve.Meter) error {
	events := evio.Events{NumLoops: cfg.Loops}
	events.Opened = func(evio.Conn) ([]byte, evio.Options, evio.Action) {
		m.Opened()
		return nil, evio.Options{}, evio.None
	}
	events.Data = func(_ evio.Conn, in []byte) ([]byte, evio.Action) {
		return in, evio.None
	}
	return evio.Serve(events, "tcp://"+cfg.Addr)
}

// Stop does nothing: evio stops only when one of its own callbacks returns
// Shutdown, and a ticker to poll for one would add wake-ups to every
// measurement. Exiting the process closes its sockets.
func (server) Stop(context.Context) error { return nil }

func main() {
	serve.Main(server{})
}
