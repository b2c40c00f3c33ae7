package sluice

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/kill"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/wheel"
)

// eventloop owns a driver and every connection registered with it. Only
// its own goroutine touches its connections; other goroutines reach them
// through tasks.
type eventloop struct {
	idx       int
	eng       *engine
	drv       driver      // how it meets the kernel (driver.go)
	listeners []*listener // the listeners this loop accepts on
	conns     []*conn     // by descriptor
	count     atomic.Int64
	handed    atomic.Int64 // accepted by another loop for this one, not yet opened
	resolving atomic.Int64 // dials of this loop whose host names are being looked up
	buf       []byte       // every read lands here first
	wbuf      []byte       // output of the running callback, sent when it returns
	plain     []byte       // TLS records' plaintext lands here first (tls.go)
	cur       *conn        // whose callback is running
	written   []*conn      // written to by the running callback, not its own: sendWritten's queue
	late      *conn        // closed inside its own callback; OnClose waits for it to return
	lateErr   error
	resumed   []*conn // read again with bytes held from while it was not: handOver's queue
	drained   []*conn // output drained below the low-water mark: notifyDrained's queue
	tid       int     // the thread the loop is locked to, if it is (callerLoop)
	tasks     taskQueue
	sleeping  atomic.Bool
	draining  bool
	stopping  bool // its listeners closed for a stop: settled closes need not linger
	counts    counters
	packets   packets  // its UDP sockets (udp.go)
	sessions  sessions // its UDP listeners' peers' sessions (udp_session.go)
	held      heldWait // whether its waits are held (heldwait.go)

	// Time and deadlines (deadline.go); the wheel is nil until needed.
	wheel     *wheel.Wheel
	fire      func(handle uint64) // expire, bound once so Advance allocates nothing
	clock     int64               // the time read this iteration, when clockRead
	clockRead bool
	yielded   int64 // when the loop last passed through the scheduler
	acceptAt  int64 // when paused listeners are watched again; zero: not paused
	ticking   bool  // this loop runs the ticker
	tickAt    int64 // when OnTick is next due
}

func newEventloop(e *engine, idx int) (*eventloop, error) {
	l := &eventloop{
		idx: idx,
		eng: e,
		buf: make([]byte, e.opts.readBufferCap),
	}
	drv, err := newDriver(l)
	if err != nil {
		return nil, err
	}
	l.drv = drv
	l.fire = l.expire
	if e.opts.timed() {
		l.timers()
	}
	return l, nil
}

// run readies the loop on its own thread, calls ready, waits for booted
// to close (OnBoot has returned), and serves until the loop has drained.
func (l *eventloop) run(ready func(), booted <-chan struct{}) {
	if l.eng.opts.lockOSThread || l.drv.pinned() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		l.tid = threadID()
	}
	l.held.init(len(l.eng.loops))
	drv, err := l.drv.start()
	l.drv = drv
	if err == nil {
		err = l.startPackets()
	}
	if err != nil {
		l.eng.opts.logger.Error("sluice: the loop cannot watch its sockets; stopping", "loop", l.idx, "err", err)
		l.draining = true // nothing to serve with
	}
	ready()
	<-booted
	if err != nil {
		// Only now: every loop has its driver, which a stop wakes.
		l.eng.shutdown()
	}
	l.serve()
	l.stop()
}

// serve runs the loop's turns until it has drained.
func (l *eventloop) serve() {
	for l.serving() {
		if err := l.drv.turn(); err != nil {
			l.eng.opts.logger.Error("sluice: waiting for the kernel failed; closing the loop's connections", "loop", l.idx, "err", err)
			l.eng.shutdown()
			l.closeAll(err)
			break
		}
		l.runTasks(l.tasks.take())
		l.handOverAll()
		l.notifyDrained()
		l.runTimers()
		l.tick()
		l.resumeAccepts()
	}
}

// serving reports whether the loop has more to do: it is not stopping, or
// still holds connections, or dials that will reach it.
func (l *eventloop) serving() bool {
	return !l.draining || l.count.Load() > 0 || l.resolving.Load() > 0
}

// stop ends a loop that has drained or failed.
func (l *eventloop) stop() {
	// Whatever is posted from now on fails with ErrEngineStopped; what came
	// before still runs, against closed connections, and dials fail.
	l.draining = true
	l.runTasks(l.tasks.close())
	l.eng.lnMu.Lock()
	for _, ln := range l.listeners {
		ln.close()
	}
	l.eng.lnMu.Unlock()
	l.closePackets(true, ErrEngineStopped)
	l.drv.close()
}

// sleep readies the loop to block in its driver's turn and returns how
// long it may, zero when a task is already waiting, and whether the wait
// is held (heldwait.go), where the driver can hold it (canHold). The sleeping
// flag tells posters whether the loop must be woken: it is set before the
// queue is checked one last time, so a task pushed after that check
// always finds it set and wakes the loop. Goroutines that the loop runs
// before a held wait post to it before the flag is set, so their tasks
// are found and cost no wake-up.
func (l *eventloop) sleep(canHold bool) (time.Duration, bool) {
	timeout := l.timeout()
	held := false
	if timeout != 0 {
		l.yield()
		held = canHold && l.holds()
	}
	l.sleeping.Store(true)
	if l.tasks.pending() || len(l.resumed) > 0 || len(l.drained) > 0 {
		l.sleeping.Store(false)
		return 0, false
	}
	l.held.capped = held && (timeout < 0 || timeout > heldMost)
	if l.held.capped {
		timeout = heldMost
	}
	return timeout, held
}

// awake follows a wait, which brought nothing if empty: posters wake the
// loop no more, and the clock is read again when next needed.
func (l *eventloop) awake(empty bool) {
	l.sleeping.Store(false)
	l.clockRead = false
	l.held.quiet = l.held.capped && empty
	l.held.capped = false
}

// yieldEvery is how often, at most, a loop about to block passes through
// the Go scheduler; it must stay under the runtime's 10ms preemption slice.
const yieldEvery = 5 * time.Millisecond

