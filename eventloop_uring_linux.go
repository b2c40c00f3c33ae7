package sluice

import (
	"slices"

	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/poller"
)

// With WithPoller(poller.IOUring) a loop drives its sockets through an
// io_uring of its own rather than epoll: a multishot accept per listener,
// a multishot receive per connection into a ring of provided buffers (so
// an idle connection holds none), a one-shot poll for a socket that must
// drain before it takes more output, a send per callback's output, all of
// a turn's submitted at once, and a multishot poll of the wake-up eventfd.
// Everything else (callbacks, buffering, deadlines, tasks, closing) is the
// epoll loop's own code: the loop reaches the ring only through pollAdd,
// pollModify, closeFd, sendOut, flush, resetWbuf and closeGraceful's
// awaitSent, and takes received bytes in where a read would have put them.

// Ring sizes: submissions per turn before the ring submits early, room for
// completions, and about how many bytes of provided buffers receives land
// in, taken as buffers of the read buffer's size (WithReadBufferCap), so
// that one receive brings what one read would on epoll. Each buffer is
// touched, and so resident, once used.
const (
	ringEntries   = 1024
	ringCQEntries = 8192
	ringBufBytes  = 4 << 20
)

// ringBufCount is how many buffers of size make about ringBufBytes: a power
// of two from 16 to the kernel's 32768.
func ringBufCount(size int) int {
	n := 16
	for n < 1<<15 && 2*n*size <= ringBufBytes {
		n *= 2
	}
	return n
}

// opKind says what a completion is for. A completion's user data packs the
// kind, the descriptor's generation and the descriptor.
type opKind uint8

const (
	opIgnore  opKind = iota // cancellations and closes: nothing to do
	opWake                  // the wake-up eventfd is readable
	opAccept                // a listener accepted
	opRecv                  // a connection received
	opPollOut               // a connection may take more output
	opSend                  // a send came back short, or failed
)

// userData packs an operation's kind, generation and descriptor.
func userData(kind opKind, gen uint32, fd int) uint64 {
	return uint64(kind)<<56 | uint64(gen&(1<<24-1))<<32 | uint64(uint32(fd))
}

func splitUserData(ud uint64) (kind opKind, gen uint32, fd int) {
	return opKind(ud >> 56), uint32(ud>>32) & (1<<24 - 1), int(uint32(ud))
}

// armed is what a descriptor has in flight on the ring.
type armed uint8

const (
	armedRead   armed = 1 << iota // a multishot receive or accept
	armedCancel                   // and its cancellation
	armedWrite                    // a poll for writable
)

// fdState is the ring's view of one descriptor. gen changes whenever the
// descriptor is opened or closed, so a completion that arrives for an
// earlier holder of the number is recognised and dropped.
type fdState struct {
	gen      uint32
	armed    armed
	sendTurn uint64 // the turn of its last send through the ring
}

// ring is a loop's io_uring and what it has armed.
type ring struct {
	r       *uring.Ring
	bufs    *uring.BufRing
	fds     []fdState // by descriptor, listeners included
	accepts []uint64  // the user data of each listener's accept
	batch   []uring.CQE
	collect func(uring.CQE)

	// Output. A callback's output is sent with the turn's other sends
	// when the next turn begins, from the loop's write buffer, which the
	// loop leaves alone meanwhile: it alternates between two, so the bytes
	// of a turn's sends stay in place through the next turn, when a send
	// that came back short has the rest queued. sends holds, by
	// descriptor, the bytes of each one's last send.
	out     [2][]byte
	cur     int
	sends   [][]byte
	now     bool   // Conn.Flush is sending: write at once
	turn    uint64 // turns begun
	settled uint64 // every send of this turn or earlier has its result
}

// probeRing reports whether io_uring can serve the engine here.
func probeRing() error { return uring.Probe() }

