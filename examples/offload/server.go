package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/codec"
	"github.com/sluicenet/sluice/examples/internal/debug"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/pool"
)

// Status bytes, the first byte of every answer's payload.
const (
	statusOK   byte = 0 // the request's payload upper-cased follows
	statusShed byte = 1 // the server did not work on the request; why follows
)

// headerLen is the length of an answer's header: its length and status.
const headerLen = 4 + 1

// Answers for shed requests, framed once.
var (
	answerBusy     = appendAnswer(nil, statusShed, []byte("server busy"))
	answerStopping = appendAnswer(nil, statusShed, []byte("server stopping"))
)

// stopTimeout bounds each step of a graceful stop: waiting for running
// requests, then for queued answers to be sent.
const stopTimeout = 5 * time.Second

// serverConfig is what the server's flags set.
type serverConfig struct {
	addr      string
	loops     int
	workers   int // 0: the pool's default
	delay     time.Duration
	maxFrame  int
	poller    poller.Kind         // the zero Kind is epoll
	files     []*os.File          // listening sockets handed to the process (sluice.ListenFDs)
	debugAddr string              // where to serve /debug/vars; empty: nowhere
	listening func(addr net.Addr) // called once the server listens, for each address
}

// server is the event handler.
type server struct {
	sluice.BuiltinEventEngine
	cfg      serverConfig
	requests codec.LengthField
	workers  *pool.Pool
	stop     <-chan struct{} // closed to stop the server
	done     chan struct{}   // closed once the engine has shut down
	stopped  chan error      // how the stop went; nil once it has gone well
	debug    func()          // stops serving /debug/vars
}

// newServer returns a server, its pool started, for run to serve.
func newServer(cfg serverConfig) (*server, error) {
	var opts []pool.Option
	if cfg.workers > 0 {
		opts = append(opts, pool.WithSize(cfg.workers))
	}
	workers, err := pool.New(opts...)
	if err != nil {
		return nil, err
	}
	return &server{
		cfg:      cfg,
		requests: codec.LengthField{Strip: 4, MaxFrameSize: cfg.maxFrame},
		workers:  workers,
		done:     make(chan struct{}),
		stopped:  make(chan error, 1),
	}, nil
}

// run serves until ctx ends and the server has stopped gracefully, and
// returns how the stop went.
func (s *server) run(ctx context.Context) error {
	defer s.workers.Release()
	s.stop = ctx.Done()
	err := sluice.Run(s, s.cfg.addr, sluice.WithNumEventLoop(s.cfg.loops), sluice.WithPoller(s.cfg.poller),
		sluice.WithListenerFiles(s.cfg.files))
	if err != nil {
		return err
	}
	// The engine has stopped, and stopWhenDone, which stopped it, knows
	// how that went.
	if err := <-s.stopped; err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}

func (s *server) OnBoot(eng sluice.Engine) sluice.Action {
	for _, a := range eng.Addrs() {
		s.cfg.listening(a)
	}
	s.debug = debug.Serve("offload", s.cfg.debugAddr, eng.Stats)
	go func() { s.stopped <- s.stopWhenDone(eng) }()
	return sluice.None
}

func (s *server) OnShutdown(sluice.Engine) {
	s.debug()
	close(s.done)
}

// stopWhenDone stops the server once s.stop is closed: the pool first, so
// that requests already running still answer, then the engine, which sends
// what is queued and closes the connections. It returns what went wrong:
// requests still running, or connections reset, when stopTimeout ran out.
// An engine that stopped by itself is not its to report.
func (s *server) stopWhenDone(eng sluice.Engine) error {
	select {
	case <-s.stop:
	case <-s.done:
		return nil
	}
	var errs []error
	if err := s.workers.ReleaseTimeout(stopTimeout); err != nil {
		errs = append(errs, fmt.Errorf("requests still running after %v: %w", stopTimeout, err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		errs = append(errs, fmt.Errorf("connections still open after %v were reset: %w", stopTimeout, err))
	}
	return errors.Join(errs...)
}

func (s *server) OnTraffic(c sluice.Conn) sluice.Action {
	err := codec.Each(c, s.requests, func(req []byte) error {
		return s.offload(c, req)
	})
	if err != nil {
		// A frame over -max-frame: the stream has lost its framing.
		return sluice.Close
	}
	return sluice.None
}

// offload copies req out of the loop's buffer and hands it to a worker,
// or, when none can take it, answers at once that it was shed.
func (s *server) offload(c sluice.Conn, req []byte) error {
	// The copy is framed as the answer from the start, so that the worker
	// works on it in place and the loop sends it without copying it again.
	b := pool.GetBuffer()
	b.B = appendAnswer(b.B, statusOK, req)
	err := s.workers.Submit(func() { s.work(c, b) })
	if err == nil {
		return nil
	}
	pool.PutBuffer(b)
	switch {
	case errors.Is(err, pool.ErrPoolOverload):
		_, err = c.Write(answerBusy)
	case errors.Is(err, pool.ErrPoolClosed):
		_, err = c.Write(answerStopping)
	}
	return err
}

// work runs on a worker: it does the blocking work on the answer in b and
// sends it. b goes back to the pool once the loop has queued the answer,
// or at once if the engine has stopped and never will.
func (s *server) work(c sluice.Conn, b *pool.Buffer) {
	time.Sleep(s.cfg.delay) // the slow backend
	upper(b.B[headerLen:])
	err := c.AsyncWrite(b.B, func(sluice.Conn, error) { pool.PutBuffer(b) })
	if err != nil {
		pool.PutBuffer(b)
	}
}

// appendAnswer appends an answer frame with the status and payload.
func appendAnswer(dst []byte, status byte, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(1+len(payload)))
	dst = append(dst, status)
	return append(dst, payload...)
}

// upper upper-cases the ASCII letters of p in place.
func upper(p []byte) {
	for i, c := range p {
		if 'a' <= c && c <= 'z' {
			p[i] = c - 'a' + 'A'
		}
	}
}