// yield passes through the Go scheduler once per yieldEvery, just before
// the loop blocks. The runtime's sysmon takes a goroutine that has not been
// rescheduled for 10ms to be running too long: it preempts it and retakes
// its P from the system call, and every retake sets sysmon polling every
// 20µs, retaking the P of each wait and waking a spare thread to hold it.
// A loop never reschedules by itself, so without this it keeps sysmon in
// that mode under steady load; measured at 30,000 paced round trips per
// second, that cost 8% more CPU per round trip and 4,000 extra sysmon
// wake-ups a second. One Gosched every 5ms keeps sysmon asleep.
func (l *eventloop) yield() {
	now := l.now()
	if now-l.yielded < int64(yieldEvery) {
		return
	}
	l.yielded = now
	runtime.Gosched()
	l.held.count(len(l.eng.loops))
}

// post hands t to the loop from any goroutine, waking the loop only if it
// sleeps.
func (l *eventloop) post(t *task) error {
	if !l.tasks.push(t) {
		t.free()
		return ErrEngineStopped
	}
	if l.sleeping.CompareAndSwap(true, false) {
		if err := l.drv.wake(); err != nil {
			l.eng.opts.logger.Error("sluice: waking a loop failed", "loop", l.idx, "err", err)
		}
	}
	return nil
}

// acceptFailed pauses accepts when out of descriptors or memory, and
// logs failures that are not the peer's or the moment's.
func (l *eventloop) acceptFailed(ln *listener, err error) {
	switch err {
	case syscall.EAGAIN, syscall.ECONNABORTED, syscall.EINTR, syscall.ECANCELED:
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM:
		l.counts.add(countRejectedNoDescriptors)
		l.pauseAccepts(err)
	default:
		l.eng.opts.logger.Warn("sluice: accept failed", "addr", ln.addr, "err", err)
	}
}

// accepted admits fd, which ln accepted from remote (zero for a unix
// socket), and opens it on its loop.
func (l *eventloop) accepted(ln *listener, fd int, remote netip.AddrPort) {
	owner := l
	if !ln.perLoop {
		owner = l.eng.pick(remote)
	}
	id, flags, err := l.admit(owner, fd, remote, ln.proxy != ProxyOff)
	if err != nil {
		l.turnAway(fd, remote, err)
		socket.Close(fd)
		return
	}
	c := &conn{fd: fd, remote: remote, loop: owner, id: uint64(id), flags: flags}
	switch ln.proxy {
	case ProxyOptional:
		c.flags |= flagProxyOptional
		fallthrough
	case ProxyRequired:
		c.state = stateHeader
	}
	if ln.tls != nil {
		c.extra().sec = &tlsSession{cfg: ln.tls}
		if c.state != stateHeader {
			c.state = stateHandshake // begun once the owning loop opens it
		}
	}
	if l.eng.opts.halfClose {
		c.flags |= flagHalfClose
	}
	if err := socket.Configure(fd, ln.unix, l.eng.sock); err != nil {
		l.eng.opts.logger.Warn("sluice: configuring an accepted socket failed", "err", err)
		l.drop(c)
		return
	}
	if c.loop == l {
		l.open(c, false)
		return
	}
	c.loop.handed.Add(1)
	t := newTask(taskOpen, c)
	if c.loop.post(t) != nil {
		c.loop.handed.Add(-1)
		l.drop(c)
	}
}

// load is how many connections the loop has, counting those handed to it
// and not yet opened, so that LeastConnections spreads a burst of accepts
// that arrives faster than the loops open them.
func (l *eventloop) load() int64 {
	return l.count.Load() + l.handed.Load()
}

// acceptPause is how long a loop stops accepting when the process or the
// kernel is out of descriptors or memory.
const acceptPause = 100 * time.Millisecond

// pauseAccepts stops watching the loop's listeners for acceptPause. Out of
// descriptors, a level-triggered listener stays readable and every accept
// fails, so without the pause the loop would spin on it, logging each time.
func (l *eventloop) pauseAccepts(err error) {
	l.eng.opts.logger.Warn("sluice: accept failed; pausing accepts", "err", err, "for", acceptPause)
	for _, ln := range l.listeners {
		if err := l.drv.modify(ln.fd, poller.Readable, 0); err != nil {
			l.eng.opts.logger.Error("sluice: pausing a listener failed", "addr", ln.addr, "err", err)
		}
	}
	l.acceptAt = l.now() + int64(acceptPause)
}

// resumeAccepts watches the listeners again once a pause is over.
func (l *eventloop) resumeAccepts() {
	if l.acceptAt == 0 || l.now() < l.acceptAt {
		return
	}
	l.acceptAt = 0
	for _, ln := range l.listeners {
		if err := l.drv.modify(ln.fd, 0, poller.Readable); err != nil {
			l.eng.opts.logger.Error("sluice: resuming a listener failed", "addr", ln.addr, "err", err)
		}
	}
}

// drop closes c, admitted but never opened, and forgets it. A connection
// killed before it opened is reset.
func (l *eventloop) drop(c *conn) {
	if l.eng.table.Killed(kill.ConnID(c.id)) {
		socket.SetLingerZero(c.fd)
		l.counts.add(countKilled)
	}
	socket.Close(c.fd)
	l.eng.forget(c)
}

// open registers a connection this loop now owns and calls OnOpen, or,
// WithProxyProtocol, starts reading its header (proxy.go). One that was
// killed, or arrives while the loop drains, is dropped unopened. handed
// says another loop accepted it and counts it in l.handed until now.
func (l *eventloop) open(c *conn, handed bool) {
	if l.draining || l.eng.table.Killed(kill.ConnID(c.id)) {
		l.counted(handed, false)
		l.drop(c)
		return
	}
	l.place(c)
	if c.state == stateOpen && l.drv.defersWatch() {
		// Registered by its first watch, once OnOpen has said what it is
		// watched for.
		c.events = unwatched
		l.counted(handed, true)
		l.start(c)
		return
	}
	if err := l.drv.add(c.fd, poller.Readable); err != nil {
		l.conns[c.fd] = nil
		l.eng.opts.logger.Warn("sluice: registering a connection failed", "err", err)
		l.counted(handed, false)
		l.drop(c)
		return
	}
	c.events = poller.Readable
	l.counted(handed, true)
	switch c.state {
	case stateHeader:
		l.awaitHeader(c)
	case stateHandshake:
		l.beginHandshake(c)
	default:
		l.start(c)
	}
}

