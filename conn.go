package sluice

import (
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/proxyproto"
	"github.com/sluicenet/sluice/wheel"
)

// AsyncCallback is called on the connection's loop when posted work is
// done. err is nil on success, or ErrConnClosed when the connection
// closed, or for a write its write side did (CloseWrite), before the work
// ran.
type AsyncCallback func(c Conn, err error)

// Conn is one connection. Its methods are for the connection's own loop,
// that is, inside the handler's callbacks for it, except ID, AsyncWrite,
// AsyncWritev, Wake and Close, which are safe from any goroutine.
//
// Slices returned by Next and Peek alias the loop's buffers: they are valid
// until the callback returns. Copy what must outlive it.
type Conn interface {
	io.Reader
	io.Writer

	// Next returns the next n buffered inbound bytes and consumes them; n <= 0
	// means all of them. With fewer than n buffered it returns what there is
	// and io.ErrShortBuffer, and consumes nothing.
	Next(n int) ([]byte, error)
	// Peek is Next without consuming.
	Peek(n int) ([]byte, error)
	// Discard consumes up to n buffered inbound bytes (all for n <= 0) and
	// returns how many it consumed.
	Discard(n int) (int, error)
	// InboundBuffered returns how many inbound bytes are buffered.
	InboundBuffered() int

	// Writev queues several slices as one write: they count, and are
	// refused past WithMaxOutbound, together, and over TLS they are
	// sealed together, however many there are, wherever it is called.
	// Empty slices add nothing. The slices are copied before it returns.
	Writev(bs [][]byte) (int, error)
	// Flush sends queued output now rather than after the callback returns.
	// Output written to another connection from a callback goes when that
	// callback returns too, so a relay needs no Flush; on io_uring a Flush
	// is a write(2) of its own, where otherwise the output goes in the
	// loop's next io_uring_enter with everything else.
	Flush() error
	// OutboundBuffered returns how many bytes are queued but not yet sent:
	// those the socket did not take, and on the development backend those
	// its writer has yet to send, which a kernel socket would not have
	// taken either.
	OutboundBuffered() int
	// OutboundQueued returns, from any goroutine, how much output the
	// connection holds against its bound (WithMaxOutbound): what
	// AsyncWrite and AsyncWritev posted that its loop has yet to take
	// (with the task each posting, a Wake's too, takes, and the slice
	// headers of an AsyncWritev), and its unsent
	// output as its loop last saw it. Fan-out code asks it before it
	// builds a message for a connection that may be slow.
	OutboundQueued() int
	// Writable reports, from any goroutine, whether OutboundQueued is
	// not past the high-water mark (WithWriteBufferCap): whether the peer
	// is keeping up with what it is sent. Past it is where a DrainHandler
	// is owed OnDrain, once the output drains to half the mark: a false
	// answer is always followed by OnDrain while the connection is open,
	// however the output that made it false drains, also when the loop
	// sent it before anything the asking goroutine writes after.
	Writable() bool

	// Context returns the value set by SetContext.
	Context() any
	// SetContext attaches any per-connection value to the connection.
	SetContext(v any)
	// LocalAddr returns the local end's address; it makes a system call.
	// It is the socket's, even after a PROXY header: ProxyHeader has the
	// address the client reached.
	LocalAddr() net.Addr
	// RemoteAddr returns the peer's address. After a PROXY header that
	// relays a TCP connection (command PROXY, transport TCP4 or TCP6) it is
	// the original client's; after any other header (LOCAL, UNKNOWN) it
	// stays the socket's, as the specification asks. For a unix socket it
	// is the peer's path, when it has one, and makes a system call.
	RemoteAddr() net.Addr
	// ProxyHeader returns the PROXY protocol header the connection began
	// with, and false when it began with none (WithProxyProtocol). The
	// header's TLVs and Unix socket paths are the connection's own copies,
	// kept for its life, not views of its inbound bytes. On a UDP socket
	// (a listener's, or a datagram session's) it is the header of the
	// datagram being handled, whose TLVs view that datagram and last only
	// as long as the callback (PacketConn).
	ProxyHeader() (proxyproto.Header, bool)
	// ConnectionState returns the TLS connection's state (version, cipher
	// suite, ALPN protocol, the peer's certificates, whether it was
	// resumed), and false for a connection without TLS (ListenTLS,
	// WithTLS, DialTLS). The handler only ever sees a TLS connection whose
	// handshake is over.
	ConnectionState() (tls.ConnectionState, bool)
	// Fd returns the socket's descriptor, for setting options, or -1 once
	// OnClose has returned. Do not read, write or close it. On the
	// development backend (Windows, or the sluice_std build tag) it is the
	// engine's handle for the connection, not an OS descriptor.
	Fd() int
	// SetIdleTimeout closes the connection, with ErrIdleTimeout, once it
	// moves no bytes either way for d, counting from now; zero or less
	// turns the idle timeout off. It overrides WithIdleTimeout for this
	// connection, with the same 10ms resolution.
	SetIdleTimeout(d time.Duration)

	// ID returns the number that identifies the connection within its
	// engine, for Engine.Kill. No other connection has it while this one
	// is open, and a later one only after this one's slot in the engine's
	// table has been reused 2^32 times.
	ID() uint64
	// AsyncWrite queues p from any goroutine and calls cb on the loop once it
	// is queued behind earlier output. p must not change until cb runs. cb
	// may be nil. p counts against the connection's bound on queued output
	// (WithMaxOutbound) from the moment it is posted, with the 144 or so
	// bytes its posting takes, so that many small or empty writes are
	// bounded too: past the bound it returns ErrOutboundFull and queues
	// nothing. It returns
	// ErrEngineStopped when the engine no longer runs. On either error cb
	// never runs.
	AsyncWrite(p []byte, cb AsyncCallback) error
	// AsyncWritev is AsyncWrite for several slices, which count and are
	// refused together, and are sealed together over TLS. Until the loop
	// takes them each slice counts its header as well as its bytes (24
	// bytes on 64-bit systems), as the posting holds it: a million empty
	// slices count 24 MB, not nothing, so that a goroutine posting them
	// faster than the loop runs them is bounded too. Bs must not change
	// until cb runs.
	AsyncWritev(bs [][]byte, cb AsyncCallback) error
	// Wake runs OnTraffic for the connection on its loop, then cb. Until
	// it runs, the 144 or so bytes its posting takes count against the
	// connection's bound on queued output (WithMaxOutbound), as an empty
	// AsyncWrite does, so that a goroutine waking a connection faster
	// than its OnTraffic runs cannot grow the loop's queue without
	// bound: past the bound it returns ErrOutboundFull and cb never runs.
	Wake(cb AsyncCallback) error
	// Close closes the connection gracefully, as the Close action does:
	// once its queued output is sent, and the peer's end of stream read
	// or WithLingeringClose's bound reached. Only the first call asks the
	// loop for anything: later ones, from any goroutine, and those after
	// the connection closed, return nil at once, so that code that closes
	// on every error it sees cannot flood the loop with requests. It
	// returns ErrEngineStopped when the engine no longer runs.
	Close() error

	// Loop returns the event loop that owns the connection, for
	// Loop.Dial and Loop.Execute.
	Loop() Loop
	// Origin tells whether the connection was accepted, dialed or
	// enrolled.
	Origin() Origin
	// ListenerAddr returns the address of the listener that accepted the
	// connection, as Engine.Addrs lists it, and nil for one dialed or
	// enrolled. It makes a system call.
	ListenerAddr() net.Addr

	// PauseRead stops reading the connection: no OnTraffic runs for it
	// until ResumeRead, except those Wake asks for, even when it is
	// called in OnTraffic with bytes left unread; what its peer sends
	// meanwhile waits in the kernel's socket buffer, which fills and
	// stops the peer. It composes with the engine's own pause for unsent
	// output (WithWriteBufferCap): reading resumes only when neither
	// holds it. Call it, and ResumeRead, on the connection's loop: in a
	// callback for it or for another connection of the same loop, or in
	// Loop.Execute.
	PauseRead() error
	// ResumeRead undoes PauseRead. Bytes the handler left unread are
	// offered again before more are read, and a peer that finished
	// sending while reading was paused is acted on only then.
	ResumeRead() error
	// CloseWrite sends what is queued, then shuts down the connection's
	// write side: the peer reads the end of the stream, and reading goes
	// on. Writes after it fail with ErrConnClosed. Once the peer has
	// finished sending too, the connection closes.
	CloseWrite() error
	// SetHalfClose says what the peer's end of stream does (WithHalfClose
	// sets the engine's default): with on false the connection closes once
	// its queued output is sent; with on true it stays open for writing,
	// reading stops, and OnHalfClose runs if the handler is a
	// HalfCloseHandler.
	SetHalfClose(on bool)

	// SetNoDelay turns Nagle's algorithm off (TCP_NODELAY) when true.
	SetNoDelay(noDelay bool) error
	// SetKeepAlive turns TCP keep-alive on: after idle without traffic the
	// kernel sends a probe every interval (zero: idle/5, at least a
	// second) and declares the peer dead when count (zero: 5) go
	// unanswered. An idle time of zero or less turns it off.
	SetKeepAlive(idle, interval time.Duration, count int) error
	// SetLinger sets what closing does with output the peer has yet to
	// take: with sec < 0, the default, it is sent in the background; with
	// sec == 0 every close is abortive: queued output is dropped, nothing
	// lingers, and the peer sees a reset. A positive time,
	// which would block the loop in close, is refused with an error that
	// matches errors.ErrUnsupported: the engine's lingering close
	// (WithLingeringClose) waits without blocking. Like the other setters,
	// it returns ErrConnClosed once OnClose has returned.
	SetLinger(sec int) error
	// SetReadBuffer and SetWriteBuffer size the socket's kernel buffers
	// (SO_RCVBUF, SO_SNDBUF).
	SetReadBuffer(bytes int) error
	SetWriteBuffer(bytes int) error
}

