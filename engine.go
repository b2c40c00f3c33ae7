package sluice

import (
	"context"
	"crypto/tls"
	"fmt"
	"iter"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/kill"
)

// Engine is a handle on a running engine, passed to OnBoot and returned
// by Start. Its methods are safe from any goroutine.
type Engine struct {
	e *engine
}

// Stop stops the engine gracefully: it stops accepting at once, closes
// every connection as the Close action does (work still running in a pool
// for one is cut off: its AsyncWrite fails), calls OnShutdown and returns.
// A connection sends what it has queued first, and, unless it is idle,
// lingers until its peer's end of stream (WithLingeringClose). A peer that
// never reads holds a connection open until ctx ends, or until a write
// timeout (WithWriteTimeout) closes it. When ctx ends first it resets what is
// left (its peers see a TCP reset, OnClose gets ErrEngineStopped), waits
// for the loops, and returns ctx's error. Call it from outside the
// handler's callbacks; inside them, return Shutdown instead.
func (eng Engine) Stop(ctx context.Context) error {
	e := eng.e
	if e == nil {
		return ErrEngineStopped
	}
	e.shutdown()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		e.post(taskForce)
		<-e.done
		return ctx.Err()
	}
}

// StopAccepting closes the engine's listeners at once and waits, until
// ctx ends, for every connection to close by itself: the first half of a
// stop that lets each exchange under way finish, as a proxy or a server
// behind a balancer wants before it is replaced. The engine keeps
// serving, dialing and enrolling meanwhile. It returns nil once no
// connection is left, or ctx's error; either way the listeners stay
// closed, and Stop ends the rest. The handler can hasten the connections
// left, for instance by closing each once it has answered what it has
// (Engine.ConnIDs lists them): from now on a connection closed with
// nothing unread and nothing unacknowledged does not linger.
func (eng Engine) StopAccepting(ctx context.Context) error {
	e := eng.e
	if e == nil {
		return ErrEngineStopped
	}
	for _, l := range e.loops {
		if l.post(newTask(taskStopAccepting, nil)) != nil {
			return ErrEngineStopped
		}
	}
	// The loops keep no count to wait on, so look again now and then: a
	// stop is no hot path.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for e.live() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.done:
			return nil
		case <-tick.C:
		}
	}
	return nil
}

// Kill resets the connection with the given ID (Conn.ID): its peer sees a
// TCP reset, its queued output is dropped, and OnClose receives ErrKilled.
// Kill marks the connection and wakes its loop, which resets it, and
// returns without waiting for that. It returns ErrConnClosed when id names
// no live connection: one that has closed, or is already killed.
func (eng Engine) Kill(id uint64) error {
	e := eng.e
	if e == nil {
		return ErrEngineStopped
	}
	owner, fd, ok := e.table.Kill(kill.ConnID(id))
	if !ok {
		return ErrConnClosed
	}
	t := newTask(taskKill, nil)
	t.fd, t.id = int(fd), id
	return e.loops[owner].post(t)
}

// ConnIDs returns an iterator over the IDs of the engine's connections,
// for Kill. It stops no loop and locks nothing: a connection open
// throughout the iteration is visited once, one that opens or closes
// meanwhile may or may not be. It passes over every slot of the engine's
// connection table (WithMaxConnections), live or not.
func (eng Engine) ConnIDs() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		if eng.e == nil {
			return
		}
		for id := range eng.e.table.Range {
			if !yield(uint64(id)) {
				return
			}
		}
	}
}

// Stats returns the engine's counters: connections open, admitted and
// rejected by each limit, and closed by each deadline or by Kill.
func (eng Engine) Stats() Stats {
	if eng.e == nil {
		return Stats{}
	}
	return eng.e.stats()
}

// CountConnections returns how many connections are open now, dials
// still connecting included.
func (eng Engine) CountConnections() int {
	if eng.e == nil {
		return 0
	}
	n := int64(0)
	for _, l := range eng.e.loops {
		n += l.count.Load()
	}
	return int(n)
}

// Addrs returns the addresses the engine listens on, Run's first, then
// WithListener's in order; with port 0 they tell the port the kernel
// chose. An engine started with no address lists none.
func (eng Engine) Addrs() []net.Addr {
	if eng.e == nil {
		return nil
	}
	return slices.Clone(eng.e.addrs)
}

// live counts the connections open and those on their way to a loop that
// has yet to open them.
func (e *engine) live() int64 {
	n := int64(0)
	for _, l := range e.loops {
		n += l.count.Load() + l.handed.Load()
	}
	return n
}