// counted counts a connection among the loop's, when kept, and stops
// counting it as handed, in that order so that the loop's load is never
// short of it, and before any callback runs: a client that connects again
// once OnOpen has run must find this loop's load counting the first
// connection once, or LeastConnections sends it elsewhere.
func (l *eventloop) counted(handed, kept bool) {
	if kept {
		l.count.Add(1)
	}
	if handed {
		l.handed.Add(-1)
	}
}

// unwatched is what c.events holds for a connection accepted, where the
// driver defers its registration, until its first watch registers it: no
// readiness, and unlike any set of it.
const unwatched poller.Event = 1 << 7

// place puts c in the loop's table of connections by descriptor.
func (l *eventloop) place(c *conn) {
	if c.fd >= len(l.conns) {
		// The table only grows, so what lies past its length is nil.
		l.conns = slices.Grow(l.conns, c.fd+1-len(l.conns))[:c.fd+1]
	}
	l.conns[c.fd] = c
}

// start arms c's idle timeout and calls OnOpen.
func (l *eventloop) start(c *conn) {
	if d := l.eng.opts.idleTimeout; d > 0 {
		l.setIdleTimeout(c, d)
	}
	l.cur = c
	out, a := l.onOpen(c)
	if len(out) > 0 && c.state != stateClosed {
		if _, err := c.Write(out); errors.Is(err, ErrOutboundFull) {
			l.closeConn(c, errOpenOut)
		}
	}
	l.finish(c, a)
}

// errOpenOut closes a connection whose OnOpen returned more output than
// its bound on queued output (WithMaxOutbound) takes: the handler has no
// other way to hear that its greeting was refused, and its peer would
// read what follows as if it came first.
var errOpenOut = fmt.Errorf("sluice: OnOpen's out refused: %w", ErrOutboundFull)

// arrived hands c the bytes p its driver just read or received: every
// byte from the kernel enters the loop here. Bytes that arrive while c is
// not read, as a driver that receives without being asked may bring them,
// are held for when it reads again, as the kernel would have kept them; a
// connection closing takes no more input, and one lingering drops it.
func (l *eventloop) arrived(c *conn, p []byte) {
	l.counts.addN(countBytesIn, len(p))
	switch {
	case c.state == stateHeader:
		l.headerReceived(c, p)
	case c.state == stateHandshake:
		l.handshakeArrived(c, p)
	case c.state == stateLinger:
		l.discarded(c, p)
	case c.state != stateOpen:
		if l.eng.opts.wipe {
			clear(p)
		}
	case c.ext != nil && c.ext.sec != nil:
		l.tlsArrived(c, p)
	case c.events&poller.Readable == 0:
		l.hold(c, p)
	default:
		l.received(c, p)
	}
}

// received hands c the bytes p just read.
func (l *eventloop) received(c *conn, p []byte) {
	l.active(c)
	c.feed(p)
	l.traffic(c)
	if l.eng.opts.wipe {
		clear(p)
	}
}

// hold keeps p, received for c while c is not read, until handOver. A
// driver that receives without being asked can bring several buffers'
// worth in the turn that paused c; nothing more is received until they
// are handed over, and they count against WithMaxInboundBuffered like
// any byte the engine holds.
func (l *eventloop) hold(c *conn, p []byte) {
	c.feed(p)
	c.keepUnread()
	c.flags |= flagHeld
	if l.eng.opts.wipe {
		clear(p)
	}
	if limit := l.eng.opts.maxInbound; limit > 0 && len(c.buf) > limit {
		l.counts.add(countInboundTooLarge)
		l.closeConn(c, ErrInboundTooLarge)
	}
}

// readFailed closes c after a read failed, with the error wrapped as the
// standard library wraps it (an *os.SyscallError of "read"). Lingering, c
// has sent all it had and its close was asked for, so the error only ends
// the wait.
func (l *eventloop) readFailed(c *conn, err error) {
	if c.state == stateLinger {
		l.closeConn(c, nil)
		return
	}
	l.socketFailed(c, os.NewSyscallError("read", err))
}

// socketFailed closes c, whose socket failed under it with err. A TLS
// handshake under way has failed so, as one whose peer ended the stream
// has: counted and reported (tlsFailed).
func (l *eventloop) socketFailed(c *conn, err error) {
	if c.state == stateHandshake {
		l.tlsFailed(c, err, countTLSHandshakeFailures)
		return
	}
	l.closeConn(c, err)
}

// peerClosed handles the end of c's stream: its peer sends no more. It
// acts on it (endOfInput) at once, unless c is paused, which only a
// driver that receives without being asked reads through, holding bytes
// it received ahead of the handler or none, or holds bytes queued to be
// handed over again (resume): then only once c is read again and they
// are handed over (handOver), as a driver that reads only when asked
// reads the end of the stream only then.
func (l *eventloop) peerClosed(c *conn) {
	if c.ext != nil && l.tlsPeerClosed(c) {
		return
	}
	c.flags |= flagEOF
	switch {
	case c.state == stateLinger:
		l.closeConn(c, nil)
	case c.state == stateOpen && (c.events&poller.Readable == 0 || c.flags&flagHeld != 0):
		// Whatever the handler does with the bytes meanwhile, resuming
		// hands over what is left and acts on the end (watch, handOver).
		c.flags |= flagHeld
	case l.endWaits(c):
	default:
		l.endOfInput(c)
	}
}

// endWaits holds back the end of c's stream while the handler has left
// bytes unread with output queued: it may have stopped to bound its
// output, as a pipeline of large answers does, and waits to be called
// again once the output drains. c is not read meanwhile; once its output
// has drained, the bytes are offered again (watch, handOver), and the end
// is acted on when the handler takes no more of them.
func (l *eventloop) endWaits(c *conn) bool {
	if c.state != stateOpen || len(c.buf) == 0 || c.pending() == 0 && !l.drv.sending(c) {
		return false
	}
	c.flags |= flagEndWaits | flagHeld
	l.watch(c)
	return true
}

