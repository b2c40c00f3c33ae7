package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicenet/sluice"
)

// proxy is the event handler. Every client it accepts is paired with a
// connection it dials to a backend from the client's own loop, so that a
// pair's two connections, and the pair itself, belong to one loop and
// need no locks; only the backends' counters and the proxy's totals are
// shared between loops.
type proxy struct {
	sluice.BuiltinEventEngine
	cfg  config
	pool *pool

	// loops holds each loop's pairs and counters, by Loop.Index. Each is
	// touched only on its own loop: by callbacks, or by Loop.Execute.
	loops []loopState

	clients  atomic.Int64  // clients open, for -maxconn
	rejected atomic.Uint64 // clients reset at once for -maxconn
	unserved atomic.Uint64 // clients reset because no backend could be reached

	eng     sluice.Engine
	booted  chan struct{}   // closed once eng is set and the listeners are open
	stop    <-chan struct{} // closed to stop the proxy (run's context)
	done    chan struct{}   // closed once the engine has shut down
	aside   sync.WaitGroup  // goroutines OnBoot starts, which run waits for
	stopErr error           // set by a stop that had to reset connections; read once run returns
}

// loopState is one loop's share of the proxy's state.
type loopState struct {
	pairs  *pair  // every pair of the loop, linked through pair.next
	peak   int    // the most unsent bytes one side of a pair held after a relayed write
	up     uint64 // bytes relayed from clients to backends
	down   uint64 // bytes relayed from backends to clients
	header []byte // where PROXY headers are built, reused: OnOpen copies what it is given
	_      [64]byte
}

// pair is a client and its backend connection. Both connections carry it
// as their context.
type pair struct {
	client  sluice.Conn
	backend sluice.Conn // nil until its connect succeeds
	be      *backend    // being connected to, or relayed to
	tried   uint64      // the backends tried for this client, by bit
	budget  time.Time   // when the client's time to reach a backend runs out

	dialing     bool // a connect is in flight: OnOpen or OnDialFailed will come
	clientGone  bool // OnClose ran for the client
	backendGone bool // OnClose ran for the backend
	clientEnded bool // the client finished sending before its backend connected
	settled     bool // forgotten: removed from its loop's list

	// Each side's reading is paused while the other side holds more unsent
	// bytes than the high-water mark (-buffer), and resumed when that
	// drains (OnDrain): whatever either peer does, a pair holds at most
	// about a mark and a read in each direction.
	clientHeld, backendHeld bool

	prev, next *pair // in its loop's list
}

// newProxy returns a proxy for cfg, which it checks and completes with
// defaults, ready for run.
func newProxy(cfg config) (*proxy, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &proxy{
		cfg:    cfg,
		pool:   newPool(&cfg),
		booted: make(chan struct{}),
		done:   make(chan struct{}),
	}, nil
}

// run serves until ctx ends, then stops gracefully within -grace.
func (px *proxy) run(ctx context.Context) error {
	px.stop = ctx.Done()
	cfg := &px.cfg
	opts := []sluice.Option{
		sluice.WithNumEventLoop(cfg.loops),
		sluice.WithPoller(cfg.poller),
		sluice.WithProxyProtocol(cfg.proxyProtocol, 0),
		// A relay passes an end of stream on rather than closing
		// (OnHalfClose), and paces each side by the other's output
		// (OnDrain) rather than by its own, which would deadlock against
		// a backend that stops reading while its own output is full.
		sluice.WithHalfClose(true),
		sluice.WithBackpressure(false),
		sluice.WithWriteBufferCap(cfg.buffer),
		sluice.WithIdleTimeout(cfg.idleTimeout),
		sluice.WithTLS(cfg.tls),
	}
	first := ""
	if len(cfg.addrs) > 0 {
		first = cfg.addrs[0]
		for _, addr := range cfg.addrs[1:] {
			opts = append(opts, sluice.WithListener(addr, sluice.ListenTLS(cfg.tls)))
		}
	}
	opts = append(opts, sluice.WithListenerFiles(cfg.files, sluice.ListenTLS(cfg.tls)))
	err := sluice.Run(px, first, opts...)
	// The stop's own report comes after the engine has shut down.
	px.aside.Wait()
	return err
}

// OnBoot keeps the engine, makes room for each loop's state, says where
// the proxy listens, and starts what runs beside the loops: the stop, and
// the statistics.
func (px *proxy) OnBoot(eng sluice.Engine) sluice.Action {
	px.eng = eng
	px.loops = make([]loopState, eng.NumLoops())
	if px.cfg.listening != nil {
		px.cfg.listening(eng.Addrs())
	}
	px.aside.Go(px.stopWhenDone)
	if px.cfg.statsInterval > 0 {
		px.aside.Go(func() { px.printStats(px.cfg.statsInterval) })
	}
	close(px.booted)
	return sluice.None
}

// OnShutdown tells what runs beside the loops that the engine has stopped.
func (px *proxy) OnShutdown(sluice.Engine) { close(px.done) }

