package sluicehttp

import (
	"context"
	"errors"
	"log"
	"math"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/pool"
	"github.com/sluicenet/sluice/wheel"
)

// DefaultWriteBufferSize is how much unsent output a connection may hold
// before a handler that streams its response waits for the peer to read
// some, unless Server.WriteBufferSize says otherwise.
const DefaultWriteBufferSize = 64 << 10

// DefaultMaxHandlers is how many handlers a Server whose Pool is nil runs
// at once. A connection runs at most one at a time (its pipelined
// requests follow one another), so it is a bound on busy connections,
// not on open ones: a worker is a goroutine made when needed and gone
// once idle a while, as net/http spends one per connection. Past it a
// request is answered 503. The pool package's smaller default, sized
// for tasks, would refuse requests at a thousand busy connections on
// one CPU.
const DefaultMaxHandlers = 10_000

// Server serves HTTP/1.1 and HTTP/1.0 from a Sluice engine's loops with
// any http.Handler. Its fields are named and mean what net/http.Server's
// do; set them before Start, and do not change them afterwards. The zero
// Server serves http.DefaultServeMux without timeouts, as net/http's does.
type Server struct {
	// Handler answers each request; nil means http.DefaultServeMux.
	Handler http.Handler

	// ReadHeaderTimeout bounds the wait for a request's head, from its
	// first byte (or, on a new connection, from the connection's
	// opening): a client still sending its head then is answered 408
	// Request Timeout and closed; a new connection that sent nothing is
	// closed. Zero means ReadTimeout's value.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the wait for a whole request, head and body,
	// from its first byte. A body that has not all come by then fails
	// its next Read with an error whose Timeout method says true, and
	// the connection closes after the response. Zero means none.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of a request's head to
	// the end of its response, once queued on the connection (with the
	// handler on the goroutine pool; an inline handler returns at once):
	// a handler that takes longer has its connection reset, its
	// request's context cancelled and its writes failed. Zero means none.
	// The engine's own write timeout (sluice.WithWriteTimeout) bounds a
	// peer that stops reading.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waits this long
	// for its next request. Zero means ReadTimeout's value; with both
	// zero, idle connections are kept until the client closes them.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's head: request line and header
	// lines. One longer than this (and 4 KiB more, as net/http allows)
	// is answered 431 Request Header Fields Too Large. Zero means
	// http.DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxBodyBytes bounds a request's body. One whose Content-Length
	// says more is answered 413 Request Entity Too Large without running
	// the handler; a chunked one that grows past it fails its Read with
	// an *http.MaxBytesError, and is answered 413 if the handler answers
	// nothing. Either way the connection closes after the response. Zero
	// means no bound, except for inline handlers (Inline), whose bodies
	// are held whole: 1 MiB.
	MaxBodyBytes int64

	// Inline runs the handler on the connection's event loop rather than
	// on Pool: for handlers that never block (no disk, no network, no
	// lock held long), which then cost no goroutine hand-off. An inline
	// handler gets the request body whole, held in memory (see
	// MaxBodyBytes; a client that expects 100 Continue gets it before the
	// handler runs), and must not use its request or response after it
	// returns; a connection it hijacks must be used from another
	// goroutine, since the loop delivers its bytes.
	Inline bool
	// Pool runs the handlers, which may block. Nil means a pool of
	// DefaultMaxHandlers workers the Server makes at Start and releases
	// when the engine stops. A request that finds every worker busy is
	// answered 503 Service Unavailable and its connection closed.
	Pool *pool.Pool

	// WriteBufferSize is how much unsent output a connection may hold
	// before a handler that writes more (a streamed response, a hijacked
	// connection) waits for the peer to read. Zero means
	// DefaultWriteBufferSize. Start sets the engine's
	// sluice.WithWriteBufferCap to it, over any the options set.
	WriteBufferSize int

	// ErrorLog logs panics in handlers and other errors; nil means the
	// log package's standard logger, as net/http's.
	ErrorLog *log.Logger

	mu       sync.Mutex
	eng      sluice.Engine
	started  bool
	ownPool  bool
	handler  http.Handler
	loops    []*loopState
	epoch    time.Time
	date     atomic.Pointer[[]byte] // "Date: ...\r\n", refreshed each second
	shutting atomic.Bool
	served   atomic.Int64 // open connections not hijacked
}

// ErrServerStarted is returned by Start and Serve for a Server already
// started: a Server serves one engine.
var ErrServerStarted = errors.New("sluicehttp: server already started")

