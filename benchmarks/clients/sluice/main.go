// Command sluice is the dialing client on Sluice: an engine with no listener
// (Run with an empty address) that keeps -conns dials in flight. Each dial's
// OnOpen sends the message, OnTraffic checks the echo and returns Close, and
// the next dial starts from OnClose (or from OnDialFailed), on the same loop.
// The engine is set up as the echo server in servers/sluice is: -loops event
// loops, 64 KiB read and write buffers, epoll or, with -poller uring,
// io_uring; everything else, the graceful (lingering) close included, is the
// engine's default. See package churn for the command line and the report.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"

	"github.com/sluicenet/sluice/benchmarks/internal/churn"
)

// A slot is one of the dials in flight; the dial under way carries it as its
// context. Only the loop that owns its connection touches it.
type slot struct {
	n      int    // this dial's number: the slot's index, plus Conns for each before it
	msg    []byte // the message, and so the echo expected
	judged bool   // the echo came and was counted, right or wrong
}

type dialer struct {
	sluice.BuiltinEventEngine
	kind  poller.Kind
	cfg   churn.Config
	tally *churn.Tally
	eng   sluice.Engine // set in OnBoot, before the first dial
	boot  chan struct{}
	ran   chan error
}

func (d *dialer) Start(cfg churn.Config, t *churn.Tally) error {
	d.cfg, d.tally = cfg, t
	d.boot, d.ran = make(chan struct{}), make(chan error, 1)
	go func() {
		d.ran <- sluice.Run(d, "",
			sluice.WithNumEventLoop(cfg.Loops),
			sluice.WithReadBufferCap(64<<10),
			sluice.WithWriteBufferCap(64<<10),
			sluice.WithPoller(d.kind))
	}()
	select {
	case <-d.boot:
	case err := <-d.ran:
		return fmt.Errorf("sluice: engine ended: %w", err)
	}
	for i := range cfg.Conns {
		s := &slot{n: i, msg: make([]byte, cfg.Size)}
		churn.Fill(s.msg, i)
		if err := d.dial(s); err != nil {
			return err
		}
	}
	return nil
}

func (d *dialer) OnBoot(eng sluice.Engine) sluice.Action {
	d.eng = eng
	close(d.boot)
	return sluice.None
}

// dial starts slot s's dial, unless the window has closed. Called from a
// callback, it dials from that callback's loop.
func (d *dialer) dial(s *slot) error {
	if d.tally.Stopping() {
		return nil
	}
	s.judged = false
	return d.eng.Dial(d.cfg.Addrs[s.n%len(d.cfg.Addrs)], s)
}

// next numbers slot s for its next dial and starts it.
func (d *dialer) next(s *slot) {
	s.n += d.cfg.Conns
	if err := d.dial(s); err != nil && !errors.Is(err, sluice.ErrEngineStopped) {
		d.tally.DialFailed()
	}
}

func (d *dialer) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	s := c.Context().(*slot)
	churn.Stamp(s.msg, uint64(s.n))
	return s.msg, sluice.None
}

func (d *dialer) OnTraffic(c sluice.Conn) sluice.Action {
	s := c.Context().(*slot)
	if c.InboundBuffered() < len(s.msg) {
		return sluice.None
	}
	echo, _ := c.Next(len(s.msg))
	s.judged = true
	if bytes.Equal(echo, s.msg) && c.InboundBuffered() == 0 {
		d.tally.Done()
	} else {
		d.tally.Mismatch()
	}
	return sluice.Close
}

func (d *dialer) OnClose(c sluice.Conn, err error) sluice.Action {
	s := c.Context().(*slot)
	if err != nil || !s.judged {
		d.tally.Closed()
	}
	d.next(s)
	return sluice.None
}

func (d *dialer) OnDialFailed(_ string, ctx any, err error) {
	d.tally.DialFailed()
	d.next(ctx.(*slot))
}

func (d *dialer) Stop(ctx context.Context) error {
	if err := d.eng.Stop(ctx); err != nil {
		return err
	}
	return <-d.ran
}

func main() {
	d := new(dialer)
	flag.TextVar(&d.kind, "poller", poller.Epoll, "how the event loop waits: epoll, uring or auto")
	churn.Main(d)
}