type connState uint8

const (
	stateOpen    connState = iota
	stateClosing           // sending what is queued, then lingering
	stateClosed
	stateHeader     // reading its PROXY header; the handler has not seen it
	stateLinger     // all sent and the write side shut down: discarding input until the peer's FIN
	stateConnecting // dialed, its connect not yet done: the handler has not seen it; ctx holds its *dialSpec
	stateHandshake  // its TLS handshake runs (tls.go): the handler has not seen it
)

// connFlags are a connection's yes-or-no facts.
type connFlags uint32

const (
	// flagSourced: counted against its source's limit.
	flagSourced connFlags = 1 << iota
	// flagEOF: the peer has finished sending.
	flagEOF
	// flagHeld: it holds inbound bytes the handler has yet to be offered
	// in full since it was last paused. On io_uring its receive is not
	// armed again until the loop has handed them over (handOver), so the
	// kernel is never asked for more while the engine still holds some.
	flagHeld
	// flagResumed: queued for the handover (eventloop.resumed).
	flagResumed
	// flagThrottled: it has been paused for its output. On io_uring it
	// receives one buffer per arming from then on, rather than with a
	// multishot receive, which, where the kernel cannot cap it, drains
	// the socket into every free buffer of the loop before a cancellation
	// can take effect: a connection paused holds at most one receive's
	// worth it has not handed over.
	flagThrottled
	// flagDialed and flagEnrolled: its Origin, Accepted when neither.
	flagDialed
	flagEnrolled
	// flagProxyOptional: in its PROXY header phase, plain traffic is
	// allowed too (ProxyOptional; the listener's mode).
	flagProxyOptional
	// flagReadPaused: the handler paused its reading (PauseRead).
	flagReadPaused
	// flagWriteClosed: CloseWrite was called; its write side shuts down
	// once its output is sent, which sets flagWriteShut.
	flagWriteClosed
	flagWriteShut
	// flagHalfClose: the peer's end of stream leaves it open for writing.
	// flagInputEnded: in that mode, the end has been acted on: every byte
	// before it offered, reading stopped, OnHalfClose called.
	flagHalfClose
	flagInputEnded
	// flagOverHigh: its unsent output passed the high-water mark, or
	// Writable reported false (drainOwed); the handler hears when it
	// drains (OnDrain), which queues it in eventloop.drained with
	// flagDrainQueued.
	flagOverHigh
	flagDrainQueued
	// flagAbort: SetLinger(0) asked for closes to reset.
	flagAbort
	// flagOutPaused: its unsent output passed the backpressure mark, and
	// it is not read until the output drains to half of it.
	flagOutPaused
	// flagEndWaits: its peer finished sending while the handler had left
	// bytes unread and output queued; the end waits for the output to
	// drain and the bytes to be offered again (eventloop.endWaits).
	flagEndWaits
	// flagByPeer and flagByStop: its close began with its peer's end of
	// stream, or with the engine's stop, rather than with the handler,
	// for Stats (countClose).
	flagByPeer
	flagByStop
	// flagWriteWaited: its write deadline passed and was set once more,
	// as TCP had yet to hear its peer make room (writeWaits); the next
	// write that moves bytes clears it.
	flagWriteWaited
)