// Start starts an engine on addr ("tcp://host:port", as sluice.Start
// takes it) with opts, which serves s, and returns it once it serves.
// Stop it with Shutdown, which lets requests in flight finish, or with
// the engine's Stop, which does not.
//
// Start adds the options the server needs: the ticker (for the Date
// header), half-close (a client that finishes sending still reads its
// response) and the write buffer cap (WriteBufferSize). With handlers on
// the pool it also turns the engine's sluice.WithLockOSThread off, unless
// opts turn it on: each loop yields to the pool's goroutines once a turn,
// and a loop locked to its thread would pass its P to another thread and
// back for it (on io_uring, whose loops are always locked, it does).
func (s *Server) Start(addr string, opts ...sluice.Option) (sluice.Engine, error) {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return sluice.Engine{}, ErrServerStarted
	}
	s.started = true
	s.mu.Unlock()
	s.handler = s.Handler
	if s.handler == nil {
		s.handler = http.DefaultServeMux
	}
	s.epoch = time.Now()
	s.refreshDate(time.Now())
	if s.Pool == nil && !s.Inline {
		p, err := pool.New(pool.WithSize(DefaultMaxHandlers))
		if err != nil {
			return sluice.Engine{}, err
		}
		s.Pool, s.ownPool = p, true
	}
	if !s.Inline {
		// Before the caller's options, which may say otherwise.
		opts = append([]sluice.Option{sluice.WithLockOSThread(false)}, opts...)
	}
	opts = append(opts, sluice.WithTicker(true), sluice.WithHalfClose(true),
		sluice.WithWriteBufferCap(s.writeMark()))
	eng, err := sluice.Start(&engineHandler{s: s}, addr, opts...)
	if err != nil && s.ownPool {
		s.Pool.Release()
	}
	return eng, err
}

// Serve is Start followed by the engine's Wait: it returns once the
// engine has stopped, or Start's error.
func (s *Server) Serve(addr string, opts ...sluice.Option) error {
	eng, err := s.Start(addr, opts...)
	if err != nil {
		return err
	}
	return eng.Wait()
}

// Shutdown stops the server gracefully: it closes the listeners, closes
// the connections waiting for a request, lets every request already
// begun be answered (with "Connection: close") and its connection close,
// and then stops the engine. Hijacked connections are not waited for:
// once the others are done they are reset, since the engine stops. When
// ctx ends first, what is left is reset and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	eng, loops := s.eng, s.loops
	s.mu.Unlock()
	if loops == nil {
		return sluice.ErrEngineStopped
	}
	s.shutting.Store(true)
	now, cancel := context.WithCancel(ctx)
	cancel()
	// Closing the listeners first tells each loop a stop has begun, so
	// the idle connections closed next do not linger for their peers.
	_ = eng.StopAccepting(now) // closes the listeners, waits for nothing
	for _, ls := range loops {
		_ = ls.loop.Execute(ls.closeIdle)
	}
	err := s.waitServed(ctx)
	if err == nil {
		for _, ls := range loops {
			_ = ls.loop.Execute(ls.killHijacked)
		}
		// What is left closes by itself: answers still being sent.
		err = eng.StopAccepting(ctx)
	}
	if err != nil {
		// ctx ended with requests in flight: they are reset, not closed
		// as if answered (Stop's first step, a graceful close, would
		// send their clients an end of stream).
		for id := range eng.ConnIDs() {
			_ = eng.Kill(id)
		}
	}
	if err2 := eng.Stop(ctx); err == nil {
		err = err2
	}
	return err
}