// openRing makes the loop's ring on the calling thread, which is locked
// to it, and arms the wake-up and the listeners' accepts. When the ring
// cannot be made the loop runs on epoll, which already watches its
// listeners.
func (l *eventloop) openRing() {
	r, err := uring.New(ringEntries, ringCQEntries)
	if err != nil {
		l.eng.opts.logger.Warn("sluice: io_uring setup failed; this loop uses epoll", "loop", l.idx, "err", err)
		return
	}
	size := l.eng.opts.readBufferCap
	bufs, err := uring.NewBufRing(r, 0, ringBufCount(size), size)
	if err != nil {
		r.Close()
		l.eng.opts.logger.Warn("sluice: io_uring buffers failed; this loop uses epoll", "loop", l.idx, "err", err)
		return
	}
	l.ring = &ring{r: r, bufs: bufs, turn: 1}
	l.ring.collect = l.ring.add
	for i := range l.ring.out {
		l.ring.out[i] = make([]byte, 0, size)
	}
	l.armWake()
	for _, ln := range l.listeners {
		l.pollAdd(ln.fd, poller.Readable)
	}
}

// serveRing runs the loop on its ring until it has drained: each turn is
// one io_uring_enter that submits what the last turn queued and waits.
func (l *eventloop) serveRing() {
	rg := l.ring
	for !l.draining || l.count.Load() > 0 {
		timeout := l.sleep()
		err := rg.r.SubmitAndWait(1, timeout)
		l.awake()
		if err != nil {
			l.eng.opts.logger.Error("sluice: io_uring failed; closing the loop's connections", "loop", l.idx, "err", err)
			// Closing the ring cancels what it holds; the descriptors are
			// then closed directly.
			l.closeRing()
			l.eng.shutdown()
			l.closeAll(err)
			break
		}
		l.turn()
		l.runTasks(l.tasks.take())
		l.runTimers()
		l.tick()
		l.resumeAccepts()
		if l.draining {
			l.stopAccepts()
		}
	}
}

// turn handles what the last wait brought. The results of the sends it
// submitted come first, so that the rest of a short send is queued before
// any callback can write more behind it.
func (l *eventloop) turn() {
	rg := l.ring
	rg.turn++
	rg.cur ^= 1
	if l.eng.opts.wipe {
		clear(rg.out[rg.cur][:cap(rg.out[rg.cur])])
	}
	l.wbuf = rg.out[rg.cur][:0]
	rg.batch = rg.batch[:0]
	rg.r.ForEachCQE(rg.collect)
	for _, e := range rg.batch {
		if kind, _, _ := splitUserData(e.UserData); kind == opSend {
			l.complete(e)
		}
	}
	rg.settled = rg.turn - 1
	for _, e := range rg.batch {
		if kind, _, _ := splitUserData(e.UserData); kind != opSend {
			l.complete(e)
		}
	}
}

// add keeps a completion for the turn.
func (rg *ring) add(e uring.CQE) { rg.batch = append(rg.batch, e) }

// closeRing submits what the last turn queued, closes among it, and closes
// the ring, which cancels whatever is still armed.
func (l *eventloop) closeRing() {
	l.ring.r.Submit()
	l.ring.r.Close()
	l.ring = nil
}

// armWake watches the eventfd other goroutines write to wake the loop.
func (l *eventloop) armWake() {
	l.ring.r.PrepPollMultishot(l.poll.WakeFd(), unix.POLLIN, userData(opWake, 0, 0))
}

// stopAccepts cancels the listeners' accepts once the loop drains, since
// closing a listener leaves an armed accept holding it open.
func (l *eventloop) stopAccepts() {
	rg := l.ring
	for _, ud := range rg.accepts {
		rg.r.PrepCancel(ud, userData(opIgnore, 0, 0))
	}
	rg.accepts = rg.accepts[:0]
}

// state returns the ring's record of fd, growing the table as needed.
func (rg *ring) state(fd int) *fdState {
	if fd >= len(rg.fds) {
		rg.fds = append(rg.fds, make([]fdState, fd+1-len(rg.fds))...)
	}
	return &rg.fds[fd]
}