// conn is kept small and flat: an idle connection holds no buffer, only
// this struct, its slot in the loop's table and in the engine's kill
// table, and its idle timer if it has one.
type conn struct {
	fd      int
	ds      driverSlot // what the loop's driver keeps for it
	state   connState
	events  poller.Event // what the poller watches for
	flags   connFlags
	acked   uint32 // the low bits of what TCP said its peer had acknowledged and offered to take when its write deadline last waited (writeWaits)
	loop    *eventloop
	id      uint64         // its kill.ConnID
	remote  netip.AddrPort // zero for a unix socket
	in      *bytebufferpool.ByteBuffer
	buf     []byte // unread inbound: a view of the loop's read buffer or of in
	out     *bytebufferpool.ByteBuffer
	outHead int // out.B[outHead:] is unsent; lingering, with out nil, the bytes discarded
	ctx     any
	ext     *connExt // what few connections have: a PROXY header, TLS

	// Queued output as other goroutines see it (OutboundQueued): bytes
	// AsyncWrite posted that the loop has yet to take, and the loop's
	// last look at the unsent output (watch).
	posted, held atomic.Int64
	// drainOwed: Writable reported false, so OnDrain is owed, however the
	// output that made it false drains; watch and unpost, which see it
	// fall, turn it into flagOverHigh.
	drainOwed atomic.Bool
	// closeAsked: Close has posted its task; later calls post none.
	closeAsked atomic.Bool
	// owed: closing, the bytes posted before its close began whose tasks
	// have yet to queue them (closeSent waits for them).
	owed int64

	// Deadlines (deadline.go). idle is the idle timeout, which idleTimer
	// is armed with whenever it is positive. Before the connection opens,
	// readTimer bounds the wait for its PROXY header.
	idle                             time.Duration
	idleTimer, readTimer, writeTimer wheel.Timer
	softTimer                        wheel.Timer // over WithOutboundSoftLimit since it was armed
}