// endOfInput acts on the end of c's stream once every byte before it has
// been offered to the handler: c closes gracefully, or in half-close mode
// stops being read and the handler is told, whether or not c's own write
// side is shut down (CloseWrite): when its output was still queued at
// that moment must not decide whether the handler hears. c closes once
// both sides are done: here, if its write side is shut down already,
// else when it is (shutWrite).
func (l *eventloop) endOfInput(c *conn) {
	if c.state != stateOpen || c.flags&flagHalfClose == 0 {
		c.flags |= flagByPeer
		l.closeGraceful(c)
		return
	}
	c.flags |= flagInputEnded
	l.watch(c) // reading stops
	if h, ok := l.eng.handler.(HalfCloseHandler); ok && c.state == stateOpen {
		l.cur = c
		l.finish(c, l.onHalfClose(h, c))
	}
	if c.state == stateOpen && c.flags&flagWriteShut != 0 {
		l.closeConn(c, nil)
	}
}

// holding reports whether c is open and paused with inbound bytes kept.
func (l *eventloop) holding(c *conn) bool {
	return c.state == stateOpen && c.events&poller.Readable == 0 && len(c.buf) > 0
}

// traffic calls OnTraffic for the inbound bytes c holds, and applies the
// bounds on what the handler left unread. While the handler consumes some
// bytes but leaves others, and c is still read, it is called again: a
// handler may stop early to bound the output one call makes (a pipeline
// of GETs of a large value), or take one frame per call, and no new bytes
// may ever come to call it. A handler that paused c (PauseRead, which
// takes effect in watch at once) is not: the bytes wait for ResumeRead.
// The output of calls made in a row is sent together, once it passes the
// high-water mark or the handler stops consuming, so a handler that
// answers one frame per call costs one write per mark's worth of answers,
// not one per frame.
func (l *eventloop) traffic(c *conn) {
	high := l.eng.opts.writeBufCap
	for {
		fed := len(c.buf)
		l.cur = c
		a := l.onTraffic(c)
		for last := fed; a == None && c.state == stateOpen && c.events&poller.Readable != 0 &&
			0 < len(c.buf) && len(c.buf) < last && c.OutboundBuffered() <= high; {
			last = len(c.buf)
			a = l.onTraffic(c)
		}
		consumed := len(c.buf) < fed
		l.finish(c, a)
		if c.state == stateClosed {
			return
		}
		l.checkUnread(c, consumed)
		if !consumed || len(c.buf) == 0 || c.state != stateOpen || c.events&poller.Readable == 0 {
			return
		}
	}
}

func (l *eventloop) writable(c *conn) {
	l.flushOut(c)
	switch c.state {
	case stateClosed:
	case stateClosing:
		l.closeSent(c)
	default:
		l.watch(c)
		l.shutWrite(c)
	}
}

// handOverAll runs at the end of each iteration of the loop, for the
// connections whose reading resumed in it.
func (l *eventloop) handOverAll() {
	for i := 0; i < len(l.resumed); i++ { // handOver may queue more
		c := l.resumed[i]
		l.resumed[i] = nil
		c.flags &^= flagResumed
		if c.state == stateOpen {
			l.handOver(c)
		}
	}
	l.resumed = l.resumed[:0]
}

// handOver offers the handler the inbound bytes c kept while it was not
// read, all of them at once and where they lie: bytes the handler left
// unread, which may be all the peer sends until they are answered, and
// bytes a driver received before it stopped receiving (hold). Only then
// is the kernel asked for more, or c closed if its peer had finished.
// Offering them a read buffer's worth at a time, as reads would have
// brought them, copied every byte still held into a new buffer at each
// resume: a handler that answers a little each time its output drains
// (one bounding its output while its peer writes far ahead) made that
// quadratic, and on io_uring, where a send still in flight queues the
// next callback's output, an 8 MB echo ran at 100 KB/s.
func (l *eventloop) handOver(c *conn) {
	if c.events&poller.Readable == 0 {
		return // paused again meanwhile: queued again when it resumes
	}
	if len(c.buf) > 0 {
		l.active(c)
		l.traffic(c)
	}
	if c.state != stateClosed {
		c.flags &^= flagHeld
	}
	switch {
	case c.state != stateOpen || l.holding(c):
	case c.flags&flagEOF != 0:
		if !l.endWaits(c) {
			l.endOfInput(c)
		}
	case c.flags&flagHeld == 0:
		l.drv.armReceive(c)
	}
}

// finish ends a callback on c: it keeps what the handler left unread,
// sends what it wrote, and carries out the action it returned.
func (l *eventloop) finish(c *conn, a Action) {
	if c.state == stateClosed {
		l.cur = nil
		l.closedLate()
		l.sendWritten()
		return
	}
	c.keepUnread()
	if len(c.buf) == 0 {
		l.disarm(&c.readTimer)
	}
	l.send(c)
	l.cur = nil
	l.closedLate()
	l.sendWritten()
	if c.flags&flagWriteClosed != 0 {
		l.shutWrite(c)
	}
	switch a {
	case Close:
		l.closeGraceful(c)
	case Shutdown:
		l.eng.shutdownAsked()
	}
}

// send writes c's pending output: the loop's buffer when c's running
// callback filled it, else c's own buffer unless the socket is known full.
// Output the callback saw pass the high-water mark counts as passing it
// (flagOverHigh), though the socket may take it all, so that a handler
// that waits for OnDrain once it saw that hears of it.
func (l *eventloop) send(c *conn) {
	if l.cur == c && len(l.wbuf) > 0 && c.ext != nil && c.ext.sec != nil {
		l.sealOut(c) // then sent from c's own buffer
	}
	if l.cur == c && len(l.wbuf) > 0 {
		if c.pending()+len(l.wbuf) > l.eng.opts.writeBufCap {
			c.flags |= flagOverHigh
		}
		p := l.wbuf
		n := l.drv.sendOut(c, p)
		if n < 0 {
			return
		}
		if n < len(p) {
			c.queue(p[n:])
		}
		l.drv.spent()
	} else if c.events&poller.Writable == 0 {
		l.drv.sendQueued(c)
		if c.state == stateClosed {
			return
		}
	}
	if c.state == stateClosing {
		// A write or Flush from elsewhere may have sent the last of what
		// c had queued: nothing else would see it go and linger.
		l.closeSent(c)
		return
	}
	l.watch(c)
}