// current reports whether a completion with gen is for fd's present holder.
func (rg *ring) current(fd int, gen uint32) bool {
	return fd < len(rg.fds) && rg.fds[fd].gen&(1<<24-1) == gen
}

// pollAdd starts serving fd, a new connection or a listener, on the ring.
func (l *eventloop) pollAdd(fd int, ev poller.Event) error {
	if l.ring == nil {
		return l.poll.Add(fd, ev)
	}
	st := l.ring.state(fd)
	st.gen++
	st.armed, st.sendTurn = 0, 0
	return l.pollModify(fd, 0, ev)
}

// pollModify arms what ev asks for and the ring lacks, and cancels the
// receive or accept when ev no longer asks to read. A poll for writable
// left armed when output drains is harmless: it finds nothing queued.
func (l *eventloop) pollModify(fd int, old, ev poller.Event) error {
	rg := l.ring
	if rg == nil {
		return l.poll.Modify(fd, old, ev)
	}
	st := rg.state(fd)
	kind := opRecv
	if l.listener(fd) != nil {
		kind = opAccept
	}
	ud := userData(kind, st.gen, fd)
	switch {
	case ev&poller.Readable != 0 && st.armed&armedRead == 0:
		st.armed |= armedRead
		if kind == opAccept {
			rg.r.PrepAcceptMultishot(fd, ud)
			if !slices.Contains(rg.accepts, ud) {
				rg.accepts = append(rg.accepts, ud)
			}
		} else {
			rg.r.PrepRecvMultishot(fd, rg.bufs, ud)
		}
	case ev&poller.Readable == 0 && st.armed&(armedRead|armedCancel) == armedRead:
		st.armed |= armedCancel
		rg.r.PrepCancel(ud, userData(opIgnore, 0, 0))
	}
	if ev&poller.Writable != 0 {
		rg.armWrite(fd)
	}
	return nil
}

// armWrite asks to hear when fd may take more output, unless it has.
func (rg *ring) armWrite(fd int) {
	st := rg.state(fd)
	if st.armed&armedWrite == 0 {
		st.armed |= armedWrite
		rg.r.PrepPollAdd(fd, unix.POLLOUT, userData(opPollOut, st.gen, fd))
	}
}

// sending reports whether fd has a send whose result is still to come.
func (rg *ring) sending(fd int) bool {
	return fd < len(rg.fds) && rg.fds[fd].sendTurn > rg.settled
}

// sendOut sends p, the output of c's running callback, and returns how
// much went, or -1 when c closed. On io_uring the send goes with the
// turn's others, and all of p counts as sent: a send that comes back short
// has its rest queued (sendFailed) before any callback of the next turn
// runs. Until then c's further output is queued behind it.
func (l *eventloop) sendOut(c *conn, p []byte) int {
	rg := l.ring
	if rg == nil {
		return l.write(c, p)
	}
	if rg.sending(c.fd) {
		return 0
	}
	if rg.now {
		return l.write(c, p)
	}
	st := rg.state(c.fd)
	st.sendTurn = rg.turn
	if c.fd >= len(rg.sends) {
		rg.sends = append(rg.sends, make([][]byte, c.fd+1-len(rg.sends))...)
	}
	rg.sends[c.fd] = p
	// MSG_WAITALL makes a short send a failure, so that SkipSuccess posts
	// a completion for it and none for a send that took everything.
	const flags = unix.MSG_DONTWAIT | unix.MSG_WAITALL | unix.MSG_NOSIGNAL
	rg.r.PrepSend(c.fd, p, flags, userData(opSend, st.gen, c.fd)).SetFlags(uring.SkipSuccess)
	l.sent(c)
	return len(p)
}

// flush sends c's output for Conn.Flush. It writes at once on io_uring
// too, so that a failure is Flush's to report, as on epoll.
func (l *eventloop) flush(c *conn) {
	if l.ring == nil {
		l.send(c)
		return
	}
	l.ring.now = true
	l.send(c)
	l.ring.now = false
}