type engine struct {
	handler    EventHandler
	opts       options
	sock       socket.Options
	addrs      []net.Addr     // one per listening address, in order
	drain      DrainHandler   // the handler, if it is one
	refusal    RefusalHandler // the handler, if it is one
	loops      []*eventloop
	rr         atomic.Uint32 // next loop for RoundRobin
	table      *kill.Table   // every admitted connection, by ID
	sources    *kill.Sources // nil without a per-source limit
	epoch      time.Time     // the loops' clocks count from here
	inPool     bytebufferpool.Pool
	outPool    bytebufferpool.Pool
	mem        memory       // inbound and outbound bytes held, large buffers let go (memory.go, budget.go)
	handshakes atomic.Int64 // TLS handshakes under way (tls.go)
	lnMu       sync.Mutex   // held while listeners close or are copied (DupListeners)
	duped      atomic.Bool  // a copy of the listeners was handed out: they are shared
	unlink     []string     // the unix sockets' files this engine made, removed once it stops
	stopOnce   sync.Once
	stopping   context.Context // ends as the engine begins to stop: names being resolved for dials give up
	stopped    context.CancelFunc
	done       chan struct{}
	force      *time.Timer // resets what a stop the handler asked for left (shutdownAsked)
}

// Run listens on addr, calls OnBoot, and serves connections with the
// handler until the engine stops; it returns when every connection has
// closed and OnShutdown has returned. addr is "tcp://host:port" (or tcp4,
// tcp6), "udp://host:port" (or udp4, udp6: datagrams, see PacketConn) or
// "unix:///path/to.sock"; an address without a scheme is TCP.
// Port 0 picks a free port, which Engine.Addrs reports. WithListener adds
// more. With addr empty and no WithListener, the engine listens on
// nothing and serves the connections it dials or is handed
// (Engine.Dial, Engine.Enroll): a client, or a load generator. Start is
// Run that returns once the engine has booted.
func Run(handler EventHandler, addr string, opts ...Option) error {
	e, err := newEngine(handler, addr, opts)
	if err != nil {
		return err
	}
	e.run(nil)
	return nil
}

// Start is Run that does not block: it opens the listeners, calls OnBoot,
// and returns the engine once OnBoot has returned, serving on goroutines
// of its own, as a program that also does other work, or only dials,
// wants. An address it cannot listen on, or an option it cannot apply, is
// returned at once, as Run returns it. Engine.Wait, or Engine.Done, tells
// when the engine has stopped; Engine.Stop stops it. If OnBoot returns
// Shutdown, Start still returns the engine, already stopping.
func Start(handler EventHandler, addr string, opts ...Option) (Engine, error) {
	e, err := newEngine(handler, addr, opts)
	if err != nil {
		return Engine{}, err
	}
	booted := make(chan struct{})
	go e.run(booted)
	<-booted
	return Engine{e}, nil
}

// Wait blocks until the engine has stopped, every connection has closed
// and OnShutdown has returned, and returns what Run would have: nil. The
// zero Engine, which names none, returns ErrEngineStopped at once. Call
// it from outside the handler's callbacks, which it would wait for.
func (eng Engine) Wait() error {
	if eng.e == nil {
		return ErrEngineStopped
	}
	<-eng.e.done
	return nil
}

// Done returns a channel that is closed once the engine has stopped,
// every connection has closed and OnShutdown has returned: Wait, for a
// select. For the zero Engine it is closed already.
func (eng Engine) Done() <-chan struct{} {
	if eng.e == nil {
		return closedChan
	}
	return eng.e.done
}