// waitServed waits until every connection left is hijacked, or ctx ends.
func (s *Server) waitServed(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.served.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func (s *Server) writeMark() int {
	if s.WriteBufferSize > 0 {
		return s.WriteBufferSize
	}
	return DefaultWriteBufferSize
}

func (s *Server) headLimit() int {
	n := s.MaxHeaderBytes
	if n <= 0 {
		n = http.DefaultMaxHeaderBytes
	}
	return n + 4096 // net/http's allowance for its buffered reader
}

// headTimeout is how long a request's head may take.
func (s *Server) headTimeout() time.Duration {
	if s.ReadHeaderTimeout > 0 {
		return s.ReadHeaderTimeout
	}
	return s.ReadTimeout
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return s.ReadTimeout
}

// bodyLimit is the most a request's body may hold.
func (s *Server) bodyLimit() int64 {
	switch {
	case s.MaxBodyBytes > 0:
		return s.MaxBodyBytes
	case s.Inline:
		return inlineBodyLimit
	}
	return 0
}

// inlineBodyLimit bounds the bodies held whole for inline handlers unless
// MaxBodyBytes says otherwise.
const inlineBodyLimit = 1 << 20

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// refreshDate formats the Date header once for every response of the
// second that now is in.
func (s *Server) refreshDate(now time.Time) {
	b := make([]byte, 0, len("Date: \r\n")+len(http.TimeFormat))
	b = append(b, "Date: "...)
	b = now.UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\n"...)
	s.date.Store(&b)
}

// engineHandler is the server's sluice.EventHandler.
type engineHandler struct {
	sluice.BuiltinEventEngine
	s *Server
}

func (e *engineHandler) OnBoot(eng sluice.Engine) sluice.Action {
	s := e.s
	loops := make([]*loopState, eng.NumLoops())
	for i := range loops {
		loops[i] = newLoopState(s, eng.Loop(i))
	}
	s.mu.Lock()
	s.eng, s.loops = eng, loops
	s.mu.Unlock()
	return sluice.None
}

func (e *engineHandler) OnShutdown(sluice.Engine) {
	s := e.s
	for _, ls := range s.loops {
		ls.alarm.Stop()
	}
	if s.ownPool {
		s.Pool.Release()
	}
}

// OnTick refreshes the Date header at the turn of each second.
func (e *engineHandler) OnTick() (time.Duration, sluice.Action) {
	now := time.Now()
	e.s.refreshDate(now)
	return time.Second - time.Duration(now.Nanosecond()) + time.Millisecond, sluice.None
}

func (e *engineHandler) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	s := e.s
	ls := s.loops[c.Loop().Index()]
	hc := &hconn{s: s, ls: ls, c: c, start: ls.now()}
	s.served.Add(1)
	ls.add(hc)
	c.SetContext(hc)
	if s.shutting.Load() {
		return nil, sluice.Close
	}
	if d := s.headTimeout(); d > 0 {
		ls.arm(hc, timerRead, d, readOpening)
	} else if d := s.idleTimeout(); d > 0 {
		ls.arm(hc, timerRead, d, readIdle)
	}
	return nil, sluice.None
}

func (e *engineHandler) OnTraffic(c sluice.Conn) sluice.Action {
	if hc, ok := c.Context().(*hconn); ok {
		hc.serve()
	}
	return sluice.None
}

func (e *engineHandler) OnHalfClose(c sluice.Conn) sluice.Action {
	if hc, ok := c.Context().(*hconn); ok {
		hc.peerDone()
	}
	return sluice.None
}

func (e *engineHandler) OnDrain(c sluice.Conn) sluice.Action {
	hc, ok := c.Context().(*hconn)
	if !ok {
		return sluice.None
	}
	if p := hc.drainWait; p != nil {
		hc.drainWait = nil
		p.drained()
	}
	hc.drained()
	return sluice.None
}

func (e *engineHandler) OnClose(c sluice.Conn, err error) sluice.Action {
	if hc, ok := c.Context().(*hconn); ok {
		hc.closed(err)
	}
	return sluice.None
}

// loopState is what the server keeps per event loop: its connections,
// by slot, for the timers and Shutdown, and its timing wheel.
type loopState struct {
	s     *Server
	loop  sluice.Loop
	conns []*hconn
	free  []int32

	// The wheel holds every connection's deadlines; the alarm, a runtime
	// timer set to the wheel's next one, posts advance to the loop.
	wheel   *wheel.Wheel
	alarm   *time.Timer
	due     int64 // when the alarm fires; math.MaxInt64 when it is off
	advance func()
	post    func()

	scratch []byte      // where bodies nobody reads are decoded to be dropped
	spares  []*exchange // finished exchanges, for the next runs (recycle)

	// yielding is set while a yield is posted to the loop: the handlers
	// handed to the pool in this turn run before the loop waits again.
	yielding bool
	yieldFn  func()
	handed   int // handlers handed to the pool since the loop last yielded

	lh  LoopHandler  // the Server's Handler, if it is one
	lsc *loopScratch // the LoopHandler's request and answer, once it has had one
}

func newLoopState(s *Server, loop sluice.Loop) *loopState {
	ls := &loopState{s: s, loop: loop, due: math.MaxInt64}
	ls.wheel = wheel.New(wheel.DefaultTick, ls.now())
	ls.advance = ls.run
	ls.post = func() { _ = loop.Execute(ls.advance) }
	ls.alarm = time.AfterFunc(time.Duration(math.MaxInt64), ls.post)
	ls.alarm.Stop()
	ls.yieldFn = ls.yield
	ls.lh, _ = s.handler.(LoopHandler)
	return ls
}