// spent moves the loop's write buffer past the output just handed to the
// ring, which must stay in place until the ring is done with it.
func (rg *ring) spent(l *eventloop) { l.wbuf = l.wbuf[len(l.wbuf):] }

// awaitSent reports whether c, closing gracefully, has a send whose result
// is still to come, and if so asks to hear when c may take more output,
// which is after that result: c closes then if nothing came back.
func (l *eventloop) awaitSent(c *conn) bool {
	if l.ring == nil || !l.ring.sending(c.fd) {
		return false
	}
	l.ring.armWrite(c.fd)
	return true
}

// sendFailed queues, in front of whatever c queued since, the part of a
// send the socket did not take, or closes c if the send failed.
func (l *eventloop) sendFailed(fd int, gen uint32, e uring.CQE) {
	rg := l.ring
	if !rg.current(fd, gen) || fd >= len(l.conns) || l.conns[fd] == nil {
		return
	}
	c := l.conns[fd]
	n := 0
	switch err := e.Err(); err {
	case nil:
		n = int(e.Res)
	case unix.EAGAIN, unix.EINTR:
	default:
		l.closeConn(c, err)
		return
	}
	rest := rg.sends[fd][n:]
	out := l.eng.outPool.Get()
	out.B = append(out.B, rest...)
	if c.out != nil {
		out.B = append(out.B, c.out.B[c.outHead:]...)
		l.eng.recycle(&l.eng.outPool, c.out)
	}
	c.out, c.outHead = out, 0
	l.watch(c)
	if c.state != stateClosed {
		rg.armWrite(fd)
	}
}

// closeFd closes a connection's descriptor. On the ring it first cancels
// what is armed on it, which holds the socket open, and closes it in the
// same submission, so the number is not reused before the cancellation
// has found its operations. It cancels each operation by its user data,
// which the kernel finds by hash: a cancel by descriptor walks every
// armed operation of the ring, and closing 10,000 connections that way
// took 6 s where closing them directly took 1.5.
func (l *eventloop) closeFd(fd int) {
	rg := l.ring
	if rg == nil {
		unix.Close(fd)
		return
	}
	st := rg.state(fd)
	if st.armed&(armedRead|armedCancel) == armedRead {
		rg.r.PrepCancel(userData(opRecv, st.gen, fd), userData(opIgnore, 0, 0))
	}
	if st.armed&armedWrite != 0 {
		rg.r.PrepCancel(userData(opPollOut, st.gen, fd), userData(opIgnore, 0, 0))
	}
	st.gen++
	st.armed = 0
	rg.r.PrepClose(fd, userData(opIgnore, 0, 0)).SetFlags(uring.SkipSuccess)
}

// listener returns the loop's listener on fd, if fd is one.
func (l *eventloop) listener(fd int) *listener {
	for _, ln := range l.listeners {
		if ln.fd == fd {
			return ln
		}
	}
	return nil
}

// complete handles one completion.
func (l *eventloop) complete(e uring.CQE) {
	kind, gen, fd := splitUserData(e.UserData)
	switch kind {
	case opWake:
		if !e.More() {
			l.armWake()
		}
	case opAccept:
		l.ringAccepted(fd, gen, e)
	case opRecv:
		l.ringReceived(fd, gen, e)
	case opPollOut:
		l.ringWritable(fd, gen)
	case opSend:
		l.sendFailed(fd, gen, e)
	}
}

// ended notes that fd's multishot operation posted its last completion,
// and reports whether that completion is for fd's present holder.
func (l *eventloop) ended(fd int, gen uint32, e uring.CQE) bool {
	rg := l.ring
	if !rg.current(fd, gen) {
		return false
	}
	if !e.More() {
		rg.fds[fd].armed &^= armedRead | armedCancel
	}
	return true
}

func (l *eventloop) ringAccepted(fd int, gen uint32, e uring.CQE) {
	ln := l.listener(fd)
	if !l.ended(fd, gen, e) {
		ln = nil
	}
	switch {
	case e.Res >= 0:
		l.ringAccept(ln, int(e.Res))
	case ln != nil:
		l.acceptFailed(ln, e.Err())
	}
	if ln != nil && !e.More() && l.acceptAt == 0 && !l.draining {
		l.pollModify(fd, 0, poller.Readable)
	}
}