// writeOther queues p for c from outside c's own callbacks. Written in
// another connection's callback, as a relay writes, it goes when that
// callback returns (sendWritten) together with whatever else the callback
// writes to c, or at once if the callback flushes c, and c is watched for
// writable only if its socket does not take it all: a relay's Write, with
// or without Flush, then costs the poller nothing. Output c already waits
// to send, and output written outside any connection's callback (OnTick,
// Loop.Execute, OnClose outside one), which no callback's return would
// send, has c watched at once.
func (l *eventloop) writeOther(c *conn, p []byte) {
	idle := c.out == nil
	c.queue(p)
	l.wroteOther(c, idle)
}

// writevOther is writeOther for the slices of one Writev, as one write:
// over TLS they are gathered and sealed together, not a record each, which
// made a million one-byte slices 23 MB of records; in the clear each is
// appended, and c is listed or watched once.
func (l *eventloop) writevOther(c *conn, bs [][]byte) {
	if s := c.sec(); s != nil && s.ready {
		b := l.eng.outPool.Get()
		for _, p := range bs {
			b.B = append(b.B, p...)
		}
		l.writeOther(c, b.B)
		l.eng.recycle(&l.eng.outPool, b)
		return
	}
	idle := c.out == nil
	for _, p := range bs {
		c.queue(p)
	}
	l.wroteOther(c, idle)
}

// wroteOther lists or watches c, to which writeOther or writevOther just
// queued output, having none queued before if idle.
func (l *eventloop) wroteOther(c *conn, idle bool) {
	switch {
	case l.cur == nil || c.events&poller.Writable != 0:
		l.watch(c)
		return
	case c.out == nil: // what was written was empty
		return
	case idle && (len(l.written) == 0 || l.written[len(l.written)-1] != c):
		// Queued output is listed from when it begins: a connection with
		// output queued outside its own callback is listed here or
		// watched for writable. Only a Flush that empties it can list it
		// twice.
		l.written = append(l.written, c)
	}
	if c.pending() > l.eng.opts.writeBufCap {
		// The handler may have seen it pass the mark, as send has it.
		c.flags |= flagOverHigh
	}
}

// sendWritten sends what the callback that just returned wrote to other
// connections (writeOther).
func (l *eventloop) sendWritten() {
	for i := 0; i < len(l.written); i++ {
		c := l.written[i]
		l.written[i] = nil
		if c.state != stateClosed {
			l.send(c)
		}
	}
	l.written = l.written[:0]
}

// write writes p to c's socket once and returns how much it took, or -1
// when the write failed and closed c.
func (l *eventloop) write(c *conn, p []byte) int {
	n, err := socket.Write(c.fd, p)
	if err != nil && err != syscall.EAGAIN {
		l.socketFailed(c, os.NewSyscallError("write", err))
		return -1
	}
	if n > 0 {
		l.counts.addN(countBytesOut, n)
		l.sent(c)
	}
	return n
}

// flushQueued writes what c has queued, for Conn.Flush, while c waits to
// hear that its socket is writable, which it may be again by now; send,
// which follows, writes it otherwise.
func (l *eventloop) flushQueued(c *conn) {
	if c.events&poller.Writable != 0 {
		l.drv.sendQueued(c)
	}
}

// flushOut writes c's own outbound buffer until the socket is full.
func (l *eventloop) flushOut(c *conn) {
	for c.out != nil {
		p := c.out.B[c.outHead:]
		n := l.write(c, p)
		if n < 0 {
			return
		}
		c.outHead += n
		if c.outHead == len(c.out.B) {
			l.eng.recycle(&l.eng.outPool, c.out)
			c.out, c.outHead = nil, 0
		}
		if n < len(p) {
			// The socket took less than offered, so it is full: trying
			// again now would only cost a system call that returns EAGAIN.
			return
		}
	}
}

// watch sets what the poller watches c for. Writable while output is
// queued. Readable unless c is closing, the handler paused it, its peer
// finished sending, or it holds more unsent output than the high-water
// mark, and then not again until it drains to half of it
// (WithBackpressure): a peer that does not read stops being read. While
// it is paused so, its read deadline is off: a peer that does not read is
// the write deadline's to bound. When it is read again holding inbound
// bytes, it is queued to have them handed over at the end of the loop's
// iteration.
func (l *eventloop) watch(c *conn) {
	n := c.pending()
	l.watchOutput(c, n > 0)
	want := poller.Readable
	if n > 0 {
		want |= poller.Writable
	}
	if held := c.held.Load(); held != int64(n) {
		c.held.Store(int64(n)) // for OutboundQueued, from any goroutine
		l.eng.holdOut(int64(n) - held)
	}
	l.owesDrain(c)
	l.overSoft(c, n)
	o := &l.eng.opts
	if l.passed(c, l.drainedTo(c, n), o.writeBufCap, flagOverHigh, &want) {
		l.queueDrained(c)
	}
	paused := c.flags & flagOutPaused
	l.passed(c, n, o.pauseMark, flagOutPaused, &want)
	if paused == 0 && c.flags&flagOutPaused != 0 {
		l.counts.add(countBackpressurePauses)
	}
	switch {
	case c.flags&flagEndWaits == 0 || n > 0:
	case l.drv.sending(c):
		want |= poller.Writable // to hear when the send in flight is done
	default:
		c.flags &^= flagEndWaits
	}
	if l.unread(c) {
		want &^= poller.Readable
	}
	if want == c.events {
		return
	}
	if c.state == stateOpen {
		was := c.events & poller.Readable
		kept := len(c.buf) > 0 || c.flags&flagHeld != 0
		switch {
		case was != 0 && want&poller.Readable == 0:
			c.flags |= flagThrottled
			l.disarm(&c.readTimer)
		case was == 0 && want&poller.Readable != 0 && kept:
			l.resume(c)
		case c.events&poller.Writable != 0 && want&poller.Writable == 0 && kept:
			// Its output drained with bytes kept: a handler that stopped
			// early for its own bound on output, below the high-water
			// mark, is waiting to be called again.
			l.resume(c)
		}
	}
	var err error
	if c.events == unwatched {
		err = l.drv.add(c.fd, want)
	} else {
		err = l.drv.modify(c.fd, c.events, want)
	}
	if err != nil {
		l.closeConn(c, err)
		return
	}
	c.events = want
}

