// Command std is the echo server a Go user writes with the standard library:
// a goroutine per connection reading into its own 64 KiB buffer and writing
// back what it read. (io.Copy would splice the socket to itself through a
// pipe, which no one writing an echo server means.) -loops is ignored beyond
// the runner's GOMAXPROCS. With -dial host:port -conns N it dials N
// connections with net.Dial instead and echoes on each the same way.
//
// With -tls-cert and -tls-key it is the crypto/tls server a Go user writes:
// the listener wrapped by tls.NewListener, the handshake run by the
// connection's first Read on its own goroutine, the same echo over the
// tls.Conn.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct {
	stop *serve.Handoff[func() error]
}

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	if cfg.TLS() {
		tc, err := cfg.StdTLS()
		if err != nil {
			ln.Close()
			return err
		}
		ln = tls.NewListener(ln, tc)
	}
	s.stop.Put(ln.Close)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		m.Opened()
		go echo(c)
	}
}

// ServesTLS: Serve reads the TLS flags.
func (server) ServesTLS() {}

// ServeDialed dials, echoes on each connection, and waits for Stop.
func (s server) ServeDialed(cfg serve.Config, m *serve.Meter) error {
	for range cfg.Conns {
		c, err := net.Dial("tcp", cfg.Dial)
		if err != nil {
			return err
		}
		m.Opened()
		go echo(c)
	}
	stopped := make(chan struct{})
	s.stop.Put(func() error { close(stopped); return nil })
	<-stopped
	return nil
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

// Stop closes the listener, or with -dial just returns; exiting the process
// closes the connections.
func (s server) Stop(ctx context.Context) error {
	stop, err := s.stop.Take(ctx)
	if err != nil {
		return err
	}
	if err := stop(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

func main() {
	serve.Main(server{stop: serve.NewHandoff[func() error]()})
}