// ringAccept takes a socket a multishot accept made. The ring does not
// report the peer's address, so it costs a getpeername.
func (l *eventloop) ringAccept(ln *listener, fd int) {
	if ln == nil {
		unix.Close(fd) // accepted by a listener since closed
		return
	}
	sa, err := unix.Getpeername(fd)
	if err != nil {
		unix.Close(fd)
		return
	}
	l.accepted(ln, fd, sa)
}

func (l *eventloop) ringReceived(fd int, gen uint32, e uring.CQE) {
	rg := l.ring
	id, hasBuf := e.Buffer()
	if hasBuf {
		defer rg.bufs.Recycle(id)
	}
	if !l.ended(fd, gen, e) || fd >= len(l.conns) || l.conns[fd] == nil {
		return
	}
	c := l.conns[fd]
	switch err := e.Err(); {
	case e.Res > 0:
		p := rg.bufs.Buf(id)[:e.Res:e.Res]
		l.ringDeliver(c, p)
	case e.Res == 0:
		l.closeGraceful(c)
		return
	case err == unix.ENOBUFS, err == unix.ECANCELED:
	default:
		l.closeConn(c, err)
		return
	}
	if c.state != stateClosed && !e.More() && c.events&poller.Readable != 0 {
		l.pollModify(fd, c.events, c.events)
	}
}

// ringDeliver hands c the bytes p a receive brought. Bytes that arrive
// after the loop stopped reading c, before the cancellation took effect,
// are kept for when it reads again, as the kernel would have kept them.
func (l *eventloop) ringDeliver(c *conn, p []byte) {
	switch {
	case c.state == stateHeader:
		l.headerReceived(c, p)
	case c.state != stateOpen:
	case c.events&poller.Readable == 0:
		c.feed(p)
		c.keepUnread()
		if l.eng.opts.wipe {
			clear(p)
		}
	default:
		l.received(c, p)
	}
}

func (l *eventloop) ringWritable(fd int, gen uint32) {
	rg := l.ring
	if !rg.current(fd, gen) {
		return
	}
	rg.fds[fd].armed &^= armedWrite
	c := l.conns[fd]
	switch {
	case c == nil:
		return
	case c.out == nil:
		if c.state == stateClosing {
			l.closeConn(c, nil) // its last send went whole
		}
		return
	}
	held := l.holdUnread(c)
	l.writable(c)
	l.refeed(c, held)
	if c.state != stateClosed && c.events&poller.Writable != 0 {
		// Still more to send: the poll was one-shot.
		l.pollModify(fd, c.events, c.events)
	}
}

// holdUnread takes the inbound bytes of c, which is not being read, out of
// it while its output drains. A multishot receive may bring many reads'
// worth in the turn before its cancellation takes effect; were they all
// handed over when reading resumes, the handler could answer all of them
// at once and queue far past the high-water mark.
func (l *eventloop) holdUnread(c *conn) *bytebufferpool.ByteBuffer {
	in := c.in
	if c.events&poller.Readable != 0 || in == nil {
		return nil
	}
	c.in, c.buf = nil, nil
	return in
}

// refeed hands c the bytes held from it, one read's worth at a time while
// it is read, as epoll would have read them, and keeps the rest in c.
func (l *eventloop) refeed(c *conn, held *bytebufferpool.ByteBuffer) {
	if held == nil {
		return
	}
	p := held.B
	for len(p) > 0 && c.state == stateOpen && c.events&poller.Readable != 0 {
		n := min(len(p), l.eng.opts.readBufferCap)
		l.received(c, p[:n])
		p = p[n:]
	}
	if len(p) > 0 && c.state != stateClosed {
		c.feed(p)
		c.keepUnread()
	}
	l.eng.recycle(&l.eng.inPool, held)
}