// passed keeps flag set on c from when its unsent output n passes mark
// until it drains to half of it, and reports whether it just drained.
func (l *eventloop) passed(c *conn, n, mark int, flag connFlags, want *poller.Event) bool {
	switch {
	case n > mark:
		c.flags |= flag
	case c.flags&flag == 0 || n > mark/2:
	case l.drv.sending(c):
		// Output past the mark may be in a send whose result is still
		// to come: it has drained only once that is in, and a send that
		// goes whole may tell nothing, so ask to hear when c may take
		// more output, which is after it.
		*want |= poller.Writable
	default:
		c.flags &^= flag
		return true
	}
	return false
}

// owesDrain has c heard of when its output drains (flagOverHigh) if
// Conn.Writable has reported false since the loop last looked: the output
// that made it false may have been sent, or posted bytes taken, without
// ever passing the mark on the loop. It runs after each fall in what
// OutboundQueued counts.
func (l *eventloop) owesDrain(c *conn) {
	if c.drainOwed.Load() {
		c.drainOwed.Store(false)
		c.flags |= flagOverHigh
	}
}

// drainedTo returns how much of c's output counts against the high-water
// mark for OnDrain, n of it queued on the loop: once that is down to half
// the mark with c owed OnDrain, the bytes AsyncWrite posted count too, as
// OutboundQueued, which Writable answers from, counts them, so that
// OnDrain never comes while writes still posted hold the output past the
// mark. unpost looks again when they are taken.
func (l *eventloop) drainedTo(c *conn, n int) int {
	if c.flags&flagOverHigh != 0 && n <= l.eng.opts.writeBufCap/2 {
		n += int(c.posted.Load())
	}
	return n
}

// overSoft keeps c's soft-limit timer armed while its unsent output n is
// over WithOutboundSoftLimit's bound.
func (l *eventloop) overSoft(c *conn, n int) {
	o := &l.eng.opts
	switch {
	case o.softOutbound == 0:
	case n <= o.softOutbound:
		l.disarm(&c.softTimer)
	case c.softTimer == noTimer:
		l.arm(c, &c.softTimer, timerSoft, o.softFor)
	}
}

// unread reports whether c is not to be read now (watch).
func (l *eventloop) unread(c *conn) bool {
	switch c.state {
	case stateClosing:
		return true
	case stateOpen:
		return c.flags&(flagOutPaused|flagEndWaits|flagReadPaused|flagInputEnded) != 0
	case stateHandshake:
		return handshakeUnread(c)
	}
	return false
}

// queueDrained queues c, whose output has drained below the low-water
// mark, for OnDrain at the end of the loop's iteration, if the handler
// listens for it.
func (l *eventloop) queueDrained(c *conn) {
	if l.eng.drain != nil && c.flags&flagDrainQueued == 0 {
		c.flags |= flagDrainQueued
		l.drained = append(l.drained, c)
	}
}

// notifyDrained calls OnDrain for the connections queueDrained queued.
func (l *eventloop) notifyDrained() {
	for i := 0; i < len(l.drained); i++ { // OnDrain may queue more
		c := l.drained[i]
		l.drained[i] = nil
		c.flags &^= flagDrainQueued
		if c.state == stateOpen {
			l.cur = c
			l.finish(c, l.onDrain(c))
		}
	}
	l.drained = l.drained[:0]
}

// shutWrite shuts down c's write side, as CloseWrite asked, once all it
// queued has gone, and its last send is known to have gone whole
// (awaitSent asks to hear). With the peer finished too, c closes.
func (l *eventloop) shutWrite(c *conn) {
	if c.flags&(flagWriteClosed|flagWriteShut) != flagWriteClosed || c.state != stateOpen {
		return
	}
	l.closeNotify(c)
	if c.pending() > 0 || l.drv.awaitSent(c) {
		l.watch(c)
		return
	}
	c.flags |= flagWriteShut
	if err := socket.ShutdownWrite(c.fd); err != nil {
		l.closeConn(c, err)
		return
	}
	if c.flags&flagInputEnded != 0 {
		l.closeConn(c, nil)
	}
}

// resume queues c, read again with inbound bytes kept, for handOver.
func (l *eventloop) resume(c *conn) {
	c.flags |= flagHeld
	if c.flags&flagResumed == 0 {
		c.flags |= flagResumed
		l.resumed = append(l.resumed, c)
	}
}

// The close sequence, one for both pollers. A graceful close (the Close
// action, Conn.Close, the peer's end of stream, a graceful stop) stops
// offering c's input to the handler and sends what c has queued; then,
// unless the peer has finished sending or nothing is in flight either
// way, it shuts down c's write side and lingers: it reads and discards
// input until the peer's FIN, for at most WithLingeringClose's time and
// bytes. Closing a socket that holds unread input, or receives more
// after, makes the kernel answer with a reset, which throws away what it
// has yet to send: the tail of the last reply. Then OnClose runs, with
// every Conn accessor still true, and only after it the descriptor closes
// and c's slot in the engine's table goes back (release). Kill, the
// deadlines, errors and a stop's deadline skip to that last step.

// closeGraceful begins c's close sequence; one still reading its PROXY
// header closes at once, unseen.
func (l *eventloop) closeGraceful(c *conn) {
	switch c.state {
	case stateHeader:
		l.closeConn(c, nil)
	case stateConnecting, stateHandshake: // only a stop closes one
		l.closeConn(c, ErrEngineStopped)
	case stateOpen:
		if c.flags&flagAbort != 0 {
			l.reset(c, nil) // SetLinger(0)
			return
		}
		if soft := l.eng.opts.softOutbound; soft > 0 && c.pending() > soft {
			// Sending what it holds could take for ever: free it now.
			l.counts.add(countOutboundOverLimit)
			l.reset(c, ErrOutboundOverLimit)
			return
		}
		c.state = stateClosing
		c.owed = c.posted.Load()
		c.flags &^= flagHeld
		l.disarm(&c.readTimer)
		l.closeSent(c)
	}
}

