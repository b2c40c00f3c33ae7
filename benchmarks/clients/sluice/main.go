// Command sluice is the dialing client on Sluice: an engine with no listener
// (Run with an empty address) that keeps -conns dials in flight. Each dial's
// OnOpen sends the message, OnTraffic checks the echo and returns Close, and
// the next dial starts from OnClose (or from OnDialFailed), on the same loop.
// The engine is set up as the echo server in servers/sluice is: -loops event
// loops, 64 KiB read and write buffers, epoll or, with -poller uring,
// io_uring; everything else, the graceful (lingering) close included, is the
// engine's default. See package churn for the command line and the report.
//
// Two flags take a default away, to see what it costs (benchmarks/run
// passes neither): -loop-dial dials with the closed connection's
// Loop.Dial instead of Engine.Dial, which, called from a callback, asks
// the kernel for the calling thread's id to find its loop; -linger=false
// closes without the lingering close (WithLingeringClose(0, 0)).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"

	"github.com/sluicenet/sluice/benchmarks/internal/churn"
)

// A slot is one of the dials in flight; the dial under way carries it as its
// context. Only the loop that owns its connection touches it.
type slot struct {
	n int // this dial's number: the slot's index, plus Conns for each before it
	churn.Echo
	loop sluice.Loop // the loop of its last connection, for -loop-dial
}

type dialer struct {
	sluice.BuiltinEventEngine
	kind     poller.Kind
	loopDial bool // -loop-dial
	noLinger bool // -linger=false
	cfg      churn.Config
	tally    *churn.Tally
	eng      sluice.Engine // set in OnBoot, before the first dial
	boot     chan struct{}
	ran      chan error
}

func (d *dialer) Start(cfg churn.Config, t *churn.Tally) error {
	d.cfg, d.tally = cfg, t
	d.boot, d.ran = make(chan struct{}), make(chan error, 1)
	go func() {
		opts := []sluice.Option{
			sluice.WithNumEventLoop(cfg.Loops),
			sluice.WithReadBufferCap(64 << 10),
			sluice.WithWriteBufferCap(64 << 10),
			sluice.WithPoller(d.kind),
		}
		if d.noLinger {
			opts = append(opts, sluice.WithLingeringClose(0, 0))
		}
		d.ran <- sluice.Run(d, "", opts...)
	}()
	select {
	case <-d.boot:
	case err := <-d.ran:
		return fmt.Errorf("sluice: engine ended: %w", err)
	}
	for i := range cfg.Conns {
		s := &slot{n: i, Echo: churn.Echo{Msg: make([]byte, cfg.Size)}}
		churn.Fill(s.Msg, i)
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
	addr := d.cfg.Addrs[s.n%len(d.cfg.Addrs)]
	if d.loopDial && s.loop != (sluice.Loop{}) {
		return s.loop.Dial(addr, s)
	}
	return d.eng.Dial(addr, s)
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
	churn.Stamp(s.Msg, uint64(s.n))
	return s.Msg, sluice.None
}

func (d *dialer) OnTraffic(c sluice.Conn) sluice.Action {
	if c.Context().(*slot).Judge(c, d.tally) {
		return sluice.Close
	}
	return sluice.None
}

func (d *dialer) OnClose(c sluice.Conn, err error) sluice.Action {
	s := c.Context().(*slot)
	s.Closed(err, d.tally)
	if d.loopDial {
		s.loop = c.Loop()
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
	flag.BoolVar(&d.loopDial, "loop-dial", false, "dial from callbacks with Loop.Dial instead of Engine.Dial")
	flag.BoolFunc("linger", "close with the engine's lingering close, the default (false: WithLingeringClose(0, 0))", func(v string) error {
		on, err := strconv.ParseBool(v)
		d.noLinger = !on
		return err
	})
	churn.Main(d)
}