// yieldEvery is how many handlers a loop hands to the pool before it
// yields to them even in the middle of a turn. A turn that brings
// hundreds of requests (a thousand busy connections) would otherwise make
// as many of the pool's goroutines runnable at once, each on a stack of
// its own; yielded to every few dozen, the same few goroutines, the pool's
// most recently idle, serve them all, and stay in the CPU's caches.
const yieldEvery = 32

// handedOff notes that a handler was handed to the pool: once the loop
// has served what this turn brought, or yieldEvery handlers, it yields
// (yield).
func (ls *loopState) handedOff() {
	if ls.handed++; ls.handed >= yieldEvery {
		ls.handed = 0
		runtime.Gosched()
	}
	if !ls.yielding && ls.loop.Execute(ls.yieldFn) == nil {
		ls.yielding = true
	}
}

// yield lets the goroutines of the pool that this turn's requests made
// runnable run now, before the loop waits in the kernel. A loop that
// waits instead holds the Go scheduler's P in a system call: the
// handlers then wait for the runtime to take the P back (sysmon, 20µs to
// 10ms), or for the wait to end, and their answers must wake the loop.
// Yielded to, they run at once, and queue their answers on a loop that
// is awake: it writes them in its next turn, without a wake-up.
func (ls *loopState) yield() {
	ls.yielding, ls.handed = false, 0
	runtime.Gosched()
}

func (ls *loopState) now() int64 { return int64(time.Since(ls.s.epoch)) }

func (ls *loopState) add(hc *hconn) {
	if n := len(ls.free); n > 0 {
		hc.slot = ls.free[n-1]
		ls.free = ls.free[:n-1]
		ls.conns[hc.slot] = hc
		return
	}
	hc.slot = int32(len(ls.conns))
	ls.conns = append(ls.conns, hc)
}

func (ls *loopState) remove(hc *hconn) {
	ls.disarm(&hc.rtimer)
	ls.disarm(&hc.wtimer)
	ls.conns[hc.slot] = nil
	ls.free = append(ls.free, hc.slot)
}

// The two timers of a connection: the read side's (the wait for a
// request, its head, its body) and the write side's (WriteTimeout).
const (
	timerRead = iota
	timerWrite
)

// arm sets one of hc's timers to fire d from now, for the reason given.
func (ls *loopState) arm(hc *hconn, which int, d time.Duration, why readWait) {
	t := &hc.rtimer
	if which == timerWrite {
		t = &hc.wtimer
	} else {
		hc.wait = why
	}
	ls.disarm(t)
	at := ls.now() + int64(d)
	*t = ls.wheel.Insert(at, uint64(hc.slot)<<1|uint64(which))
	if at < ls.due {
		ls.due = at
		ls.alarm.Reset(d)
	}
}

func (ls *loopState) disarm(t *wheel.Timer) {
	if *t != (wheel.Timer{}) {
		ls.wheel.Cancel(*t)
		*t = wheel.Timer{}
	}
}

// run advances the wheel, on the loop, when the alarm has gone off.
func (ls *loopState) run() {
	now := ls.now()
	ls.wheel.Advance(now, ls.fire)
	ls.due = math.MaxInt64
	if next, ok := ls.wheel.Next(); ok {
		ls.due = max(next, now+int64(time.Millisecond))
		ls.alarm.Reset(time.Duration(ls.due - now))
	}
}

func (ls *loopState) fire(handle uint64) {
	hc := ls.conns[handle>>1]
	if handle&1 == timerWrite {
		hc.wtimer = wheel.Timer{}
		hc.writeTimedOut()
		return
	}
	hc.rtimer = wheel.Timer{}
	hc.readTimedOut()
}

// killHijacked resets the loop's hijacked connections, as Shutdown ends.
func (ls *loopState) killHijacked() {
	for _, hc := range ls.conns {
		if hc != nil && hc.hj != nil {
			_ = ls.s.eng.Kill(hc.c.ID())
		}
	}
}

// closeIdle closes the loop's connections that wait for a request, as
// Shutdown begins.
func (ls *loopState) closeIdle() {
	for _, hc := range ls.conns {
		if hc != nil && hc.idle() {
			_ = hc.c.Close()
		}
	}
}