// closeSent lingers once c, closing, has sent all it had queued, and till
// then watches it drain. Output written meanwhile goes too, as it does
// before the end of a plain connection's stream; on TLS, close_notify
// follows it, once it has all been queued. So do writes posted before
// the close began (AsyncWrite, c.owed), whose tasks have yet to run: a
// handler that answers so from OnTraffic posts its answer before the end
// of its peer's stream is seen, which on io_uring may come in the same
// turn, ahead of the task. Writes posted after are not waited for, as a
// stream whose every callback posts the next would keep c open for ever:
// they find it closed if it has lingered by then.
func (l *eventloop) closeSent(c *conn) {
	if c.owed > 0 {
		l.watch(c) // unpost calls again once they are queued
		return
	}
	if c.pending() == 0 {
		l.closeNotify(c)
	}
	if c.pending() > 0 || l.drv.awaitSent(c) {
		l.watch(c)
		return
	}
	l.linger(c)
}

// linger shuts down the write side of c, whose output the kernel now holds
// whole, and waits for its peer's FIN, reading and discarding what comes
// first. c closes at once instead when the peer has finished; and once a
// stop has begun (Stop, or StopAccepting before it), when it holds no
// unread input and no output the peer has yet to acknowledge, so that a
// stop need not wait for idle peers. Only then: a peer may still be
// sending what has yet to arrive, and a close before it does answers it
// with a reset, which the peer reads as an error after the reply rather
// than its end.
func (l *eventloop) linger(c *conn) {
	o := &l.eng.opts
	if c.flags&flagEOF != 0 || o.lingerTimeout <= 0 || l.stopping && socket.Settled(c.fd) {
		l.closeConn(c, nil)
		return
	}
	if err := socket.ShutdownWrite(c.fd); err != nil {
		l.closeConn(c, nil) // the peer is gone
		return
	}
	c.state = stateLinger
	if c.out != nil { // empty: all sent
		l.eng.recycle(&l.eng.outPool, c.out)
		c.out = nil
	}
	c.outHead = 0 // counts the bytes discarded from now on
	l.stopTimers(c)
	l.arm(c, &c.readTimer, timerLinger, o.lingerTimeout)
	l.watch(c)
	// c may have been read with no receive armed, one waiting for bytes
	// held to be handed over: lingering needs one.
	l.drv.armReceive(c)
}

// discarded counts p, read from c while lingering, against the bound on
// what a lingering close reads, and closes c past it.
func (l *eventloop) discarded(c *conn, p []byte) {
	if l.eng.opts.wipe {
		clear(p)
	}
	c.outHead += len(p)
	if c.outHead > l.eng.opts.lingerBytes {
		l.closeConn(c, nil)
	}
}

// closeConn closes c at once and tells the handler why, if the handler
// has seen it: one still reading its PROXY header, or in its TLS
// handshake, closes unseen, and a dial's OnDialFailed hears err.
func (l *eventloop) closeConn(c *conn, err error) {
	switch c.state {
	case stateClosed:
		return
	case stateConnecting:
		l.connectFailed(c, err)
		return
	}
	opened := c.state != stateHeader && c.state != stateHandshake
	c.state = stateClosed
	if s := c.sec(); s != nil && s.tc != nil {
		s.wire.Close() // a handshake under way gives up
	}
	l.conns[c.fd] = nil
	// Engine.Kill fails for c from now on, though its slot is held until
	// OnClose has returned.
	l.eng.table.Kill(kill.ConnID(c.id))
	inCallback := l.cur == c
	if inCallback {
		l.cur = nil
		l.drv.spent()
	}
	l.stopTimers(c)
	switch {
	case !opened:
		l.release(c)
		if d, ok := c.ctx.(*dialSpec); ok {
			l.dialFailed(d, err) // its TLS handshake did not end
		}
	case inCallback:
		// Closed from inside one of c's callbacks (a Flush that failed):
		// OnClose waits until that callback has returned, so a handler
		// never sees its state torn down under it.
		l.late, l.lateErr = c, err
	default:
		l.notifyClose(c, err)
	}
}

// release lets go of c, closed, once OnClose has returned: its descriptor,
// which also leaves the poller, its buffers, and its slot in the engine's
// table and its source's count, so that the handler never holds more
// connections than the limits allow.
func (l *eventloop) release(c *conn) {
	l.drv.closeSocket(c)
	c.fd = -1 // its number may be reused: a Conn kept past OnClose names no socket
	c.releaseBuffers()
	l.eng.holdOut(-c.held.Swap(0))
	l.count.Add(-1)
	l.eng.forget(c)
}

// notifyClose tells the handler c has closed, and why, then releases c.
func (l *eventloop) notifyClose(c *conn, err error) {
	l.countClose(c, err)
	a := l.onClose(c, err)
	l.release(c)
	if a == Shutdown {
		l.eng.shutdownAsked()
	}
}

// closedLate calls the OnClose that closeConn held back while a callback
// for the connection ran.
func (l *eventloop) closedLate() {
	if c := l.late; c != nil {
		err := l.lateErr
		l.late, l.lateErr = nil, nil
		l.notifyClose(c, err)
	}
}

func (l *eventloop) closeAll(err error) {
	l.closePackets(true, err)
	for _, c := range l.conns {
		if c != nil {
			l.closeConn(c, err)
		}
	}
}

// reset closes c so that the peer sees a TCP reset rather than an orderly
// end, and drops whatever output c had queued: SO_LINGER {on, 0}, then
// close. A unix socket's peer sees the end of the stream.
func (l *eventloop) reset(c *conn, err error) {
	if c.state == stateClosed {
		return
	}
	socket.SetLingerZero(c.fd)
	l.closeConn(c, err)
}

// resetAll resets every connection, for a Stop whose time ran out.
func (l *eventloop) resetAll(err error) {
	for _, c := range l.conns {
		if c != nil {
			l.reset(c, err)
		}
	}
}

// kill resets the connection id names, if this loop still holds it: the
// descriptor may have closed since Engine.Kill marked it, and a newer
// connection taken its number. One not yet opened is reset when it opens
// (open checks the mark).
func (l *eventloop) kill(fd int, id uint64) {
	if fd < len(l.conns) && l.conns[fd] != nil && l.conns[fd].id == id {
		l.counts.add(countKilled)
		l.reset(l.conns[fd], ErrKilled)
		return
	}
	l.killPacket(fd, id)
}

