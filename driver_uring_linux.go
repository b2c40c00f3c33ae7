//go:build !sluice_std

package sluice

import (
	"errors"
	"os"
	"slices"
	"time"

	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/eventfd"
	"github.com/sluicenet/sluice/internal/socket"
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
// loop's generic code, which reaches the ring only through the driver's
// operations (driver.go); received bytes enter the loop at arrived, as a
// read's do.

// Ring sizes: submissions per turn before the ring submits early, room for
// completions, and about how many bytes of provided buffers receives land
// in, taken as buffers of the read buffer's size (WithReadBufferCap), so
// that one receive brings what one read would on epoll. Each buffer is
// touched, and so resident, once used.
const (
	ringCQEntries = 8192
	ringBufBytes  = 4 << 20
)

// ringEntries is a variable so that a test can make turns submit early.
var ringEntries uint32 = 1024

// recvLimitBufs is how many read buffers' worth a multishot receive takes
// before it must be armed again, where the kernel can cap it: all that a
// connection paused for its output can have received before the pause
// took effect, which without the cap is every free buffer of the loop.
// Armed again about once per 128 KiB received, it costs a submission entry
// each time, and no system call.
const recvLimitBufs = 2

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
// kind, the generation of the descriptor's holder and the descriptor.
type opKind uint8

const (
	opIgnore     opKind = iota // cancellations and closes: nothing to do
	opWake                     // the wake-up eventfd is readable
	opAccept                   // a listener accepted
	opRecv                     // a connection received
	opPollOut                  // a connection may take more output
	opSend                     // a send of an even turn came back short, or failed
	opSendOdd                  // the same, of an odd turn
	opIdle                     // the timer for giving idle buffers back
	opConnect                  // a dial's connect ended
	opPacket                   // a UDP socket's datagram, or its poll (udp_uring_linux.go)
	opPacketSent               // a UDP socket's sendmsg failed
)

// genMask keeps the bits of a generation that user data carries.
const genMask = 1<<24 - 1

// userData packs an operation's kind, generation and descriptor.
func userData(kind opKind, gen uint32, fd int) uint64 {
	return uint64(kind)<<56 | uint64(gen&genMask)<<32 | uint64(uint32(fd))
}

func splitUserData(ud uint64) (kind opKind, gen uint32, fd int) {
	return opKind(ud >> 56), uint32(ud>>32) & genMask, int(uint32(ud))
}

// armed is what a connection or listener has in flight on the ring.
type armed uint8

const (
	armedRead    armed = 1 << iota // a multishot receive or accept
	armedCancel                    // and its cancellation
	armedWrite                     // a poll for writable
	armedSend                      // a send whose result is still to come
	armedStarved                   // a receive that found no buffer, queued to be armed again
	armedConnect                   // a dial's connect
)

// ringSlot is the ring's record of a connection or listener, kept in it so
// that the ring needs no table by descriptor. gen is drawn afresh each time
// one starts on the ring, so a completion that arrives for an earlier
// holder of its descriptor is recognised and dropped. send is where its
// send in flight is in its turn's list.
type ringSlot struct {
	gen   uint32
	send  uint32
	armed armed
}

// pendingSend is a send in flight: the connection and the bytes, which
// stay in place until the send's result is in. buf, if set, is the
// connection's own output buffer, which the send took and which goes back
// to the pool once the result is in.
type pendingSend struct {
	c   *conn
	p   []byte
	buf *bytebufferpool.ByteBuffer
}

// ringDriver drives a loop's sockets through an io_uring of its own, and
// records what it has armed. Other goroutines wake it through an eventfd
// the ring itself polls.
type ringDriver struct {
	l         *eventloop  // the loop it drives
	r         *uring.Ring // nil until start, and once closed
	wakefd    int         // the eventfd wake writes to
	bufs      *uring.BufRing
	gens      uint32   // generations drawn
	accepts   []uint64 // the user data of each listener's accept
	peeked    int      // completions of this turn seen by the first pass
	idleAt    int64    // when, received nothing since, the loop's buffers go back; zero: they have
	idleTimer bool     // the timer for idleAt is armed
	releases  bool     // whether idle buffers may go back (releaseIdle)
	recvLimit uint32   // what one multishot receive takes at most; zero where the kernel cannot cap it
	starved   []*conn  // receives that found no buffer, to arm again from fed on
	fed       int      // how many of starved are armed again
	feed      int      // how many of them to arm again a turn
	first     func(uring.CQE)
	rest      func(uring.CQE)

	// Output. A callback's output is sent with the turn's other sends
	// when the next turn begins, from the loop's write buffer, which the
	// loop leaves alone meanwhile: it alternates between two, so the bytes
	// of a turn's sends stay in place through the next turn, when a send
	// that came back short has the rest queued. sends lists each turn's
	// sends, alternating the same way.
	out      [2][]byte
	outgrown bool // this turn's output outgrew its buffer
	sends    [2][]pendingSend
	// unsettled lists connections whose poll for writable completed
	// before their send settled, to be looked at once it has.
	unsettled []*conn
	now       bool          // Conn.Flush is sending: write at once
	failed    bool          // a turn failed: descriptors are closed directly
	turns     uint64        // turns begun
	gather    time.Duration // WithGatherWait's, where the kernel can; zero: off
	// armed: the turn queued an operation that may complete as it is
	// submitted (a receive, an accept, a connect, a poll): its wait does
	// not gather (gathers).
	armed bool

	pk ringPackets // for the loop's UDP sockets (udp_uring_linux.go)

	// Listeners closed while their accepts may still bring connections.
	retired []retired
}

// connectAddr is where a dial keeps the address its connect on the ring
// reads, which must stay in place until the connect ends.
type connectAddr = socket.RawAddr

// driverSlot is what the ring keeps in each connection and listener.
type driverSlot = ringSlot

// probeRing reports whether io_uring can serve the engine here.
func probeRing() error { return uring.Probe() }

// newRingDriver makes l's ring driver and its wake-up eventfd; the ring
// itself is made on the loop's own thread (start).
func newRingDriver(l *eventloop) (driver, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return &ringDriver{l: l, wakefd: fd}, nil
}

// pinned is true: a ring belongs to the thread that made it
// (IORING_SETUP_SINGLE_ISSUER).
func (rg *ringDriver) pinned() bool { return true }

// start makes the loop's ring on the calling thread, which is locked to
// it, and arms the wake-up and the listeners' accepts. When the ring
// cannot be made, the loop runs on epoll instead, opened only then.
func (rg *ringDriver) start() (driver, error) {
	l := rg.l
	r, err := uring.New(ringEntries, ringCQEntries)
	if err != nil {
		l.eng.opts.logger.Warn("sluice: io_uring setup failed; this loop uses epoll", "loop", l.idx, "err", err)
		return rg.fallBack()
	}
	size := l.eng.opts.readBufferCap
	bufs, err := uring.NewBufRing(r, 0, ringBufCount(size), size)
	if err != nil {
		r.Close()
		l.eng.opts.logger.Warn("sluice: io_uring buffers failed; this loop uses epoll", "loop", l.idx, "err", err)
		return rg.fallBack()
	}
	rg.r, rg.bufs, rg.turns, rg.feed = r, bufs, 1, ringBufCount(size)/4
	if uring.RecvLimitWorks(r, bufs) {
		rg.recvLimit = uint32(recvLimitBufs * size)
	}
	// Receives run inside the loop's own io_uring_enter only with deferred
	// task work; otherwise the kernel might write a buffer as it is let go.
	rg.releases = r.Setup()&uring.SetupDeferTaskrun != 0
	rg.first, rg.rest = rg.sendResult, rg.completeRest
	if g := l.eng.opts.gatherWait; g > 0 && !r.MinWait() {
		l.eng.opts.logger.Warn("sluice: the kernel cannot gather events (Linux 6.12 can); WithGatherWait is ignored", "loop", l.idx)
	} else {
		rg.gather = g
	}
	for i := range rg.out {
		rg.out[i] = make([]byte, 0, size)
	}
	rg.armWake()
	for _, ln := range l.listeners {
		rg.add(ln.fd, poller.Readable)
	}
	return rg, nil
}

// fallBack hands the loop to a readiness driver on epoll, for a loop whose
// ring could not be made, and lets go of the ring's eventfd. Should epoll
// fail too, the ring driver stays, with nothing to serve with.
func (rg *ringDriver) fallBack() (driver, error) {
	pd, err := newPollDriver(rg.l)
	if err != nil {
		return rg, err
	}
	rg.close()
	return pd.start()
}

// turn is one io_uring_enter: it submits what the last turn queued and
// waits. After a failure, as the loop closes its connections, their
// descriptors are closed directly, and the ring, when it closes, cancels
// what it holds.
func (rg *ringDriver) turn() error {
	l := rg.l
	rg.releaseIdle()
	// A gathering loop may hold its waits (heldwait.go); one that gathers
	// for longer than heldMost never does.
	timeout, held := l.sleep(rg.gather > 0 && rg.gather <= heldMost)
	rg.r.SetHeld(held)
	var err error
	if rg.gathers(timeout) {
		err = rg.r.SubmitAndGather(gatherMost, timeout, rg.gather)
	} else {
		err = rg.r.SubmitAndWait(1, timeout)
	}
	rg.armed = false
	l.awake(!rg.r.Pending())
	if err != nil {
		rg.failed = true
		return err
	}
	rg.pk.out.submitted(l.eng.opts.wipe)
	rg.reap()
	return nil
}

// gatherMost is how many completions end a gathering wait early: a turn
// that has that many has enough to do.
const gatherMost = 64

// gathers reports whether the turn's wait, of timeout, gathers events
// (WithGatherWait): not when the loop has work queued (a timeout of zero),
// receives still to arm again (rearmStarved), or completions ready in the
// kernel, which the wait would otherwise hold back for the gathering time
// rather than hand over at once: gathering is for a loop that would sleep
// anyway. Nor when the turn arms a receive, an accept, a connect or a
// poll (armed): the kernel may complete it as the enter submits it, with
// what was ready before the wait began (a new connection's first request,
// sent as it connected), which the gathering time would then hold back.
func (rg *ringDriver) gathers(timeout time.Duration) bool {
	return rg.gather > 0 && timeout != 0 && !rg.armed && rg.fed == len(rg.starved) && !rg.r.Ready()
}

// wake writes the eventfd the ring polls. It is safe from any goroutine.
func (rg *ringDriver) wake() error {
	return eventfd.Signal(rg.wakefd)
}

// defersWatch is false: a connection's receive is armed as it opens,
// which costs no system call.
func (rg *ringDriver) defersWatch() bool { return false }

// ringIdleRelease is how long a loop receives nothing before it gives the
// memory of its receive buffers back to the system, and lets go of output
// buffers a burst grew. Taking the pages again costs a fault each when
// traffic resumes, about 64 µs where receives of 64 bytes had touched one
// page of each of 64 buffers: an idle spell this long pays for it a
// thousand times over.
const ringIdleRelease = 100 * time.Millisecond

// received notes that a receive touched a buffer, which goes back to the
// system once the loop has received nothing for ringIdleRelease. It arms
// the ring's timer for that unless armed: a timer armed now and then costs
// less than a wait with a timeout, which arms one in the kernel each turn.
func (rg *ringDriver) received(now int64) {
	if !rg.releases {
		return
	}
	rg.idleAt = now + int64(ringIdleRelease)
	if !rg.idleTimer {
		rg.idleTimer = true
		rg.r.PrepTimeout(ringIdleRelease, userData(opIdle, 0, 0))
	}
}

// idleExpired handles the ring's timer: the timer is armed again for when
// the buffers will be due if the loop has received since it was armed.
// Otherwise they are due, and releaseIdle gives them back before the loop
// next waits; not here, in the middle of a turn, where a receive later in
// the same batch may name a buffer the kernel has already filled.
func (rg *ringDriver) idleExpired() {
	l := rg.l
	rg.idleTimer = false
	if now := l.now(); rg.idleAt != 0 && now < rg.idleAt {
		rg.idleTimer = true
		rg.r.PrepTimeout(time.Duration(rg.idleAt-now), userData(opIdle, 0, 0))
	}
}

// releaseIdle gives back the memory of the loop's receive buffers, and
// lets go of grown output buffers, once they are due. It runs between
// turns, when every buffer handed over has been recycled, and only with no
// completion waiting to be consumed, since one could be a receive into a
// buffer the kernel has filled (receives still to run take their buffers
// after this, in the loop's own next io_uring_enter). The output buffers
// go only with no send of the turn waiting to be submitted from them.
func (rg *ringDriver) releaseIdle() {
	l := rg.l
	if rg.idleAt == 0 || rg.idleTimer || rg.r.Pending() {
		return
	}
	rg.idleAt = 0
	if err := errors.Join(rg.bufs.Release(), rg.releasePackets()); err != nil {
		l.eng.opts.logger.Warn("sluice: releasing idle io_uring buffers failed", "loop", l.idx, "err", err)
	}
	if len(rg.sends[rg.turns&1]) > 0 {
		return // the output buffers wait for the next idle spell
	}
	size := l.eng.opts.readBufferCap
	for i, out := range rg.out {
		if cap(out) > size {
			rg.dropOutput(out)
			rg.out[i] = make([]byte, 0, size)
		}
	}
	rg.outgrown = false // the turn's buffer was let go, not outgrown
}

// dropOutput lets go of an output buffer, wiped first WithWipeBuffers.
func (rg *ringDriver) dropOutput(out []byte) {
	l := rg.l
	if l.eng.opts.wipe {
		clear(out[:cap(out)])
	}
	l.eng.letGo(cap(out))
}

// turn handles what the last wait brought. The results of the sends it
// submitted come first, in a pass that consumes nothing, so that the rest
// of a short send is queued before any callback can write more behind it;
// every other send of the last turn went whole, and its connection may
// send directly again.
func (rg *ringDriver) reap() {
	l := rg.l
	grow := rg.outgrown
	rg.outgrown = false
	rg.turns++
	out := &rg.out[rg.turns&1]
	if l.eng.opts.wipe {
		clear((*out)[:cap(*out)])
	}
	l.wbuf = (*out)[:0]
	if rg.r.Overflowed() {
		rg.overflowTurn(grow)
	} else {
		rg.peeked = rg.r.PeekCQEs(rg.first)
		rg.settle(grow)
		rg.r.ForEachCQE(rg.rest)
	}
	rg.rearmStarved()
}

// overflowTurn handles a turn that began with completions held back by
// the kernel, the queue having been full: a send's failure may be among
// them, out of the first pass's sight. Every completion is handled in
// order, the held-back ones moved in as room is made, and only then are
// the last turn's sends settled. Callbacks meanwhile find their
// connection's send unsettled and queue behind it, as they may.
func (rg *ringDriver) overflowTurn(grow bool) {
	rg.peeked = 0
	for {
		rg.r.ForEachCQE(rg.rest)
		if !rg.r.Overflowed() {
			break
		}
		if err := rg.r.Submit(); err != nil {
			break // the next wait reports it
		}
	}
	rg.settle(grow)
}

// rearmStarved arms again, oldest first, receives that ended for want of
// a buffer, a quarter of the buffer ring's worth a turn: every buffer is
// back by the turn's end, but armed all at once, with bytes waiting, they
// would take each other's buffers in the next, each that found none would
// end again, and the loop would spend its turns re-arming: measured with
// 32 buffers and 1,000 busy connections, 23 failed receives for each that
// brought bytes and 60% of the throughput, where armed this way it is 0.2
// and all of it. Only receives armed here count: one that closed since,
// is not read for now (it is armed again when it is), or was armed again
// another way is passed over, so that while any is left one is armed,
// whose bytes wake the loop for the next.
func (rg *ringDriver) rearmStarved() {
	armed := 0
	for ; rg.fed < len(rg.starved) && armed < rg.feed; rg.fed++ {
		c := rg.starved[rg.fed]
		rg.starved[rg.fed] = nil
		c.ds.armed &^= armedStarved
		if c.state != stateClosed && c.events&poller.Readable != 0 && c.ds.armed&armedRead == 0 {
			rg.modify(c.fd, c.events, c.events)
			armed++
		}
	}
	// The armed part goes, so that a queue never empty under steady load
	// does not grow with it.
	if rg.fed > len(rg.starved)/2 {
		n := copy(rg.starved, rg.starved[rg.fed:])
		clear(rg.starved[n:])
		rg.starved, rg.fed = rg.starved[:n], 0
	}
}

// starve queues c, whose receive ended for want of a buffer, to be armed
// again by rearmStarved, unless it is queued already.
func (rg *ringDriver) starve(c *conn) {
	if c.ds.armed&armedStarved == 0 {
		c.ds.armed |= armedStarved
		rg.starved = append(rg.starved, c)
	}
}

// maxTurnOutput bounds how far a turn's output buffer grows.
const maxTurnOutput = 2 * ringBufBytes

// sendResult handles a completion if it is a send's.
func (rg *ringDriver) sendResult(e uring.CQE) {
	if kind, gen, fd := splitUserData(e.UserData); kind == opSend || kind == opSendOdd {
		rg.sendFailed(fd, gen, int(kind-opSend), e)
	}
}

// completeRest handles a completion the first pass of the turn did not.
func (rg *ringDriver) completeRest(e uring.CQE) {
	if rg.peeked > 0 {
		rg.peeked--
		if kind, _, _ := splitUserData(e.UserData); kind == opSend || kind == opSendOdd {
			return
		}
	}
	rg.complete(e)
}

// settle ends the last turn's sends, whose results are in, and empties
// their list, wiping their bytes WithWipeBuffers (some may lie in arrays
// of their own, where the turn outgrew its buffer). A list that grew large
// in a burst is let go once a turn uses little of it, rather than kept at
// its peak for good, or dropped every turn of a steady load. The last
// turn's output buffer, free now, grows if the turn outgrew it.
func (rg *ringDriver) settle(grow bool) {
	l := rg.l
	list := &rg.sends[(rg.turns-1)&1]
	n := len(*list)
	for _, s := range *list {
		s.c.ds.armed &^= armedSend
		switch {
		case s.buf != nil:
			l.eng.recycle(&l.eng.outPool, s.buf)
		case l.eng.opts.wipe:
			clear(s.p)
		}
	}
	clear(*list)
	*list = (*list)[:0]
	if cap(*list) > maxKeptSends && n < cap(*list)/4 {
		*list = nil
	}
	for i, c := range rg.unsettled {
		rg.unsettled[i] = nil
		switch {
		case c.state == stateClosed || rg.sending(c):
		case c.out == nil:
			rg.sentWhole(c)
		default:
			// Output queued behind the send: the poll that was to say
			// when it may go was spent while the send was in flight.
			rg.armWrite(c.fd, &c.ds)
		}
	}
	rg.unsettled = rg.unsettled[:0]
	if last := &rg.out[(rg.turns-1)&1]; grow && cap(*last) < maxTurnOutput {
		rg.dropOutput(*last)
		*last = make([]byte, 0, min(2*cap(*last), maxTurnOutput))
	}
}

// maxKeptSends is the most entries a turn's send list keeps for good.
const maxKeptSends = 1024

// close submits what the last turn queued, closes among it, and closes
// the ring, which cancels whatever is still armed; then the eventfd. After
// a failed turn nothing is submitted: the descriptors the entries name
// were closed directly, and their numbers may be another's by now.
func (rg *ringDriver) close() {
	for _, r := range rg.retired {
		if r.dup >= 0 {
			unix.Close(r.dup)
		}
	}
	rg.retired = nil
	if rg.r != nil {
		if !rg.failed {
			rg.r.Submit()
		}
		rg.r.Close()
		rg.r = nil
	}
	unix.Close(rg.wakefd)
}

// armWake watches the eventfd other goroutines write to wake the loop. The
// poll is multishot and the eventfd never read: each write wakes the poll
// again, so a wake costs the loop no system call.
func (rg *ringDriver) armWake() {
	rg.r.PrepPollMultishot(rg.wakefd, unix.POLLIN, userData(opWake, 0, 0))
}

// stopAccepts cancels the listeners' accepts as the loop drains, before it
// closes them, and shuts the listeners down. An armed accept holds its
// listener open, and lets go only when its cancellation completes, in a
// later turn or, once the loop has stopped, when the kernel tears the ring
// down in the background; until then the port stayed bound, and a server
// restarted at once failed to listen. Shut down, the listener leaves the
// port at once. A listener another process may serve too (shared) is not
// shut down, which would stop it there as well.
func (rg *ringDriver) stopAccepts() {
	l := rg.l
	if rg == nil {
		return
	}
	for _, ud := range rg.accepts {
		rg.r.PrepCancel(ud, userData(opIgnore, 0, 0))
	}
	rg.accepts = rg.accepts[:0]
	for _, ln := range l.listeners {
		if !l.eng.shared(ln) {
			unix.Shutdown(ln.fd, unix.SHUT_RDWR)
		} else if !l.draining && ln.ds.armed&armedRead != 0 {
			rg.retire(ln)
		}
	}
}

// slot returns the ring's record of fd's present holder, a connection or
// a listener, or nil when it has none.
func (rg *ringDriver) slot(fd int) *ringSlot {
	l := rg.l
	if fd < len(l.conns) && l.conns[fd] != nil {
		return &l.conns[fd].ds
	}
	if ln := rg.listener(fd); ln != nil {
		return &ln.ds
	}
	return nil
}

// current returns the record of fd's present holder if a completion with
// gen is for it, and nil if the completion is for an earlier one.
func (rg *ringDriver) current(fd int, gen uint32) *ringSlot {
	if rs := rg.slot(fd); rs != nil && rs.gen&genMask == gen {
		return rs
	}
	return nil
}

// add starts serving fd, a connection already in the loop's table or a
// listener, on the ring.
func (rg *ringDriver) add(fd int, ev poller.Event) error {
	rg.gens++
	*rg.slot(fd) = ringSlot{gen: rg.gens}
	return rg.modify(fd, 0, ev)
}

// modify arms what ev asks for and the ring lacks, and cancels the
// receive or accept when ev no longer asks to read. A poll for writable
// left armed when output drains is harmless: it finds nothing queued.
func (rg *ringDriver) modify(fd int, old, ev poller.Event) error {
	l := rg.l
	st := rg.slot(fd)
	kind := opRecv
	if rg.listener(fd) != nil {
		kind = opAccept
	}
	ud := userData(kind, st.gen, fd)
	switch {
	case ev&poller.Readable != 0 && st.armed&armedRead == 0:
		if kind == opRecv && l.conns[fd].flags&(flagHeld|flagEOF) != 0 {
			break // handOver arms it once what is held is handed over
		}
		st.armed |= armedRead
		rg.armed = true
		if kind == opAccept {
			rg.r.PrepAcceptMultishot(fd, ud)
			if !slices.Contains(rg.accepts, ud) {
				rg.accepts = append(rg.accepts, ud)
			}
		} else {
			switch {
			case l.conns[fd].flags&flagThrottled != 0:
				rg.r.PrepRecv(fd, rg.bufs, ud)
			case rg.recvLimit > 0:
				rg.r.PrepRecvMultishot(fd, rg.bufs, ud).SetRecvLimit(rg.recvLimit)
			default:
				rg.r.PrepRecvMultishot(fd, rg.bufs, ud)
			}
		}
	case ev&poller.Readable == 0 && st.armed&(armedRead|armedCancel) == armedRead:
		st.armed |= armedCancel
		rg.r.PrepCancel(ud, userData(opIgnore, 0, 0))
	}
	if ev&poller.Writable != 0 {
		rg.armWrite(fd, st)
	}
	return nil
}

// connect starts c's connect to the address d names with an
// IORING_OP_CONNECT, whose completion carries the result (ringConnected).
func (rg *ringDriver) connect(c *conn, d *dialSpec) {
	l := rg.l
	if err := d.raw.Set(d.ep.Sockaddr()); err != nil {
		l.closeConn(c, err)
		return
	}
	rg.gens++
	c.ds = ringSlot{gen: rg.gens, armed: armedConnect}
	rg.armed = true
	rg.r.PrepConnect(c.fd, d.raw.Pointer(), d.raw.Len(), userData(opConnect, c.ds.gen, c.fd))
}

// ringConnected handles the end of a dial's connect on the ring.
func (rg *ringDriver) ringConnected(fd int, gen uint32, e uring.CQE) {
	l := rg.l
	st := rg.current(fd, gen)
	if st == nil || st.armed&armedConnect == 0 {
		return
	}
	st.armed &^= armedConnect
	c := l.conns[fd]
	if err := e.Err(); err != nil {
		l.closeConn(c, os.NewSyscallError("connect", err))
		return
	}
	l.connected(c)
}

// sending reports whether c has a send on the ring whose result is still
// to come: its output has not drained yet, whatever c.pending says.
func (rg *ringDriver) sending(c *conn) bool {
	return c.ds.armed&armedSend != 0
}

// armReceive arms c's receive if c is read and has none armed.
func (rg *ringDriver) armReceive(c *conn) {
	rg.modify(c.fd, c.events, c.events)
}

// armWrite asks to hear when fd, held by st's owner, may take more output,
// unless it has.
func (rg *ringDriver) armWrite(fd int, st *ringSlot) {
	if st.armed&armedWrite == 0 {
		st.armed |= armedWrite
		rg.armed = true
		rg.r.PrepPollAdd(fd, unix.POLLOUT, userData(opPollOut, st.gen, fd))
	}
}

// sendOut sends p, the output of c's running callback, and returns how
// much went, or -1 when c closed. The send goes with the turn's others,
// and all of p counts as sent: a send that comes back short has its rest
// queued (sendFailed) before any callback of the next turn runs. Until
// then c's further output is queued behind it.
func (rg *ringDriver) sendOut(c *conn, p []byte) int {
	l := rg.l
	if c.ds.armed&armedSend != 0 {
		return 0
	}
	if rg.now {
		return l.write(c, p)
	}
	rg.ringSend(c, pendingSend{c: c, p: p})
	return len(p)
}

// ringSend queues s, one of c's sends, with the turn's others.
func (rg *ringDriver) ringSend(c *conn, s pendingSend) {
	l := rg.l
	list := &rg.sends[rg.turns&1]
	c.ds.armed |= armedSend
	c.ds.send = uint32(len(*list))
	*list = append(*list, s)
	// MSG_WAITALL makes a short send a failure, so that SkipSuccess posts
	// a completion for it and none for a send that took everything.
	const flags = unix.MSG_DONTWAIT | unix.MSG_WAITALL | unix.MSG_NOSIGNAL
	kind := opSend + opKind(rg.turns&1)
	rg.r.PrepSend(c.fd, s.p, flags, userData(kind, c.ds.gen, c.fd)).SetFlags(uring.SkipSuccess)
	l.counts.addN(countBytesOut, len(s.p)) // and off again for what a short send gives back
	l.sent(c)
}

// sendQueued sends what c has queued, unless a send on the ring is still
// in flight ahead of it: the bytes stay in order, and the writable path
// sends them after it. On the ring, output queued outside c's callbacks,
// as a relay writes it, goes with the turn's other sends rather than in a
// system call of its own: the send takes c's buffer, which stays in place
// until the send's result is in, and c starts another for anything written
// meanwhile. Conn.Flush writes at once.
func (rg *ringDriver) sendQueued(c *conn) {
	l := rg.l
	switch {
	case c.out == nil || rg.sending(c):
	case rg.now:
		l.flushOut(c)
	default:
		s := pendingSend{c: c, p: c.out.B[c.outHead:], buf: c.out}
		c.out, c.outHead = nil, 0
		rg.ringSend(c, s)
	}
}

// flush sends c's output for Conn.Flush. It writes at once, so that a
// failure is Flush's to report, as on a readiness poller.
func (rg *ringDriver) flush(c *conn) {
	l := rg.l
	rg.now = true
	l.flushQueued(c)
	l.send(c)
	rg.now = false
}

// spent moves the loop's write buffer past the output just handed to the
// ring, which must stay in place until the ring is done with it. It notes
// when the turn has written more than its output buffer holds, which moved
// the write buffer to an array of its own: the next turn then grows the
// buffer, so that turns alike send without allocating (1,000 connections
// echoing 16 KiB had allocated about once per round trip, at 0.8x epoll's
// rate).
func (rg *ringDriver) spent() {
	l := rg.l
	w := l.wbuf
	if len(w) > 0 && !rg.outgrown {
		out := rg.out[rg.turns&1]
		rg.outgrown = &w[:cap(w)][cap(w)-1] != &out[:cap(out)][cap(out)-1]
	}
	if len(w) > 0 && l.eng.opts.wipe && !rg.handedOver(w) {
		clear(w) // written at once, copied to the connection, or dropped
	}
	l.wbuf = w[len(w):]
}

// handedOver reports whether w is the bytes of the turn's last send, which
// stay until the send settles, wiped then WithWipeBuffers.
func (rg *ringDriver) handedOver(w []byte) bool {
	list := rg.sends[rg.turns&1]
	return len(list) > 0 && len(list[len(list)-1].p) > 0 && &list[len(list)-1].p[0] == &w[0]
}

// awaitSent reports whether c, closing gracefully, has a send whose result
// is still to come, and if so asks to hear when c may take more output,
// which is after that result: c closes then if nothing came back.
func (rg *ringDriver) awaitSent(c *conn) bool {
	if c.ds.armed&armedSend == 0 {
		return false
	}
	rg.armWrite(c.fd, &c.ds)
	return true
}

// sendFailed queues, in front of whatever c queued since, the part of a
// send of the turn of parity odd that the socket did not take, or closes c
// if the send failed.
func (rg *ringDriver) sendFailed(fd int, gen uint32, odd int, e uring.CQE) {
	l := rg.l
	if rg.current(fd, gen) == nil || fd >= len(l.conns) || l.conns[fd] == nil {
		return
	}
	c := l.conns[fd]
	list := rg.sends[odd]
	if int(c.ds.send) >= len(list) || list[c.ds.send].c != c {
		return // not c's: its send was settled as whole, which a failure never is
	}
	n := 0
	s := &list[c.ds.send]
	switch err := e.Err(); err {
	case nil:
		n = int(e.Res)
	case unix.EAGAIN, unix.EINTR:
	default:
		l.counts.sub(countBytesOut, len(s.p))
		l.socketFailed(c, os.NewSyscallError("write", err))
		return
	}
	rest := s.p[n:]
	l.counts.sub(countBytesOut, len(rest)) // counted again when it goes
	out, head := s.buf, 0
	if out != nil {
		// The send took c's buffer, whose tail the rest is: it is c's
		// again, rather than the rest copied, which would cost a large
		// write taken in part a copy for each part. The send no longer
		// holds its bytes, so settling it wipes nothing.
		s.buf, s.p, head = nil, nil, len(out.B)-len(rest)
	} else {
		out = l.eng.outPool.Get()
		out.B = append(out.B, rest...)
	}
	if c.out != nil {
		out.B = append(out.B, c.out.B[c.outHead:]...)
		l.eng.recycle(&l.eng.outPool, c.out)
	}
	c.out, c.outHead = out, head
	l.watch(c)
	if c.state != stateClosed {
		rg.armWrite(fd, &c.ds)
	}
}

// closeSocket closes c's descriptor. It first cancels what is armed on
// it, which holds the socket open, and closes it in the same submission,
// so the number is not reused before the cancellation has found its
// operations. It cancels each operation by its user data, which the
// kernel finds by hash: a cancel by descriptor walks every armed
// operation of the ring, and closing 10,000 connections that way took 6 s
// where closing them directly took 1.5. After a failed turn it closes the
// descriptor directly.
func (rg *ringDriver) closeSocket(c *conn) {
	if rg.failed {
		unix.Close(c.fd)
		return
	}
	st := &c.ds
	if st.armed&(armedRead|armedCancel) == armedRead {
		rg.r.PrepCancel(userData(opRecv, st.gen, c.fd), userData(opIgnore, 0, 0))
	}
	if st.armed&armedWrite != 0 {
		rg.r.PrepCancel(userData(opPollOut, st.gen, c.fd), userData(opIgnore, 0, 0))
	}
	if st.armed&armedConnect != 0 {
		rg.r.PrepCancel(userData(opConnect, st.gen, c.fd), userData(opIgnore, 0, 0))
	}
	rg.r.PrepClose(c.fd, userData(opIgnore, 0, 0)).SetFlags(uring.SkipSuccess)
}

// listener returns the loop's listener on fd, if fd is one.
func (rg *ringDriver) listener(fd int) *listener {
	l := rg.l
	for _, ln := range l.listeners {
		if ln.fd == fd {
			return ln
		}
	}
	return nil
}

// complete handles one completion.
func (rg *ringDriver) complete(e uring.CQE) {
	kind, gen, fd := splitUserData(e.UserData)
	switch kind {
	case opWake:
		if !e.More() {
			rg.armWake()
		}
	case opAccept:
		rg.ringAccepted(fd, gen, e)
	case opRecv:
		rg.ringReceived(fd, gen, e)
	case opPollOut:
		rg.ringWritable(fd, gen)
	case opSend, opSendOdd:
		rg.sendFailed(fd, gen, int(kind-opSend), e)
	case opIdle:
		rg.idleExpired()
	case opConnect:
		rg.ringConnected(fd, gen, e)
	case opPacket:
		rg.ringPacketsReady(fd, gen, e)
	case opPacketSent:
		rg.ringPacketSendFailed(fd, gen, e)
	}
}

// ended notes that fd's multishot operation posted its last completion,
// and reports whether that completion is for fd's present holder.
func (rg *ringDriver) ended(fd int, gen uint32, e uring.CQE) bool {
	st := rg.current(fd, gen)
	if st == nil {
		return false
	}
	if !e.More() {
		st.armed &^= armedRead | armedCancel
	}
	return true
}

func (rg *ringDriver) ringAccepted(fd int, gen uint32, e uring.CQE) {
	l := rg.l
	ln := rg.listener(fd)
	if !rg.ended(fd, gen, e) {
		if i := rg.retiredAt(fd, gen); i >= 0 {
			if e.Res >= 0 {
				rg.ringAccept(rg.retired[i].ln, int(e.Res))
			}
			if !e.More() {
				rg.unretire(i)
			}
			return
		}
	}
	switch {
	case e.Res >= 0:
		rg.ringAccept(ln, int(e.Res))
	case ln != nil:
		l.acceptFailed(ln, e.Err())
	}
	if ln != nil && !e.More() && l.acceptAt == 0 && !l.draining {
		rg.modify(fd, 0, poller.Readable)
	}
}

// retired is a listener closed by Engine.StopAccepting while its
// multishot accept was armed: a shared socket's, which other processes
// serve on. Connections the accept took before its cancellation are still
// this loop's, and the engine still serves, so they are opened rather
// than closed, which would drop clients a process handing over its
// listeners has already accepted. And the accept may have taken the
// socket's wake-up for a connection it then never accepted: the kernel
// wakes one waiting accept, not every process's, so the others would not
// hear of it until the next one came. A copy of the socket is kept until
// the accept's last completion, when the loop takes what is queued.
type retired struct {
	ln  *listener
	fd  int    // its descriptor's number when it was open
	gen uint32 // its generation then
	dup int    // a copy of its descriptor, closed with the accept's last completion
}

// retire keeps ln, a shared listener about to close with its accept
// cancelled, until the accept's last completion.
func (rg *ringDriver) retire(ln *listener) {
	dup, err := unix.FcntlInt(uintptr(ln.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		dup = -1 // the connections the accept brings are still served
	}
	rg.retired = append(rg.retired, retired{ln, ln.fd, ln.ds.gen & genMask, dup})
}

// retiredAt returns the index of the retired listener an accept's
// completion names, or -1.
func (rg *ringDriver) retiredAt(fd int, gen uint32) int {
	for i, r := range rg.retired {
		if r.fd == fd && r.gen == gen {
			return i
		}
	}
	return -1
}

// unretire forgets the i-th retired listener, whose accept has ended:
// while the engine still serves it takes the connections queued on the
// socket (bounded, as the development backend's are), then closes its
// copy.
func (rg *ringDriver) unretire(i int) {
	l := rg.l
	r := rg.retired[i]
	rg.retired = slices.Delete(rg.retired, i, i+1)
	if r.dup < 0 {
		return
	}
	for range maxAcceptsAtStop {
		if l.draining {
			break
		}
		fd, remote, err := socket.Accept(r.dup)
		if err != nil {
			break
		}
		l.accepted(r.ln, fd, remote)
	}
	unix.Close(r.dup)
}

// ringAccept takes a socket a multishot accept made. The ring does not
// report the peer's address, so it costs a getpeername. That fails for a
// connection the peer reset before it was accepted; it is opened all the
// same, with the unspecified address as its remote one, as accept4 on
// epoll opens it (with its address), so that both count it and tell the
// handler of the reset.
func (rg *ringDriver) ringAccept(ln *listener, fd int) {
	l := rg.l
	if ln == nil {
		unix.Close(fd) // accepted by a listener since closed
		return
	}
	sa, err := unix.Getpeername(fd)
	if err != nil && !ln.unix {
		sa = &unix.SockaddrInet6{} // "[::]:0": the address is lost with the connection
	}
	l.accepted(ln, fd, socket.AddrPort(sa))
}

// ringReceived handles a receive's completion, and gives the buffer it
// names back once the bytes have been handed over.
func (rg *ringDriver) ringReceived(fd int, gen uint32, e uring.CQE) {
	l := rg.l
	id, hasBuf := e.Buffer()
	if !hasBuf {
		rg.ringReceive(fd, gen, e, nil)
		return
	}
	n := max(e.Res, 0)
	rg.ringReceive(fd, gen, e, rg.bufs.Buf(id)[:n:n])
	rg.bufs.Recycle(id)
	rg.received(l.now())
}

// ringReceive handles a receive that brought p, or ended. Bytes for a
// connection closed since, as when an earlier completion of the same turn
// closed it, are dropped unseen, wiped first WithWipeBuffers, as arrived
// wipes what it hands over.
func (rg *ringDriver) ringReceive(fd int, gen uint32, e uring.CQE, p []byte) {
	l := rg.l
	if !rg.ended(fd, gen, e) || fd >= len(l.conns) || l.conns[fd] == nil {
		if l.eng.opts.wipe {
			clear(p)
		}
		return
	}
	c := l.conns[fd]
	switch err := e.Err(); {
	case e.Res > 0:
		l.arrived(c, p)
	case e.Res == 0:
		l.peerClosed(c)
		return
	case err == unix.ENOBUFS:
		// It ended the receive; rearmStarved arms it again.
		l.counts.add(countRingBuffersExhausted)
		rg.starve(c)
		return
	case err == unix.ECANCELED:
	default:
		l.readFailed(c, err)
		return
	}
	if c.state != stateClosed && !e.More() && c.events&poller.Readable != 0 {
		rg.modify(fd, c.events, c.events)
	}
}

func (rg *ringDriver) ringWritable(fd int, gen uint32) {
	l := rg.l
	st := rg.current(fd, gen)
	if st == nil {
		return
	}
	st.armed &^= armedWrite
	c := l.conns[fd]
	switch {
	case c == nil:
		return
	case rg.sending(c):
		// c has a send whose result is still to come, and may have
		// output queued behind it, which must not be written ahead of
		// it: the poll may be one armed in an earlier turn, behind a
		// send that went whole, that completed in the turn whose
		// callbacks handed c's next output to the ring, not submitted
		// yet, and queued more behind that; or, armed after c's send,
		// it completed within the turn that submitted both, as when a
		// full submission queue is submitted mid-turn. c is looked at
		// once the send settles: until then it would be taken as still
		// sending, waiting for a poll it has spent.
		rg.unsettled = append(rg.unsettled, c)
		return
	case c.out == nil:
		rg.sentWhole(c)
		return
	}
	l.writable(c)
	if c.state != stateClosed && c.events&poller.Writable != 0 {
		// Still more to send: the poll was one-shot.
		rg.modify(fd, c.events, c.events)
	}
}

// sentWhole handles c, whose last send went whole, as a poll for writable
// finds it: a closing connection moves on to linger, an open one is
// watched for what it wants now and shut for writing if it asked.
func (rg *ringDriver) sentWhole(c *conn) {
	l := rg.l
	switch c.state {
	case stateClosing:
		l.closeSent(c)
	case stateOpen, stateHandshake:
		l.watch(c)
		l.shutWrite(c)
	}
}
