// Command nbio is the echo server on github.com/lesismal/nbio: -loops pollers
// (NPoller), a 64 KiB read buffer, level-triggered epoll and the callbacks run
// on the poller goroutine, all nbio's defaults, as in nbio's echo example.
//
// With -tls-cert and -tls-key it serves TLS as nbio's own HTTPS server
// (nbhttp) does: github.com/lesismal/llib's fork of crypto/tls in its
// nonblocking mode, on the poller goroutine, one tls.Conn per connection on
// nbio's buffer pool; each read is appended to it and the plaintext read
// out in place (AppendAndRead), and its input buffer goes back to the pool
// whenever it holds nothing (ResetOrFreeBuffer). nbio's extension/tls
// package, which nbio marks deprecated, would allocate 2 KiB per read.
package main

import (
	"context"

	ltls "github.com/lesismal/llib/std/crypto/tls"
	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/mempool"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

type server struct{ eng *serve.Handoff[*nbio.Engine] }

func (s server) Serve(cfg serve.Config, m *serve.Meter) error {
	logging.SetLevel(logging.LevelError)
	eng := nbio.NewEngine(nbio.Config{
		Network:        "tcp",
		Addrs:          []string{cfg.Addr},
		NPoller:        cfg.Loops,
		ReadBufferSize: 64 << 10,
	})
	if cfg.TLS() {
		cert, err := ltls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return err
		}
		tc := &ltls.Config{Certificates: []ltls.Certificate{cert}}
		eng.OnOpen(func(c *nbio.Conn) {
			m.Opened()
			c.SetSession(ltls.NewConn(c, tc, false, true, mempool.DefaultMemPool))
		})
		eng.OnData(echoTLS)
	} else {
		eng.OnOpen(func(*nbio.Conn) { m.Opened() })
		eng.OnData(func(c *nbio.Conn, data []byte) { c.Write(data) })
	}
	if err := eng.Start(); err != nil {
		return err
	}
	s.eng.Put(eng)
	eng.Wait()
	return nil
}

// echoTLS feeds what c read to its tls.Conn and writes back the plaintext
// of every whole record, reading it into data, which the tls.Conn has
// copied by then.
func echoTLS(c *nbio.Conn, data []byte) {
	tc, ok := c.Session().(*ltls.Conn)
	if !ok {
		c.Close()
		return
	}
	defer tc.ResetOrFreeBuffer()
	in := data
	for {
		_, n, err := tc.AppendAndRead(in, data)
		in = nil
		if err != nil {
			c.CloseWithError(err)
			return
		}
		if n == 0 {
			return
		}
		if _, err := tc.Write(data[:n]); err != nil {
			c.CloseWithError(err)
			return
		}
	}
}

// ServesTLS: Serve reads the TLS flags.
func (server) ServesTLS() {}

func (s server) Stop(ctx context.Context) error {
	eng, err := s.eng.Take(ctx)
	if err != nil {
		return err
	}
	return eng.Shutdown(ctx)
}

func main() {
	serve.Main(server{eng: serve.NewHandoff[*nbio.Engine]()})
}
