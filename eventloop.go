package sluice

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/kill"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/wheel"
)

// eventloop owns a poller and every connection registered with it. Only
// its own goroutine touches its connections; other goroutines reach them
// through tasks.
type eventloop struct {
	idx       int
	eng       *engine
	poll      *poller.Poller
	ring      *ring       // nil unless the loop runs on io_uring (eventloop_uring_linux.go)
	listeners []*listener // the listeners this loop accepts on
	conns     []*conn     // by descriptor
	count     atomic.Int64
	handed    atomic.Int64 // accepted by another loop for this one, not yet opened
	buf       []byte       // every read lands here first
	wbuf      []byte       // output of the running callback, sent when it returns
	cur       *conn        // whose callback is running
	late      *conn        // closed inside its own callback; OnClose waits for it to return
	lateErr   error
	tasks     taskQueue
	sleeping  atomic.Bool
	draining  bool
	counts    counters

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
	p, err := poller.Open()
	if err != nil {
		return nil, err
	}
	l := &eventloop{
		idx:  idx,
		eng:  e,
		poll: p,
		buf:  make([]byte, e.opts.readBufferCap),
	}
	l.fire = l.expire
	if e.opts.timed() {
		l.timers()
	}
	return l, nil
}

// run readies the loop on its own thread, calls ready, waits for booted
// to close (OnBoot has returned), and serves until the loop has drained.
func (l *eventloop) run(ready func(), booted <-chan struct{}) {
	onRing := l.eng.opts.poller == poller.IOUring
	if l.eng.opts.lockOSThread || onRing {
		// A ring belongs to the thread that made it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if onRing {
		l.openRing()
	}
	ready()
	<-booted
	if l.ring != nil {
		l.serveRing()
	} else {
		l.serve()
	}
	l.stop()
}

// serve runs the loop on its poller until it has drained.
func (l *eventloop) serve() {
	for !l.draining || l.count.Load() > 0 {
		ready, err := l.wait()
		if err != nil {
			l.eng.opts.logger.Error("sluice: poller failed; closing the loop's connections", "loop", l.idx, "err", err)
			l.eng.shutdown()
			l.closeAll(err)
			break
		}
		for _, r := range ready {
			l.dispatch(r)
		}
		l.runTasks(l.tasks.take())
		l.runTimers()
		l.tick()
		l.resumeAccepts()
	}
}

// stop ends a loop that has drained or failed.
func (l *eventloop) stop() {
	// Whatever is posted from now on fails with ErrEngineStopped; what came
	// before still runs, against closed connections.
	l.runTasks(l.tasks.close())
	for _, ln := range l.listeners {
		ln.close()
	}
	l.poll.Close()
	if l.ring != nil {
		l.closeRing()
	}
}

// wait blocks in the poller. The sleeping flag tells posters whether the
// loop must be woken: it is set before the queue is checked one last time,
// so a task pushed after that check always finds it set and wakes the loop.
func (l *eventloop) wait() ([]poller.Ready, error) {
	ready, err := l.poll.Wait(l.sleep())
	l.awake()
	return ready, err
}

// sleep readies the loop to block and returns how long it may: zero when
// a task is already waiting.
func (l *eventloop) sleep() time.Duration {
	timeout := l.timeout()
	if timeout != 0 {
		l.yield()
	}
	l.sleeping.Store(true)
	if l.tasks.pending() {
		l.sleeping.Store(false)
		timeout = 0
	}
	return timeout
}

// awake follows a wait: posters wake the loop no more, and the clock is
// read again when next needed.
func (l *eventloop) awake() {
	l.sleeping.Store(false)
	l.clockRead = false
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
}

// post hands t to the loop from any goroutine, waking the loop only if it
// sleeps.
func (l *eventloop) post(t *task) error {
	if !l.tasks.push(t) {
		t.free()
		return ErrEngineStopped
	}
	if l.sleeping.CompareAndSwap(true, false) {
		if err := l.poll.Wake(); err != nil {
			l.eng.opts.logger.Error("sluice: waking a loop failed", "loop", l.idx, "err", err)
		}
	}
	return nil
}

func (l *eventloop) dispatch(r poller.Ready) {
	for _, ln := range l.listeners {
		if ln.fd == r.Fd {
			l.accept(ln)
			return
		}
	}
	if r.Fd >= len(l.conns) || l.conns[r.Fd] == nil {
		return
	}
	c := l.conns[r.Fd]
	if r.Events&poller.Writable != 0 && c.out != nil {
		l.writable(c)
	}
	if r.Events&poller.Readable != 0 {
		switch c.state {
		case stateOpen:
			l.readable(c)
		case stateHeader:
			l.readHeader(c)
		}
	}
}

func (l *eventloop) accept(ln *listener) {
	fd, sa, err := socket.Accept(ln.fd)
	if err != nil {
		l.acceptFailed(ln, err)
		return
	}
	l.accepted(ln, fd, sa)
}