func (c *conn) Read(p []byte) (int, error) {
	if len(c.buf) == 0 && len(p) > 0 {
		// The end of what is buffered now, not of the stream.
		return 0, io.EOF
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

func (c *conn) Next(n int) ([]byte, error) {
	b, err := c.Peek(n)
	if err == nil {
		c.buf = c.buf[len(b):]
	}
	return b, err
}

func (c *conn) Peek(n int) ([]byte, error) {
	if n <= 0 {
		return c.buf, nil
	}
	if n > len(c.buf) {
		return c.buf, io.ErrShortBuffer
	}
	return c.buf[:n:n], nil
}

func (c *conn) Discard(n int) (int, error) {
	if n <= 0 || n > len(c.buf) {
		n = len(c.buf)
	}
	c.buf = c.buf[n:]
	return n, nil
}

func (c *conn) InboundBuffered() int { return len(c.buf) }

func (c *conn) Write(p []byte) (int, error) {
	if c.full(len(p)) {
		return 0, ErrOutboundFull
	}
	return c.write(p)
}

// full reports whether n more bytes would take c's queued output past its
// bound (WithMaxOutbound), counting the refusal: what its loop holds and
// what AsyncWrite has posted for it.
func (c *conn) full(n int) bool {
	limit := c.loop.eng.opts.maxOutbound
	if limit == 0 || n == 0 || c.done() || c.OutboundBuffered()+int(c.posted.Load())+n <= limit {
		return false
	}
	c.loop.counts.add(countOutboundRefused)
	return true
}

// write queues p for c's peer, within its bound or not: the bytes of an
// AsyncWrite, counted when it was posted, come this way.
func (c *conn) write(p []byte) (int, error) {
	if c.done() || c.flags&flagWriteClosed != 0 {
		return 0, ErrConnClosed
	}
	l := c.loop
	switch {
	case l.cur == c && (c.out == nil || c.ext != nil && c.ext.sec != nil):
		// The common case: gather this callback's output in the loop's
		// buffer and send it in one write when the callback returns.
		// TLS gathers it also behind output already queued: it is sealed
		// into full records behind that (send), not one per Write.
		l.wbuf = append(l.wbuf, p...)
	case l.cur == c:
		c.queue(p)
	default:
		l.writeOther(c, p)
	}
	return len(p), nil
}

func (c *conn) Writev(bs [][]byte) (int, error) {
	n := size(bs)
	if c.full(n) {
		return 0, ErrOutboundFull // refused whole, not in part
	}
	if c.done() || c.flags&flagWriteClosed != 0 {
		return 0, ErrConnClosed
	}
	if c.loop.cur != c {
		c.loop.writevOther(c, bs)
		return n, nil
	}
	for _, b := range bs {
		c.write(b) // gathered in the loop's buffer, or appended to c's
	}
	return n, nil
}

func (c *conn) Flush() error {
	if c.done() {
		return ErrConnClosed
	}
	c.loop.drv.flush(c)
	if c.done() {
		return ErrConnClosed
	}
	return nil
}

func (c *conn) OutboundBuffered() int {
	n := c.pending()
	if c.loop.cur == c {
		n += len(c.loop.wbuf)
	}
	return n
}

func (c *conn) OutboundQueued() int { return int(c.posted.Load() + c.held.Load()) }

func (c *conn) Writable() bool {
	mark := c.loop.eng.opts.writeBufCap
	if c.OutboundQueued() <= mark {
		return true
	}
	// The loop may send what it counted, or take what was posted, before
	// the goroutine that asked writes anything: the answer is noted for
	// it, and then the count read again. The loop reads the note after
	// each fall in the count (watch, unpost), so either it sees the note,
	// or this second read sees the fall and the answer is true.
	c.drainOwed.Store(true)
	return c.OutboundQueued() <= mark
}

func (c *conn) Context() any     { return c.ctx }
func (c *conn) SetContext(v any) { c.ctx = v }
func (c *conn) Fd() int          { return c.fd }
func (c *conn) ID() uint64       { return c.id }

func (c *conn) SetIdleTimeout(d time.Duration) {
	if !c.done() {
		c.loop.setIdleTimeout(c, d)
	}
}

func (c *conn) LocalAddr() net.Addr {
	a, err := socket.LocalAddr(c.fd)
	if err != nil {
		return nil
	}
	return a
}

func (c *conn) RemoteAddr() net.Addr {
	if c.remote.IsValid() {
		return net.TCPAddrFromAddrPort(c.remote)
	}
	// A unix socket: the peer's path, which a dialed one has and an
	// accepted one usually does not.
	return &net.UnixAddr{Name: socket.UnixPeer(c.fd), Net: "unix"}
}

func (c *conn) ProxyHeader() (proxyproto.Header, bool) {
	if c.ext == nil || !c.ext.hasProxy {
		return proxyproto.Header{}, false
	}
	return c.ext.proxy, true
}

// connExt holds what few connections have, behind one pointer in conn,
// whose size class every idle connection pays for.
type connExt struct {
	proxy    proxyproto.Header // the PROXY header it began with, if hasProxy
	hasProxy bool
	sec      *tlsSession // its TLS: a TLS listener's connection, or one dialed with DialTLS
}

// extra returns c's connExt, making it on first use.
func (c *conn) extra() *connExt {
	if c.ext == nil {
		c.ext = new(connExt)
	}
	return c.ext
}

func (c *conn) AsyncWrite(p []byte, cb AsyncCallback) error {
	n := c.postedSize(len(p)) + int(postedTask)
	if !c.reserve(n) {
		return ErrOutboundFull
	}
	t := newTask(taskWrite, c)
	t.buf, t.cb = p, cb
	return c.postWrite(t, n)
}

func (c *conn) AsyncWritev(bs [][]byte, cb AsyncCallback) error {
	n := c.postedSize(size(bs)) + len(bs)*int(postedSlice) + int(postedTask)
	if !c.reserve(n) {
		return ErrOutboundFull
	}
	t := newTask(taskWritev, c)
	t.bufs, t.cb = bs, cb
	return c.postWrite(t, n)
}

// reserve counts n bytes an AsyncWrite or Wake posts, its task's among
// them (postedTask), against c's bound on queued output, before they are
// queued, and reports false, counting the refusal, when they would pass
// it. The loop takes them off (runTask) when it runs the task.
func (c *conn) reserve(n int) bool {
	limit := int64(c.loop.eng.opts.maxOutbound)
	for {
		posted := c.posted.Load()
		if limit > 0 && n > 0 && posted+c.held.Load()+int64(n) > limit {
			c.loop.counts.add(countOutboundRefused)
			return false
		}
		if c.posted.CompareAndSwap(posted, posted+int64(n)) {
			return true
		}
	}
}

// postedSize returns how much a posted write of n bytes counts against
// c's bound on queued output until the loop takes it: over TLS, what it
// takes once sealed, since each posted write is sealed on its own, and
// many small ones would otherwise take the output far past the bound.
func (c *conn) postedSize(n int) int {
	if n == 0 || c.ext == nil || c.ext.sec == nil {
		return n
	}
	return n + (n+maxPlaintext-1)/maxPlaintext*c.ext.sec.overhead
}

// postWrite posts t, an AsyncWrite or Wake of n reserved bytes, and gives the
// reservation back if the loop no longer takes tasks.
func (c *conn) postWrite(t *task, n int) error {
	t.reserved = int64(n)
	if err := c.loop.post(t); err != nil {
		c.posted.Add(-int64(n))
		return err
	}
	return nil
}

// size returns how many bytes bs holds.
func size(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return n
}

func (c *conn) Wake(cb AsyncCallback) error {
	if !c.reserve(int(postedTask)) {
		return ErrOutboundFull
	}
	t := newTask(taskWake, c)
	t.cb = cb
	return c.postWrite(t, int(postedTask))
}

func (c *conn) Close() error {
	if c.closeAsked.Swap(true) {
		return nil
	}
	if err := c.loop.post(newTask(taskClose, c)); err != nil {
		c.closeAsked.Store(false) // nothing was asked: the next call says so too
		return err
	}
	return nil
}

func (c *conn) Loop() Loop { return Loop{c.loop} }

func (c *conn) Origin() Origin {
	switch {
	case c.flags&flagDialed != 0:
		return Dialed
	case c.flags&flagEnrolled != 0:
		return Enrolled
	}
	return Accepted
}

func (c *conn) ListenerAddr() net.Addr {
	if c.Origin() != Accepted {
		return nil
	}
	return c.loop.eng.listenerOf(c.LocalAddr())
}

func (c *conn) PauseRead() error  { return c.pauseRead(true) }
func (c *conn) ResumeRead() error { return c.pauseRead(false) }

func (c *conn) pauseRead(pause bool) error {
	if c.state == stateClosed {
		return ErrConnClosed
	}
	if pause {
		c.flags |= flagReadPaused
	} else {
		c.flags &^= flagReadPaused
	}
	if c.state == stateOpen {
		c.loop.watch(c)
	}
	return nil
}

func (c *conn) CloseWrite() error {
	if c.done() {
		return ErrConnClosed
	}
	c.flags |= flagWriteClosed
	if c.loop.cur != c {
		// In c's own callback, finish shuts it down after sending what
		// the callback wrote.
		c.loop.shutWrite(c)
	}
	return nil
}

func (c *conn) SetHalfClose(on bool) {
	if on {
		c.flags |= flagHalfClose
	} else {
		c.flags &^= flagHalfClose
	}
}

// The socket setters fail once c has been released (its descriptor is -1):
// the number may name another's socket by then.

func (c *conn) SetNoDelay(noDelay bool) error {
	if c.fd < 0 {
		return ErrConnClosed
	}
	return socket.SetNoDelay(c.fd, noDelay)
}

func (c *conn) SetKeepAlive(idle, interval time.Duration, count int) error {
	if c.fd < 0 {
		return ErrConnClosed
	}
	return socket.SetKeepAlive(c.fd, idle, interval, count)
}

func (c *conn) SetLinger(sec int) error {
	if c.fd < 0 {
		return ErrConnClosed
	}
	if err := socket.SetLinger(c.fd, sec); err != nil {
		return err
	}
	c.flags &^= flagAbort
	if sec == 0 {
		c.flags |= flagAbort
	}
	return nil
}

func (c *conn) SetReadBuffer(n int) error {
	if c.fd < 0 {
		return ErrConnClosed
	}
	return socket.SetRecvBuffer(c.fd, n)
}

func (c *conn) SetWriteBuffer(n int) error {
	if c.fd < 0 {
		return ErrConnClosed
	}
	return socket.SetSendBuffer(c.fd, n)
}

// done reports whether c takes no more output: it has closed, or sent all
// it will and shut its write side down (stateLinger).
func (c *conn) done() bool { return c.state == stateClosed || c.state == stateLinger }

// queue appends p to the connection's own outbound buffer, sealed in TLS
// records once its handshake is over.
func (c *conn) queue(p []byte) {
	if len(p) == 0 {
		return // an empty write holds no buffer
	}
	if s := c.sec(); s != nil && s.ready {
		s.tc.Write(p) // the wire appends through queueRaw and never fails
		return
	}
	c.queueRaw(p)
}

// queueRaw appends p, wire bytes, to the connection's outbound buffer.
func (c *conn) queueRaw(p []byte) {
	switch {
	case c.out == nil:
		c.out = c.loop.eng.outPool.Get()
	case c.outHead > 0 && c.outHead >= len(c.out.B)-c.outHead:
		// What has been sent is at least as long as what has not: the
		// rest moves to the front, so that a connection whose output
		// never drains whole, as a subscriber's that reads a little
		// slower than it is sent, holds at most twice what is unsent
		// rather than every byte it was ever sent.
		n := copy(c.out.B, c.out.B[c.outHead:])
		c.out.B, c.outHead = c.out.B[:n], 0
	}
	c.out.B = append(c.out.B, p...)
}

// pending returns how much output c has yet to send: what it queued, and
// on the development backend what the socket's writer still holds
// (socket.Unsent), which a kernel socket would have refused.
func (c *conn) pending() int {
	n := socket.Unsent(c.fd)
	if c.out != nil {
		n += len(c.out.B) - c.outHead
	}
	return n
}

// feed makes p, just read, the unread inbound bytes, behind any kept from
// earlier events. Kept bytes are the tail of c.in.B: what the handler
// consumed since is still in front of them, and goes now if it is at
// least as long as they are, so that each byte moved is paid for by a
// byte consumed, and the buffer holds at most twice what is unread.
func (c *conn) feed(p []byte) {
	if c.in == nil {
		c.buf = p
		return
	}
	kept := len(c.buf)
	if consumed := len(c.in.B) - kept; consumed > 0 && consumed >= kept {
		c.in.B = c.in.B[:copy(c.in.B, c.buf)]
	}
	old := c.in.B
	if len(c.in.B)+len(p) > cap(c.in.B) {
		// It must move: what the handler consumed stays behind, so that
		// it counts as no room needed and the move is paid for once.
		c.in.B = growIn(c.buf, len(p), cap(old), c.loop.eng.opts.maxInbound)
	}
	c.in.B = append(c.in.B, p...)
	c.buf = c.in.B[len(c.in.B)-kept-len(p) : len(c.in.B) : len(c.in.B)]
	if was, now := cap(old), cap(c.in.B); now != was {
		// It moved to a larger array: the old one is garbage, and
		// WithWipeBuffers promises no connection's bytes are left in it.
		e := c.loop.eng
		if e.opts.wipe {
			clear(old[:was])
		}
		e.holdIn(now - was)
		if was > e.opts.maxPooled() {
			e.letGo(was)
		}
	}
}

// growIn returns a new array holding b, the unread bytes, with room for n
// more: a quarter more than the was bytes of the array it replaces, as
// append grows a large slice, as far as limit allows
// (WithMaxInboundBuffered; zero for none), unless b and n need more. It
// grows no faster because the inbound budget counts the array whole.
func growIn(b []byte, n, was, limit int) []byte {
	size := was + was/4
	if limit > 0 {
		size = min(size, limit)
	}
	grown := make([]byte, len(b), max(size, len(b)+n))
	copy(grown, b)
	return grown
}

// keepUnread moves what the handler left unread out of the loop's read
// buffer into the connection's own, and gives that back once it is empty.
// What the handler consumed from the connection's own buffer stays in
// front of the rest until the next feed: moving the rest forward after
// every callback made a handler that takes one frame per call quadratic.
func (c *conn) keepUnread() {
	switch {
	case len(c.buf) == 0:
		c.buf = nil
		if c.in != nil {
			c.loop.eng.releaseIn(c.in)
			c.in = nil
		}
	case c.in == nil:
		e := c.loop.eng
		c.in = e.inPool.Get()
		c.in.B = append(c.in.B[:0], c.buf...)
		c.buf = c.in.B[:len(c.in.B):len(c.in.B)]
		e.holdIn(cap(c.in.B))
	}
}

func (c *conn) releaseBuffers() {
	e := c.loop.eng
	if c.in != nil {
		e.releaseIn(c.in)
		c.in = nil
	}
	if c.out != nil {
		e.recycle(&e.outPool, c.out)
		c.out, c.outHead = nil, 0
	}
	c.buf = nil
}

// releaseIn gives back b, a connection's inbound buffer, which no longer
// counts against the inbound budget.
func (e *engine) releaseIn(b *bytebufferpool.ByteBuffer) {
	e.holdIn(-cap(b.B))
	e.recycle(&e.inPool, b)
}