// closedChan is Done's channel for no engine.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// newEngine makes the engine the options describe and opens its loops and
// listeners, ready for run.
func newEngine(handler EventHandler, addr string, opts []Option) (*engine, error) {
	e := &engine{handler: handler, opts: defaultOptions(), epoch: time.Now(), done: make(chan struct{})}
	e.stopping, e.stopped = context.WithCancel(context.Background())
	e.drain, _ = handler.(DrainHandler)
	e.refusal, _ = handler.(RefusalHandler)
	for _, opt := range opts {
		opt(&e.opts)
	}
	o := &e.opts
	switch {
	case !o.backpressure:
		o.pauseMark = math.MaxInt
	case o.pauseMark == 0:
		o.pauseMark = DefaultBackpressureMark
		if o.maxOutbound > 0 {
			o.pauseMark = min(o.pauseMark, max(o.maxOutbound/2, 1))
		}
	}
	if o.inBudget < 0 {
		o.inBudget = defaultBudget()
	}
	if o.outBudget < 0 {
		o.outBudget = defaultBudget()
	}
	specs := o.listen(addr)
	defer func() {
		for i := range specs {
			specs[i].release()
		}
	}()
	if err := o.choosePoller(); err != nil {
		e.stopped()
		return nil, err
	}
	e.table = kill.New(tableCapacity(o))
	if o.maxConnsPerSource > 0 {
		e.sources = new(kill.Sources)
	}
	e.sock = socket.Options{
		ReusePort: o.reusePort,
		NoDelay:   o.noDelay,
		KeepAlive: o.keepAlive,
		RecvBuf:   o.recvBuf,
		SendBuf:   o.sendBuf,
	}
	if err := e.start(specs); err != nil {
		e.release()
		e.stopped()
		return nil, err
	}
	return e, nil
}

// run serves until the engine stops: it starts the loops, calls OnBoot,
// closes booted (when not nil) once OnBoot has returned, and waits for
// the loops; then it calls OnShutdown and closes done.
func (e *engine) run(booted chan<- struct{}) {
	defer e.stopped()
	defer close(e.done)
	e.serve(func() {
		if e.handler.OnBoot(Engine{e}) == Shutdown {
			e.shutdownAsked()
		}
		if booted != nil {
			close(booted)
		}
	})
	if e.force != nil {
		e.force.Stop()
	}
	e.handler.OnShutdown(Engine{e})
}

// start opens the loops and the listeners.
func (e *engine) start(specs []listenSpec) error {
	for i := range e.opts.loops {
		l, err := newEventloop(e, i)
		if err != nil {
			return err
		}
		e.loops = append(e.loops, l)
	}
	for i := range specs {
		var err error
		if specs[i].inherited() {
			err = e.inherit(&specs[i], i, i)
		} else {
			err = e.listen(specs[i], i, e.loops[i%len(e.loops)])
		}
		if err != nil {
			return err
		}
	}
	// The first tick is due at once: its time, zero, is the epoch.
	e.loops[0].ticking = e.opts.ticker
	return nil
}

// listen opens the listener s asks for, the order-th: one shared by all
// loops, owned by first, or one SO_REUSEPORT listener per loop.
func (e *engine) listen(s listenSpec, order int, first *eventloop) error {
	network, address, err := parseAddr(s.addr)
	if err != nil {
		return err
	}
	perLoop := e.opts.reusePort && network != "unix" && socket.ReusePort
	if network == "unix" {
		removeStaleSocket(address)
		e.unlink = append(e.unlink, address)
	}
	loops := []*eventloop{first}
	if perLoop {
		loops = e.loops
	}
	if isPacket(network) {
		return e.listenPackets(s, network, address, loops)
	}
	for _, l := range loops {
		ln, err := listen(network, address, e.sock)
		if err != nil {
			return err
		}
		ln.perLoop, ln.proxy, ln.tls = perLoop, s.proxy, tlsConfig(s.tls)
		ln.name, ln.order = s.addr, order
		// The loop's driver watches it once the loop starts.
		l.listeners = append(l.listeners, ln)
		if l == loops[0] {
			e.addrs = append(e.addrs, ln.addr)
			// Every further SO_REUSEPORT listener binds the port the first got.
			address = ln.addr.String()
		}
	}
	return nil
}

// listenerOf returns the address of the listener whose socket has the
// local address local.
func (e *engine) listenerOf(local net.Addr) net.Addr {
	switch la := local.(type) {
	case *net.TCPAddr:
		ap := la.AddrPort()
		for _, a := range e.addrs {
			ta, ok := a.(*net.TCPAddr)
			if !ok || ta.AddrPort().Port() != ap.Port() {
				continue
			}
			if ip := ta.AddrPort().Addr(); ip.IsUnspecified() || ip.Unmap() == ap.Addr().Unmap() {
				return a
			}
		}
	case *net.UnixAddr:
		for _, a := range e.addrs {
			if ua, ok := a.(*net.UnixAddr); ok && ua.Name == la.Name {
				return a
			}
		}
	}
	return nil
}