// stopWhenDone stops the engine once run's context ends: it stops
// accepting and lets the pairs finish by themselves for -drain, so that a
// reply on its way from a backend still reaches its client; then every
// connection left sends what the proxy has queued for it and closes.
// Pairs that have not closed when -grace has passed are reset.
func (px *proxy) stopWhenDone() {
	select {
	case <-px.stop:
	case <-px.done:
		return
	}
	if px.cfg.drain > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), px.cfg.drain)
		err := px.eng.StopAccepting(ctx)
		cancel()
		if err != nil {
			px.cfg.logf("proxy: stop: pairs still open after %v are closed now", px.cfg.drain)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), px.cfg.grace)
	defer cancel()
	if err := px.eng.Stop(ctx); err != nil {
		px.stopErr = fmt.Errorf("connections left after %v were reset: %w", px.cfg.grace, err)
	}
}

// loop returns the state of c's loop, for use on that loop only.
func (px *proxy) loop(c sluice.Conn) *loopState { return &px.loops[c.Loop().Index()] }

// OnOpen runs for a client the proxy accepted, and for a backend
// connection once it connects.
func (px *proxy) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	if c.Origin() == sluice.Dialed {
		return nil, px.backendOpen(c)
	}
	return nil, px.clientOpen(c)
}

// clientOpen pairs a new client with a backend connection, and holds the
// client's bytes back until that connects: reading stays paused, and what
// the client sends meanwhile waits, in the kernel or in the engine, to be
// offered when reading resumes.
func (px *proxy) clientOpen(c sluice.Conn) sluice.Action {
	if px.clients.Add(1) > int64(px.cfg.maxConn) {
		// Reset rather than linger, so that a flood past the limit holds
		// no descriptors while it waits for clients to finish.
		px.clients.Add(-1)
		px.rejected.Add(1)
		c.SetLinger(0)
		return sluice.Close
	}
	p := &pair{client: c, budget: time.Now().Add(px.cfg.connectTimeout)}
	c.SetContext(p)
	c.PauseRead()
	px.loop(c).add(p)
	px.connect(p)
	return sluice.None
}

// connect dials the next backend for p's client, on the client's loop,
// with a share of what is left of the client's budget: the budget split
// evenly over the backends it may still try, so that one that swallows
// connects without answering leaves time to try the others. With none
// left to try, or no time, the client is reset.
func (px *proxy) connect(p *pair) {
	now := time.Now()
	left := p.budget.Sub(now)
	be, candidates := px.pool.pick(p.tried, px.sourceOf(p.client), now.UnixNano())
	if be == nil || left <= 0 {
		px.unserved.Add(1)
		px.reset(p.client)
		return
	}
	p.tried |= 1 << be.idx
	p.be, p.dialing = be, true
	be.active.Add(1)
	timeout := sluice.DialTimeout(left / time.Duration(candidates))
	var err error
	if px.cfg.dialTLS != nil {
		err = p.client.Loop().Dial(be.addr, p, timeout, sluice.DialTLS(px.cfg.dialTLS))
	} else {
		err = p.client.Loop().Dial(be.addr, p, timeout)
	}
	if err != nil {
		// Only a stopping engine refuses a dial whose address passed
		// config.check; the stop closes the client.
		be.active.Add(-1)
		p.be, p.dialing = nil, false
	}
}

// sourceOf returns the client's address when the balance hashes it;
// for a unix socket's client the address costs a system call.
func (px *proxy) sourceOf(c sluice.Conn) net.Addr {
	if px.pool.balance != source {
		return nil
	}
	return c.RemoteAddr()
}

// backendOpen starts relaying once p's backend has connected: the PROXY
// header goes first, if asked for, then the client's bytes, which reading
// the client again offers.
func (px *proxy) backendOpen(c sluice.Conn) sluice.Action {
	p := c.Context().(*pair)
	p.dialing = false
	p.backend = c
	px.pool.connectOK(p.be)
	if p.clientGone {
		return sluice.Close
	}
	if px.cfg.sendProxy != sendProxyOff {
		ls := px.loop(c)
		ls.header = appendHeader(ls.header[:0], px.cfg.sendProxy, p.client)
		c.Write(ls.header)
	}
	p.client.ResumeRead()
	if p.clientEnded {
		c.CloseWrite()
	}
	return sluice.None
}

// OnDialFailed counts a failed connect against its backend's health and
// tries the next backend for the client, or, when the proxy itself is at
// fault (stopping, out of descriptors), resets the client.
func (px *proxy) OnDialFailed(_ string, ctx any, err error) {
	p := ctx.(*pair)
	be := p.be
	be.active.Add(-1)
	p.be, p.dialing = nil, false
	if !backendsFault(err) {
		// The proxy is stopping, or out of descriptors: no other backend
		// would do better.
		if !p.clientGone {
			px.unserved.Add(1)
			px.reset(p.client)
		}
		px.settle(p)
		return
	}
	px.pool.connectFailed(be, err, time.Now().UnixNano())
	if p.clientGone {
		px.settle(p)
		return
	}
	px.connect(p)
}

