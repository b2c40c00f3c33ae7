// Command std is the echo server a Go user writes with the standard library:
// a goroutine per connection reading into its own 64 KiB buffer and writing
// back what it read. (io.Copy would splice the socket to itself through a
// pipe, which no one writing an echo server means.) -loops is ignored beyond
// the runner's GOMAXPROCS.
package main

import (
	"context"
	"errors"
	"net"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct{ ln *serve.Handoff[net.Listener] }

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	s.ln.Put(ln)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		m.Opened()
		go echo(c)
	}
}

func echo(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Stop closes the listener; exiting the process closes the connections.
func (s server) Stop(ctx context.Context) error {
	ln, err := s.ln.Take(ctx)
	if err != nil {
		return err
	}
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

func main() {
	serve.Main(server{ln: serve.NewHandoff[net.Listener]()})
}