// drain starts a graceful stop: no more accepts, and every connection
// closes once its queued output is sent.
func (l *eventloop) drain() {
	l.draining = true
	l.closeListeners()
	l.closePackets(true, nil)
	for _, c := range l.conns {
		if c != nil {
			if c.state == stateOpen {
				c.flags |= flagByStop
			}
			l.closeGraceful(c)
		}
	}
}

// closeListeners stops the loop's accepts and closes its listeners.
func (l *eventloop) closeListeners() {
	l.stopping = true
	l.eng.lnMu.Lock() // DupListeners copies them meanwhile, or sees them gone
	defer l.eng.lnMu.Unlock()
	l.drv.stopAccepts()
	for _, ln := range l.listeners {
		ln.close()
	}
	l.listeners = nil
	l.closePackets(false, nil)
}

func (l *eventloop) runTasks(ts []*task) {
	for _, t := range ts {
		l.runTask(t)
		t.free()
	}
	if ts != nil {
		l.tasks.recycle(ts)
	}
}

func (l *eventloop) runTask(t *task) {
	c := t.c
	switch t.kind {
	case taskOpen:
		l.open(c, true)
		return
	case taskStop:
		l.drain()
		return
	case taskStopAccepting:
		l.closeListeners()
		return
	case taskForce:
		l.drain()
		l.resetAll(ErrEngineStopped)
		return
	case taskKill:
		l.kill(t.fd, t.id)
		return
	case taskDial:
		l.connect(t.dial)
		return
	case taskExecute:
		l.execute(t.fn)
		return
	case taskTLS:
		l.handshakeProgress(c)
		return
	case taskPacketWrite, taskPacketWake, taskPacketClose:
		l.runPacketTask(t)
		return
	}
	// What an AsyncWrite or Wake posted was counted against c's bound when
	// it was posted (conn.reserve), and is queued now whatever the bound
	// says; it stops counting as posted only once watch counts it as
	// queued, so that posters never see less than c holds.
	if t.kind != taskClose {
		defer l.unpost(c, t.reserved)
	}
	if c.done() {
		if t.cb != nil {
			l.callback(c, t.cb, ErrConnClosed)
		}
		return
	}
	l.cur = c
	a := None
	var err error // the write's: after CloseWrite, ErrConnClosed
	switch t.kind {
	case taskWrite:
		_, err = c.write(t.buf)
	case taskWritev:
		for _, b := range t.bufs {
			if _, err = c.write(b); err != nil {
				break
			}
		}
	case taskWake:
		if c.state == stateOpen { // a closing connection is offered no more input
			a = l.onTraffic(c)
		}
	case taskClose:
		a = Close
	}
	l.finish(c, a)
	if t.cb != nil {
		if c.state == stateClosed {
			err = ErrConnClosed // sending what was posted failed
		}
		l.callback(c, t.cb, err)
	}
}

// unpost stops counting n bytes, which a task has just queued for c or
// found c closed for, as posted. A connection closing waits for the bytes
// posted before it closed (closeSent), and goes on once they are queued.
// Tasks run in the order they were posted, but a poster reserves its bytes
// before it posts them, so a write posted just after the close may be
// taken for one posted just before: either is a race the poster lost.
func (l *eventloop) unpost(c *conn, n int64) {
	c.posted.Add(-n)
	if c.state == stateOpen && (c.drainOwed.Load() || c.flags&flagOverHigh != 0) {
		// Writable said false, which the posted bytes may have made, or
		// OnDrain waits for them to go (drainedTo).
		l.watch(c)
		return
	}
	if c.state != stateClosing || c.owed <= 0 || n == 0 {
		return
	}
	if c.owed -= n; c.owed <= 0 {
		c.owed = 0
		l.closeSent(c)
	}
}

// callback runs cb on the loop, sending whatever it writes, also when
// it panics.
func (l *eventloop) callback(c *conn, cb AsyncCallback, err error) {
	open := !c.done()
	if open {
		l.cur = c
	}
	l.onAsync(c, cb, err)
	if open {
		l.finish(c, None)
	}
}

// The handler's callbacks, each guarded: a panic closes the connection it
// ran for, never the loop.

func (l *eventloop) onOpen(c *conn) (out []byte, a Action) {
	defer l.recoverConn(c)
	return l.eng.handler.OnOpen(c)
}

func (l *eventloop) onAsync(c *conn, cb AsyncCallback, err error) {
	defer l.recoverConn(c)
	cb(c, err)
}

func (l *eventloop) onTraffic(c *conn) Action {
	defer l.recoverConn(c)
	return l.eng.handler.OnTraffic(c)
}

func (l *eventloop) onClose(c *conn, err error) Action {
	defer l.recoverConn(c)
	return l.eng.handler.OnClose(c, err)
}

func (l *eventloop) onHalfClose(h HalfCloseHandler, c *conn) Action {
	defer l.recoverConn(c)
	return h.OnHalfClose(c)
}

func (l *eventloop) onRefuse(h RefusalHandler, remote net.Addr, reason error) []byte {
	defer l.recoverConn(nil)
	return h.OnRefuse(remote, reason)
}

func (l *eventloop) onDrain(c *conn) Action {
	defer l.recoverConn(c)
	return l.eng.drain.OnDrain(c)
}

func (l *eventloop) onTick() (delay time.Duration, a Action) {
	delay = time.Second // kept if OnTick panics, so a panic does not spin
	defer l.recoverConn(nil)
	return l.eng.handler.OnTick()
}

// recoverConn, deferred around a callback, turns a panic into a log entry
// with the stack and closes the connection the callback ran for. The
// callback's results are left zero: None, and no output.
func (l *eventloop) recoverConn(c *conn) {
	r := recover()
	if r == nil {
		return
	}
	l.eng.opts.logger.Error("sluice: handler panicked", "panic", r, "stack", string(debug.Stack()))
	if c != nil {
		l.closeConn(c, fmt.Errorf("%w: %v", ErrHandlerPanic, r))
		l.closedLate() // the callback has unwound: OnClose need not wait
	}
}