// acceptFailed pauses accepts when out of descriptors or memory, and
// logs failures that are not the peer's or the moment's.
func (l *eventloop) acceptFailed(ln *listener, err error) {
	switch err {
	case unix.EAGAIN, unix.ECONNABORTED, unix.EINTR, unix.ECANCELED:
	case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
		l.pauseAccepts(err)
	default:
		l.eng.opts.logger.Warn("sluice: accept failed", "addr", ln.addr, "err", err)
	}
}

// accepted admits fd, which ln accepted from sa, and opens it on its loop.
func (l *eventloop) accepted(ln *listener, fd int, sa unix.Sockaddr) {
	c := &conn{fd: fd, remote: socket.AddrPort(sa), loop: l}
	if !l.eng.perLoop {
		c.loop = l.eng.pick(c)
	}
	if !l.admit(c) {
		unix.Close(fd)
		return
	}
	if err := socket.Configure(fd, ln.unix, l.eng.sock); err != nil {
		l.eng.opts.logger.Warn("sluice: configuring an accepted socket failed", "err", err)
		l.drop(c)
		return
	}
	if c.loop == l {
		l.open(c)
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
		if err := l.pollModify(ln.fd, poller.Readable, 0); err != nil {
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
		if err := l.pollModify(ln.fd, 0, poller.Readable); err != nil {
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
	unix.Close(c.fd)
	l.eng.forget(c)
}

// open registers a connection this loop now owns and calls OnOpen, or,
// WithProxyProtocol, starts reading its header (proxy.go). One that was
// killed, or arrives while the loop drains, is dropped unopened.
func (l *eventloop) open(c *conn) {
	if l.draining || l.eng.table.Killed(kill.ConnID(c.id)) {
		l.drop(c)
		return
	}
	if c.fd >= len(l.conns) {
		// The table only grows, so what lies past its length is nil.
		l.conns = slices.Grow(l.conns, c.fd+1-len(l.conns))[:c.fd+1]
	}
	l.conns[c.fd] = c
	if err := l.pollAdd(c.fd, poller.Readable); err != nil {
		l.conns[c.fd] = nil
		l.eng.opts.logger.Warn("sluice: registering a connection failed", "err", err)
		l.drop(c)
		return
	}
	c.events = poller.Readable
	l.count.Add(1)
	if l.eng.opts.proxy != ProxyOff {
		l.awaitHeader(c)
		return
	}
	l.start(c)
}

// start arms c's idle timeout and calls OnOpen.
func (l *eventloop) start(c *conn) {
	if d := l.eng.opts.idleTimeout; d > 0 {
		l.setIdleTimeout(c, d)
	}
	l.cur = c
	out, a := l.onOpen(c)
	if len(out) > 0 && c.state != stateClosed {
		c.Write(out)
	}
	l.finish(c, a)
}

func (l *eventloop) readable(c *conn) {
	if p := l.read(c); p != nil {
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

// read reads what c's socket holds into the loop's buffer and returns it,
// or nil when there was nothing to read or c closed: at the end of the
// stream once what is queued is sent, at once on an error.
func (l *eventloop) read(c *conn) []byte {
	n, err := socket.Read(c.fd, l.buf)
	switch {
	case n > 0:
		return l.buf[:n:n]
	case err == nil:
		l.closeGraceful(c)
	case err != unix.EAGAIN:
		l.closeConn(c, err)
	}
	return nil
}

// traffic calls OnTraffic for the inbound bytes c holds, and applies the
// bounds on what the handler left unread. While the handler consumes some
// bytes but leaves others, and c is still read, it is called again: a
// handler may stop early to bound the output one call makes (a pipeline
// of GETs of a large value), and no new bytes may ever come to call it.
func (l *eventloop) traffic(c *conn) {
	for {
		fed := len(c.buf)
		l.cur = c
		a := l.onTraffic(c)
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
	switch {
	case c.state == stateClosed:
	case c.state == stateClosing && c.out == nil:
		l.closeConn(c, nil)
	default:
		paused := c.events&poller.Readable == 0
		l.watch(c)
		if paused && c.events&poller.Readable != 0 && len(c.buf) > 0 {
			// Reading resumes with bytes the handler left while its output
			// was backed up; they may be all the peer sends until answered.
			l.traffic(c)
		}
	}
}

// finish ends a callback on c: it keeps what the handler left unread,
// sends what it wrote, and carries out the action it returned.
func (l *eventloop) finish(c *conn, a Action) {
	if c.state == stateClosed {
		l.cur = nil
		l.closedLate()
		return
	}
	c.keepUnread()
	if len(c.buf) == 0 {
		l.disarm(&c.readTimer)
	}
	l.send(c)
	l.cur = nil
	l.closedLate()
	switch a {
	case Close:
		l.closeGraceful(c)
	case Shutdown:
		l.eng.shutdownAsked()
	}
}

// send writes c's pending output: the loop's buffer when c's running
// callback filled it, else c's own buffer unless the socket is known full.
func (l *eventloop) send(c *conn) {
	if l.cur == c && len(l.wbuf) > 0 {
		p := l.wbuf
		n := l.sendOut(c, p)
		if n < 0 {
			return
		}
		if n < len(p) {
			c.queue(p[n:])
		}
		l.resetWbuf()
	} else if c.out != nil && c.events&poller.Writable == 0 {
		l.flushOut(c)
		if c.state == stateClosed {
			return
		}
	}
	l.watch(c)
}

// write writes p to c's socket once and returns how much it took, or -1
// when the write failed and closed c.
func (l *eventloop) write(c *conn, p []byte) int {
	n, err := socket.Write(c.fd, p)
	if err != nil && err != unix.EAGAIN {
		l.closeConn(c, err)
		return -1
	}
	if n > 0 {
		l.sent(c)
	}
	return n
}

// resetWbuf empties the loop's output buffer for the next callback, and
// drops it when one huge write grew it.
func (l *eventloop) resetWbuf() {
	if l.ring != nil {
		l.ring.spent(l)
		return
	}
	if l.eng.opts.wipe {
		clear(l.wbuf)
	}
	l.wbuf = l.wbuf[:0]
	if cap(l.wbuf) > l.eng.opts.readBufferCap+l.eng.opts.writeBufCap {
		l.wbuf = nil
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
// queued. Readable unless c is closing or holds more unsent output than
// the high-water mark, and then not again until it drains below half of
// it: a peer that does not read stops being read.
func (l *eventloop) watch(c *conn) {
	n := c.pending()
	l.watchOutput(c, n > 0)
	want := poller.Readable
	if n > 0 {
		want |= poller.Writable
		high := l.eng.opts.writeBufCap
		if n > high || (c.events&poller.Readable == 0 && n > high/2) {
			want = poller.Writable
		}
	}
	if c.state == stateClosing {
		want &^= poller.Readable
	}
	if want == c.events {
		return
	}
	if err := l.pollModify(c.fd, c.events, want); err != nil {
		l.closeConn(c, err)
		return
	}
	c.events = want
}

// closeGraceful closes c once its queued output is sent.
func (l *eventloop) closeGraceful(c *conn) {
	if c.state == stateClosed {
		return
	}
	if c.pending() == 0 && !l.awaitSent(c) {
		l.closeConn(c, nil)
		return
	}
	c.state = stateClosing
	l.watch(c)
}

// closeConn closes c at once and tells the handler why, if the handler
// has seen it: one still reading its PROXY header closes unseen.
func (l *eventloop) closeConn(c *conn, err error) {
	if c.state == stateClosed {
		return
	}
	opened := c.state != stateHeader
	c.state = stateClosed
	l.conns[c.fd] = nil
	l.count.Add(-1)
	inCallback := l.cur == c
	if inCallback {
		l.cur = nil
		l.resetWbuf()
	}
	l.stopTimers(c)
	// Closing the descriptor also removes it from the poller.
	l.closeSocket(c)
	c.releaseBuffers()
	l.eng.forget(c)
	switch {
	case !opened:
	case inCallback:
		// Closed from inside one of c's callbacks (a Flush that failed):
		// OnClose waits until that callback has returned, so a handler
		// never sees its state torn down under it.
		l.late, l.lateErr = c, err
	default:
		l.notifyClose(c, err)
	}
}

// notifyClose tells the handler c has closed, and why.
func (l *eventloop) notifyClose(c *conn, err error) {
	if l.onClose(c, err) == Shutdown {
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
	}
}

// drain starts a graceful stop: no more accepts, and every connection
// closes once its queued output is sent.
func (l *eventloop) drain() {
	l.draining = true
	l.stopAccepts()
	for _, ln := range l.listeners {
		ln.close()
	}
	l.listeners = nil
	for _, c := range l.conns {
		if c != nil {
			l.closeGraceful(c)
		}
	}
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
		l.open(c) // counts c before it stops counting as handed
		l.handed.Add(-1)
		return
	case taskStop:
		l.drain()
		return
	case taskForce:
		l.drain()
		l.resetAll(ErrEngineStopped)
		return
	case taskKill:
		l.kill(t.fd, t.id)
		return
	}
	if c.state == stateClosed {
		if t.cb != nil {
			l.callback(c, t.cb, ErrConnClosed)
		}
		return
	}
	l.cur = c
	a := None
	switch t.kind {
	case taskWrite:
		c.Write(t.buf)
	case taskWritev:
		c.Writev(t.bufs)
	case taskWake:
		a = l.onTraffic(c)
	case taskClose:
		a = Close
	}
	l.finish(c, a)
	if t.cb != nil {
		var err error
		if c.state == stateClosed {
			err = ErrConnClosed // sending what was posted failed
		}
		l.callback(c, t.cb, err)
	}
}

// callback runs cb on the loop, sending whatever it writes.
func (l *eventloop) callback(c *conn, cb AsyncCallback, err error) {
	open := c.state != stateClosed
	if open {
		l.cur = c
	}
	defer l.recoverConn(c)
	cb(c, err)
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

func (l *eventloop) onTraffic(c *conn) Action {
	defer l.recoverConn(c)
	return l.eng.handler.OnTraffic(c)
}

func (l *eventloop) onClose(c *conn, err error) Action {
	defer l.recoverConn(c)
	return l.eng.handler.OnClose(c, err)
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