// serve starts the loops, calls boot once every loop is ready on its
// thread (an io_uring loop has made its ring), and waits for the loops.
func (e *engine) serve(boot func()) {
	var ready, wg sync.WaitGroup
	booted := make(chan struct{})
	ready.Add(len(e.loops))
	for _, l := range e.loops {
		wg.Go(func() { l.run(ready.Done, booted) })
	}
	stopHelpers := e.startHelpers()
	ready.Wait()
	boot()
	close(booted)
	wg.Wait()
	stopHelpers()
	if !e.duped.Load() {
		// A process the listeners were handed to serves them still.
		for _, path := range e.unlink {
			os.Remove(path)
		}
	}
}

// release closes what start opened when it failed half way.
func (e *engine) release() {
	for _, l := range e.loops {
		for _, ln := range l.listeners {
			ln.close()
		}
		for _, u := range l.packets.socks {
			if u != nil {
				socket.Close(u.fd)
			}
		}
		l.drv.close()
	}
}

// shutdown asks every loop to stop gracefully; it does not wait.
func (e *engine) shutdown() {
	e.stopOnce.Do(func() {
		e.stopped()
		e.post(taskStop)
	})
}

// shutdownAsked stops the engine as the handler asked, by returning
// Shutdown: gracefully, as Stop does, for at most WithShutdownTimeout,
// after which what is left is reset, as when Stop's context ends. A stop
// already under way, which Stop's context bounds, keeps its bound.
func (e *engine) shutdownAsked() {
	e.stopOnce.Do(func() {
		e.stopped()
		e.post(taskStop)
		if d := e.opts.shutdownTimeout; d > 0 {
			e.force = time.AfterFunc(d, func() { e.post(taskForce) })
		}
	})
}

// post sends a task of the kind to every loop still running.
func (e *engine) post(kind taskKind) {
	for _, l := range e.loops {
		l.post(newTask(kind, nil))
	}
}

// pick chooses the loop for a connection accepted from remote on a shared
// listener.
func (e *engine) pick(remote netip.AddrPort) *eventloop {
	n := len(e.loops)
	if n == 1 {
		return e.loops[0]
	}
	switch e.opts.lb {
	case LeastConnections:
		best := e.loops[0]
		for _, l := range e.loops[1:] {
			if l.load() < best.load() {
				best = l
			}
		}
		return best
	case SourceAddrHash:
		return e.loops[hashAddr(remote.Addr().As16())%uint32(n)]
	default:
		return e.loops[e.rr.Add(1)%uint32(n)]
	}
}

// hashAddr is FNV-1a over an IP address.
func hashAddr(ip [16]byte) uint32 {
	h := uint32(2166136261)
	for _, b := range ip {
		h = (h ^ uint32(b)) * 16777619
	}
	return h
}

func parseAddr(addr string) (network, address string, err error) {
	network, address, ok := strings.Cut(addr, "://")
	if !ok {
		network, address = "tcp", addr
	}
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	case "unix":
		if address == "" {
			return "", "", fmt.Errorf("%w: %q: no socket path", ErrInvalidAddr, addr)
		}
	default:
		return "", "", fmt.Errorf("%w: %q: scheme %q is not tcp, tcp4, tcp6, udp, udp4, udp6 or unix", ErrInvalidAddr, addr, network)
	}
	return network, address, nil
}

// removeStaleSocket removes a socket file left by a server that did not
// stop cleanly, so that bind can succeed. Anything else at the path stays.
func removeStaleSocket(path string) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return
	}
	// A server still listening there answers; leave its socket alone, and
	// let bind fail with EADDRINUSE.
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return
	}
	os.Remove(path)
}

type listener struct {
	fd      int
	addr    net.Addr
	name    string // what DupListeners names its copy
	order   int    // the order it was opened in, for DupListeners; a per-loop set shares one
	unix    bool
	shared  bool        // handed over by another process, which may serve it too
	perLoop bool        // one of a set, one per loop: each keeps what it accepts
	proxy   ProxyMode   // of the connections it accepts
	tls     *tls.Config // of the connections it accepts; nil: plain
	ds      driverSlot  // what the loop's driver keeps for it
}

func listen(network, address string, o socket.Options) (*listener, error) {
	fd, addr, err := socket.Listen(network, address, o)
	if err != nil {
		return nil, fmt.Errorf("sluice: listen %s %s: %w", network, address, err)
	}
	return &listener{fd: fd, addr: addr, unix: network == "unix"}, nil
}

func (ln *listener) close() {
	if ln.fd >= 0 {
		socket.Close(ln.fd)
		ln.fd = -1
	}
}
