// Command gnet is the dialing client on github.com/panjf2000/gnet/v2's
// Client, set up as the echo server in servers/gnet is (-loops event loops,
// 64 KiB read and write buffers, the rest gnet's defaults). gnet's
// Client.DialContext blocks its caller: it dials with net.Dial, hands a
// duplicate of the descriptor to an event loop and waits until the loop has
// opened it. Called from that loop's own callbacks it would wait for itself,
// so, as gnet's own client examples do, -conns goroutines dial: each dials,
// then waits until OnClose says its connection has ended, and dials again.
// OnOpen sends the message, OnTraffic checks the echo and returns Close. See
// package churn for the command line and the report.
package main

import (
	"context"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"github.com/sluicenet/sluice/benchmarks/internal/churn"
)

// A slot is one of the dials in flight: the connection's context, and the
// goroutine that dials it again once it has closed.
type slot struct {
	n int // this dial's number: the slot's index, plus Conns for each before it
	churn.Echo
	closed chan struct{}
}

type dialer struct {
	gnet.BuiltinEventEngine
	cfg     churn.Config
	tally   *churn.Tally
	cli     *gnet.Client
	stopped atomic.Bool
}

func (d *dialer) Start(cfg churn.Config, t *churn.Tally) error {
	d.cfg, d.tally = cfg, t
	cli, err := gnet.NewClient(d,
		gnet.WithMulticore(cfg.Loops > 1),
		gnet.WithNumEventLoop(cfg.Loops),
		gnet.WithReadBufferCap(64<<10),
		gnet.WithWriteBufferCap(64<<10))
	if err != nil {
		return err
	}
	if err := cli.Start(); err != nil {
		return err
	}
	d.cli = cli
	for i := range cfg.Conns {
		s := &slot{n: i, Echo: churn.Echo{Msg: make([]byte, cfg.Size)}, closed: make(chan struct{}, 1)}
		churn.Fill(s.Msg, i)
		go d.dialLoop(s)
	}
	return nil
}

// dialLoop dials slot s again and again until the window closes.
func (d *dialer) dialLoop(s *slot) {
	for ; !d.tally.Stopping(); s.n += d.cfg.Conns {
		if _, err := d.cli.DialContext("tcp", d.cfg.Addrs[s.n%len(d.cfg.Addrs)], s); err != nil {
			d.tally.DialFailed()
			continue
		}
		<-s.closed
	}
}

func (d *dialer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s := c.Context().(*slot)
	churn.Stamp(s.Msg, uint64(s.n))
	return s.Msg, gnet.None
}

func (d *dialer) OnTraffic(c gnet.Conn) gnet.Action {
	if c.Context().(*slot).Judge(c, d.tally) {
		return gnet.Close
	}
	return gnet.None
}

func (d *dialer) OnClose(c gnet.Conn, err error) gnet.Action {
	s := c.Context().(*slot)
	s.Closed(err, d.tally)
	s.closed <- struct{}{}
	return gnet.None
}

// Stop stops the client's loops. Goroutines still inside DialContext may
// then wait for a loop that is gone; the process exits right after.
func (d *dialer) Stop(context.Context) error {
	return d.cli.Stop()
}

func main() { churn.Main(new(dialer)) }
