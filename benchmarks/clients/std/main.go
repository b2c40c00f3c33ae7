// Command std is the dialing client a Go user writes with the standard
// library: -conns goroutines, each dialing with net.Dial, writing one
// message, reading its echo with io.ReadFull, checking it and closing, over
// and over. See package churn for the command line and the report.
package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"

	"github.com/sluicenet/sluice/benchmarks/internal/churn"
)

type dialer struct {
	wg   sync.WaitGroup
	stop chan struct{}
}

func (d *dialer) Start(cfg churn.Config, t *churn.Tally) error {
	d.stop = make(chan struct{})
	for i := range cfg.Conns {
		d.wg.Go(func() { d.dialLoop(cfg, t, i) })
	}
	return nil
}

// dialLoop is one of the dials in flight: slot i of cfg.Conns.
func (d *dialer) dialLoop(cfg churn.Config, t *churn.Tally, i int) {
	msg, echo := make([]byte, cfg.Size), make([]byte, cfg.Size)
	churn.Fill(msg, i)
	for n := i; ; n += cfg.Conns {
		select {
		case <-d.stop:
			return
		default:
		}
		c, err := net.Dial("tcp", cfg.Addrs[n%len(cfg.Addrs)])
		if err != nil {
			t.DialFailed()
			continue
		}
		churn.Stamp(msg, uint64(n))
		switch _, err := c.Write(msg); {
		case err != nil:
			t.Closed()
		case func() error { _, err := io.ReadFull(c, echo); return err }() != nil:
			t.Closed()
		case !bytes.Equal(msg, echo):
			t.Mismatch()
		default:
			t.Done()
		}
		c.Close()
	}
}

func (d *dialer) Stop(ctx context.Context) error {
	close(d.stop)
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func main() { churn.Main(new(dialer)) }