// backendsFault tells a connect that failed because of the backend, which
// counts against its health and is worth trying elsewhere, from one that
// failed because of the proxy.
func backendsFault(err error) bool {
	for _, local := range []error{sluice.ErrEngineStopped, sluice.ErrTooManyConns, sluice.ErrTooManyHandshakes,
		syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, local) {
			return false
		}
	}
	return true
}

// OnTraffic relays what one side sent to the other, and pauses reading
// the sender once the other side holds more than the high-water mark
// unsent; OnDrain resumes it.
func (px *proxy) OnTraffic(c sluice.Conn) sluice.Action {
	p, _ := c.Context().(*pair)
	if p == nil {
		return sluice.None
	}
	fromClient := c == p.client
	peer := p.backend
	if !fromClient {
		peer = p.client
	}
	if peer == nil {
		// A client whose backend has not connected is paused; bytes
		// offered before the pause took effect wait for it.
		return sluice.None
	}
	b, _ := c.Next(-1)
	if p.clientGone || p.backendGone {
		return sluice.None // the other side is gone, and this one is closing
	}
	// What is written to peer goes when c's callback returns, with
	// whatever else the loop sends then (on io_uring, in the same system
	// call as the loop's wait): no Flush, which would write it at once.
	if _, err := peer.Write(b); err != nil {
		return sluice.None
	}
	n := peer.OutboundBuffered()
	ls := px.loop(c)
	ls.peak = max(ls.peak, n)
	if fromClient {
		ls.up += uint64(len(b))
	} else {
		ls.down += uint64(len(b))
	}
	if n > px.cfg.buffer {
		c.PauseRead()
		if fromClient {
			p.clientHeld = true
		} else {
			p.backendHeld = true
		}
	}
	return sluice.None
}

// OnDrain resumes reading the side that feeds c, once c has sent enough
// of what it held.
func (px *proxy) OnDrain(c sluice.Conn) sluice.Action {
	p, _ := c.Context().(*pair)
	switch {
	case p == nil:
	case c == p.backend && p.clientHeld:
		p.clientHeld = false
		p.client.ResumeRead()
	case c == p.client && p.backendHeld:
		p.backendHeld = false
		p.backend.ResumeRead()
	}
	return sluice.None
}

// OnHalfClose passes an end of stream on: the other side's write side is
// shut down once what it holds is sent, and it goes on reading. A
// connection whose input has ended and whose write side is shut closes,
// so a pair closes once both directions have ended.
func (px *proxy) OnHalfClose(c sluice.Conn) sluice.Action {
	p, _ := c.Context().(*pair)
	switch {
	case p == nil:
	case c == p.client && p.backend == nil:
		p.clientEnded = true // passed on once the backend connects
	case c == p.client:
		p.backend.CloseWrite()
	default:
		p.client.CloseWrite()
	}
	return sluice.None
}

// OnClose closes the other side of c's pair as c closed: gracefully after
// a clean end or an idle timeout, so that it sends what it holds first;
// after a reset or any other error with a reset, so that the peer learns
// the stream broke rather than reading a clean but truncated end.
func (px *proxy) OnClose(c sluice.Conn, err error) sluice.Action {
	p, _ := c.Context().(*pair)
	if p == nil {
		return sluice.None // a client reset for -maxconn
	}
	var peer sluice.Conn
	if c == p.client {
		p.clientGone = true
		px.clients.Add(-1)
		if !p.backendGone {
			peer = p.backend
		}
	} else {
		p.backendGone = true
		p.be.active.Add(-1)
		if abortive(err) {
			p.be.errored.Add(1)
		}
		if !p.clientGone {
			peer = p.client
		}
	}
	if peer != nil {
		if abortive(err) {
			peer.SetLinger(0)
		}
		peer.Close()
	}
	px.settle(p)
	return sluice.None
}

// abortive reports whether a connection that closed with err broke its
// stream. An idle timeout did not: nothing was moving.
func abortive(err error) bool {
	return err != nil && !errors.Is(err, sluice.ErrIdleTimeout)
}

// reset closes c with a TCP reset, at once.
func (px *proxy) reset(c sluice.Conn) {
	c.SetLinger(0)
	c.Close()
}

// settle forgets p once nothing more will be heard of it: its client has
// closed, and its backend either never connected or has closed too.
func (px *proxy) settle(p *pair) {
	if p.settled || !p.clientGone || p.dialing || p.backend != nil && !p.backendGone {
		return
	}
	p.settled = true
	px.loop(p.client).remove(p)
}

// add puts p in the loop's list of pairs.
func (ls *loopState) add(p *pair) {
	p.next = ls.pairs
	if ls.pairs != nil {
		ls.pairs.prev = p
	}
	ls.pairs = p
}

// remove takes p out of the loop's list of pairs.
func (ls *loopState) remove(p *pair) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		ls.pairs = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	}
	p.prev, p.next = nil, nil
}
