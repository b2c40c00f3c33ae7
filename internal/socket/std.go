//go:build windows || sluice_std

package socket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// ReusePort reports whether listeners may share a port (SO_REUSEPORT),
// one per loop. The standard library's listeners cannot here.
const ReusePort = false

// A handle stands for a descriptor: a listener, or a connection, which
// may still be connecting. Its goroutines block in the net package and
// leave what they finish where the loop's non-blocking calls find it,
// then call notify so that the poller looks again.
type handle struct {
	fd int

	mu     sync.Mutex
	notify func(fd int) // the poller watching, if any
	closed bool

	ln       net.Listener
	queue    []net.Conn // accepted, not yet taken by Accept
	room     chan struct{}
	acceptor chan struct{} // closed once the acceptor has returned

	pc    *net.UDPConn // a UDP socket's (packet_std.go)
	grams []gram

	nc      net.Conn
	dialing bool // Open was called; nc is nil until the dial ends
	dialed  bool // the dial ended: connErr says how
	connErr error
	cancel  context.CancelFunc
	dialer  net.Dialer
	opts    Options // for a connection still dialing
	linger0 bool

	in      []byte        // read, not yet taken by Read
	inErr   error         // after in: io.EOF, or why the read failed
	errSeen bool          // PendingError has reported inErr or outErr
	more    chan struct{} // in is empty: the reader may read again

	out      []byte // written, not yet sent
	inFlight int    // the bytes of the batch the writer is sending
	unsent   int    // out and inFlight as the loop last saw them (Unsent)
	outErr   error
	shut     bool // ShutdownWrite asked for: the writer ends output once out is sent
	kick     chan struct{}
}

// readSize is how much a connection's reader takes from the network at a
// time, and so the most a connection holds unread beyond the kernel's
// buffers; outCap bounds what Write takes while the writer is busy.
const (
	readSize = 16 << 10
	outCap   = 64 << 10
)

var (
	tableMu sync.RWMutex
	table   []*handle
	free    []int
	outPool = sync.Pool{New: func() any { return new([]byte) }}
)

// add gives h the lowest free descriptor number above the standard ones.
func add(h *handle) int {
	tableMu.Lock()
	defer tableMu.Unlock()
	if n := len(free); n > 0 {
		h.fd, free = free[n-1], free[:n-1]
		table[h.fd] = h
		return h.fd
	}
	if len(table) < 3 {
		table = make([]*handle, 3)
	}
	h.fd = len(table)
	table = append(table, h)
	return h.fd
}

func lookup(fd int) *handle {
	tableMu.RLock()
	defer tableMu.RUnlock()
	if fd < 0 || fd >= len(table) {
		return nil
	}
	return table[fd]
}

func remove(h *handle) {
	tableMu.Lock()
	defer tableMu.Unlock()
	if table[h.fd] == h {
		table[h.fd] = nil
		free = append(free, h.fd)
	}
}

// errno returns the system error inside err, as a raw socket call would
// return it, or err itself when there is none.
func errno(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

// Watch makes the poller hear of fd's changes: notify is called, from any
// goroutine, whenever fd may have become ready. A nil notify stops it.
func Watch(fd int, notify func(fd int)) {
	if h := lookup(fd); h != nil {
		h.mu.Lock()
		h.notify = notify
		h.mu.Unlock()
	}
}

// Poll reports what fd is ready for: reading (bytes, end of stream, an
// error, or a connection to accept), writing (room, or an error; a dial
// that ended), and whether it holds an error PendingError has yet to
// report. gone is true once fd is closed.
func Poll(fd int) (readable, writable, failed, gone bool) {
	h := lookup(fd)
	if h == nil {
		return false, false, false, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.ln != nil:
		return len(h.queue) > 0, false, false, false
	case h.pc != nil:
		return len(h.grams) > 0, false, false, false
	case h.dialing && !h.dialed:
		return false, false, false, false
	case h.dialing && h.connErr != nil:
		return false, true, true, false
	}
	failed = !h.errSeen && (h.outErr != nil || h.inErr != nil && h.inErr != io.EOF)
	readable = len(h.in) > 0 || h.inErr != nil
	// Writable once the writer has sent all it took, not merely while
	// Write has room: the loop counts what the writer holds as unsent
	// (Unsent) and watches for writable until it has gone, so readiness
	// while it has not would have it look again and again for nothing.
	h.unsent = len(h.out) + h.inFlight
	writable = h.outErr != nil || h.unsent == 0 && !h.shut
	return readable, writable, failed, false
}

// Unsent returns how many bytes Write took for fd that its writer had yet
// to hand to the network whole when the loop last looked: what waits for
// it, and the batch it is sending. The loop counts them as its own unsent
// output, as it counts what a socket of the kernel's would not take, so
// that OutboundQueued, the high-water mark and the bounds on output see
// the same bytes on every backend. It changes only as the loop looks
// (Write, Poll): the writer's progress reaches the loop as a socket's
// does, as readiness, and never between a callback's answer and what
// the loop does after it.
func Unsent(fd int) int {
	h := lookup(fd)
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unsent
}

// signal tells h's poller to look at h again. Call it without h.mu.
func (h *handle) signal() {
	h.mu.Lock()
	notify := h.notify
	h.mu.Unlock()
	if notify != nil {
		notify(h.fd)
	}
}

// Read reads from fd into p once. It returns 0, nil at end of stream and
// syscall.EAGAIN when nothing is there.
func Read(fd int, p []byte) (int, error) {
	h := lookup(fd)
	if h == nil {
		return 0, syscall.EBADF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.in) > 0 {
		n := copy(p, h.in)
		h.in = h.in[n:]
		if len(h.in) == 0 && h.inErr == nil {
			poke(h.more)
		}
		return n, nil
	}
	switch h.inErr {
	case nil:
		return 0, syscall.EAGAIN
	case io.EOF:
		return 0, nil
	}
	return 0, h.inErr
}

// Write writes p to fd once and returns how much it took: up to the room
// left while the connection's writer sends what came before.
func Write(fd int, p []byte) (int, error) {
	h := lookup(fd)
	if h == nil {
		return 0, syscall.EBADF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.outErr != nil:
		return 0, h.outErr
	case h.shut:
		return 0, syscall.EPIPE
	case len(h.out) >= outCap:
		return 0, syscall.EAGAIN
	}
	if h.out == nil {
		h.out = (*outPool.Get().(*[]byte))[:0]
	}
	n := min(outCap-len(h.out), len(p))
	h.out = append(h.out, p[:n]...)
	h.unsent += n
	poke(h.kick)
	return n, nil
}

// poke wakes the goroutine waiting on ch, or leaves a wake for it.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// start sets h up to carry nc and starts its reader and writer.
func (h *handle) start(nc net.Conn) {
	h.nc = nc
	h.more = make(chan struct{}, 1)
	h.kick = make(chan struct{}, 1)
	go h.read()
	go h.write()
}

// read is the connection's reader: it reads into its buffer, leaves what
// it read for Read, and reads again once Read has taken it all.
func (h *handle) read() {
	buf := make([]byte, readSize)
	for {
		n, err := h.nc.Read(buf)
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		h.in = buf[:n]
		if err != nil {
			if err != io.EOF {
				err = errno(err)
			}
			h.inErr = err
		}
		h.mu.Unlock()
		h.signal()
		if err != nil {
			return
		}
		if n > 0 {
			<-h.more
		}
	}
}

// write is the connection's writer: it sends what Write left, a batch at
// a time, and ends the output once ShutdownWrite asked and all is sent.
// Once Close closes kick, it sends what is left and closes the connection.
func (h *handle) write() {
	shutDone := false
	for range h.kick {
		for h.send() {
		}
		h.mu.Lock()
		shut := h.shut && len(h.out) == 0 && !shutDone
		h.mu.Unlock()
		if shut {
			shutDone = true
			closeWrite(h.nc)
		}
	}
	for h.send() {
	}
	h.nc.Close()
}

// send sends one batch of what Write left and reports whether it sent
// anything, or found nothing to send.
func (h *handle) send() bool {
	h.mu.Lock()
	batch := h.out
	h.out, h.inFlight = nil, len(batch)
	failed := h.outErr != nil
	h.mu.Unlock()
	if len(batch) == 0 || failed {
		return false
	}
	_, err := h.nc.Write(batch)
	clear(batch)
	outPool.Put(&batch)
	h.mu.Lock()
	h.inFlight = 0
	if err != nil && h.outErr == nil {
		h.outErr = errno(err)
	}
	h.mu.Unlock()
	h.signal()
	return true
}

func closeWrite(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// Close closes fd as close(2) closes a socket: a connection with input
// left unread is reset, as is one SetLingerZero marked; otherwise its
// writer sends what Write took, then closes it.
func Close(fd int) error {
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	h.mu.Lock()
	h.closed = true
	notify := h.notify
	ln, nc, cancel := h.ln, h.nc, h.cancel
	reset := h.linger0 || len(h.in) > 0
	if reset {
		h.out = nil
	}
	queue := h.queue
	h.queue = nil
	pc := h.pc
	if pc != nil {
		h.closePacket()
	}
	if tc, ok := nc.(*net.TCPConn); ok && reset {
		// Before the writer can see kick closed and close nc itself.
		tc.SetLinger(0)
	}
	if nc != nil {
		// Free the reader, which may wait for Read to take its bytes, and
		// end the writer once it has sent what it has.
		close(h.more)
		close(h.kick)
	}
	h.mu.Unlock()
	remove(h)
	if notify != nil {
		notify(fd) // the poller forgets it
	}
	switch {
	case pc != nil:
		return pc.Close()
	case ln != nil:
		for _, c := range queue {
			c.Close()
		}
		poke(h.room)
		return ln.Close()
	case nc == nil:
		if cancel != nil {
			cancel()
		}
		return nil
	case reset:
		return nc.Close()
	}
	// A peer that never reads could hold the writer for ever; a minute
	// bounds it, as the kernel bounds an orphaned socket's retransmissions.
	nc.SetWriteDeadline(time.Now().Add(time.Minute))
	nc.SetReadDeadline(time.Now())
	return nil
}

// ShutdownWrite ends fd's output once what Write took is sent: the peer
// reads end of stream after everything sent before.
func ShutdownWrite(fd int) error {
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.nc == nil {
		return syscall.ENOTCONN
	}
	h.shut = true
	poke(h.kick)
	return nil
}

// Settled reports whether fd holds nothing unread and nothing unsent, so
// that closing it now loses nothing.
func Settled(fd int) bool {
	h := lookup(fd)
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.in) == 0 && len(h.out) == 0 && h.inFlight == 0
}

// PendingError returns the error fd holds, once: how its dial ended (nil:
// connected), or why its connection failed, such as a reset.
func PendingError(fd int) error {
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.nc == nil {
		if h.dialed {
			return h.connErr
		}
		return nil
	}
	if h.errSeen {
		return nil
	}
	switch {
	case h.outErr != nil:
		h.errSeen = true
		return h.outErr
	case h.inErr != nil && h.inErr != io.EOF:
		h.errSeen = true
		return h.inErr
	}
	return nil
}

// Listen opens a listener. network is tcp, tcp4, tcp6 or unix. It
// returns its descriptor and the address it is bound to, which tells the
// port when addr asked for port 0.
// Of o's options the listener takes only the buffer sizes, which the
// connections it accepts inherit, as epoll's does: set on a connection
// once accepted, a smaller receive buffer shrinks the window its peer was
// offered in the handshake, and the peer stalls in zero-window probes.
// The other per-connection ones reach each connection through Configure.
func Listen(network, addr string, o Options) (int, net.Addr, error) {
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return -1, nil, fmt.Errorf("%w: %q", ErrNetwork, network)
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return controlBuffers(rc, o)
	}}
	ln, err := lc.Listen(context.Background(), network, addr)
	if err != nil {
		return -1, nil, err
	}
	return listenOn(ln), ln.Addr(), nil
}

// listenOn makes a listener's handle and starts its acceptor.
func listenOn(ln net.Listener) int {
	h := &handle{ln: ln, room: make(chan struct{}, 1), acceptor: make(chan struct{})}
	fd := add(h)
	go h.accept()
	return fd
}

// listenBacklog bounds how many accepted connections wait for Accept.
const listenBacklog = 128

// accept is a listener's acceptor: it accepts into the queue Accept
// takes from, waiting while the queue is full.
func (h *handle) accept() {
	defer close(h.acceptor)
	for {
		nc, err := h.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			nc.Close()
			return
		}
		h.queue = append(h.queue, nc)
		full := len(h.queue) >= listenBacklog
		h.mu.Unlock()
		h.signal()
		if full {
			<-h.room
		}
	}
}

// StopAccepting stops the listener fd from taking connections: those
// taken already wait for Accept, and the listener's socket, which
// another process may serve too, keeps the rest queued until fd closes.
// The listener's acceptor has returned when it does, so that Accept, until
// it finds no more, leaves the listener holding none it would drop.
func StopAccepting(fd int) {
	h := lookup(fd)
	if h == nil || h.ln == nil {
		return
	}
	h.ln.Close()
	poke(h.room) // an acceptor waiting for room returns
	<-h.acceptor
}

// Accept takes one pending connection from the listener fd, with its
// peer's address (the zero AddrPort for a unix socket).
func Accept(fd int) (int, netip.AddrPort, error) {
	h := lookup(fd)
	if h == nil {
		return -1, netip.AddrPort{}, syscall.EBADF
	}
	h.mu.Lock()
	if len(h.queue) == 0 {
		h.mu.Unlock()
		return -1, netip.AddrPort{}, syscall.EAGAIN
	}
	nc := h.queue[0]
	h.queue = h.queue[1:]
	h.mu.Unlock()
	poke(h.room)
	var remote netip.AddrPort
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		remote = ta.AddrPort()
	}
	return adopt(nc), remote, nil
}

// Configure applies the per-connection options to a connection, or, for
// one still dialing, once it connects.
func Configure(fd int, unixSocket bool, o Options) error {
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	h.mu.Lock()
	nc := h.nc
	if nc == nil {
		h.opts = o
	}
	h.mu.Unlock()
	if nc == nil {
		return nil
	}
	return configure(nc, o)
}

// controlBuffers sets o's buffer sizes on the socket rc stands for.
func controlBuffers(rc syscall.RawConn, o Options) error {
	var err error
	cerr := rc.Control(func(s uintptr) {
		if o.RecvBuf > 0 {
			err = setBuffer(s, syscall.SO_RCVBUF, o.RecvBuf)
		}
		if o.SendBuf > 0 && err == nil {
			err = setBuffer(s, syscall.SO_SNDBUF, o.SendBuf)
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}

func configure(nc net.Conn, o Options) error {
	if b, ok := nc.(interface{ SetReadBuffer(int) error }); ok && o.RecvBuf > 0 {
		if err := b.SetReadBuffer(o.RecvBuf); err != nil {
			return err
		}
	}
	if b, ok := nc.(interface{ SetWriteBuffer(int) error }); ok && o.SendBuf > 0 {
		if err := b.SetWriteBuffer(o.SendBuf); err != nil {
			return err
		}
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	if err := tc.SetNoDelay(o.NoDelay); err != nil {
		return err
	}
	if o.KeepAlive > 0 {
		return tc.SetKeepAliveConfig(keepAlive(o.KeepAlive, o.KeepAliveInterval, o.KeepAliveCount))
	}
	return nil
}

func keepAlive(idle, interval time.Duration, count int) net.KeepAliveConfig {
	if idle <= 0 {
		return net.KeepAliveConfig{Enable: false}
	}
	idle = max(idle.Truncate(time.Second), time.Second)
	if interval <= 0 {
		interval = max(idle/5, time.Second)
	}
	if count <= 0 {
		count = keepAliveProbes
	}
	return net.KeepAliveConfig{Enable: true, Idle: idle, Interval: max(interval.Truncate(time.Second), time.Second), Count: count}
}

// tcp runs f on fd's TCP connection; a unix socket has none to set.
func tcp(fd int, f func(*net.TCPConn) error) error {
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	h.mu.Lock()
	nc := h.nc
	h.mu.Unlock()
	if tc, ok := nc.(*net.TCPConn); ok {
		return f(tc)
	}
	return nil
}

// SetNoDelay turns Nagle's algorithm off (TCP_NODELAY) when on is true.
func SetNoDelay(fd int, on bool) error {
	return tcp(fd, func(tc *net.TCPConn) error { return tc.SetNoDelay(on) })
}

// SetKeepAlive turns keep-alive probes on after idle without traffic, one
// every interval, declaring the peer dead after count go unanswered; an
// idle time of zero or less turns them off. Defaults as on the native
// backend.
func SetKeepAlive(fd int, idle, interval time.Duration, count int) error {
	return tcp(fd, func(tc *net.TCPConn) error {
		return tc.SetKeepAliveConfig(keepAlive(idle, interval, count))
	})
}

// SetLinger sets what closing fd does with output the peer has yet to
// take: sent in the background (sec < 0) or dropped with a reset (0). A
// positive time is refused.
func SetLinger(fd int, sec int) error {
	if sec > 0 {
		return fmt.Errorf("setsockopt SO_LINGER %d: %w", sec, ErrLingerBlocks)
	}
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	h.mu.Lock()
	h.linger0 = sec == 0
	h.mu.Unlock()
	return nil
}

// SetLingerZero makes closing fd reset the connection.
func SetLingerZero(fd int) error { return SetLinger(fd, 0) }

// SetRecvBuffer sets the socket's receive buffer size.
func SetRecvBuffer(fd, n int) error {
	if pc := packetConn(fd); pc != nil {
		return pc.SetReadBuffer(n)
	}
	return tcp(fd, func(tc *net.TCPConn) error { return tc.SetReadBuffer(n) })
}

// SetSendBuffer sets the socket's send buffer size.
func SetSendBuffer(fd, n int) error {
	if pc := packetConn(fd); pc != nil {
		return pc.SetWriteBuffer(n)
	}
	return tcp(fd, func(tc *net.TCPConn) error { return tc.SetWriteBuffer(n) })
}

// LocalAddr returns the address fd is bound to.
func LocalAddr(fd int) (net.Addr, error) {
	h := lookup(fd)
	if h == nil {
		return nil, syscall.EBADF
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.pc != nil:
		return h.pc.LocalAddr(), nil
	case h.nc != nil:
		return h.nc.LocalAddr(), nil
	case h.ln != nil:
		return h.ln.Addr(), nil
	}
	return nil, syscall.ENOTCONN
}

// UnixPeer returns the path a unix socket's peer is bound to: "" when it
// is bound to none.
func UnixPeer(fd int) string {
	h := lookup(fd)
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.nc != nil {
		if ua, ok := h.nc.RemoteAddr().(*net.UnixAddr); ok && ua != nil {
			return ua.Name
		}
	}
	return ""
}

// MaxFiles returns the most connections the development backend admits
// unless WithMaxConnections says otherwise. It has no descriptor limit to
// read; this bound keeps the engine's connection table small (about 1.5
// MiB), as a native process's descriptor limit does.
func MaxFiles() uint64 { return 1 << 16 }

// Endpoint is an address to connect to: a TCP address or a unix
// socket's path.
type Endpoint struct {
	network, addr string
}

// TCPEndpoint returns the endpoint for ap.
func TCPEndpoint(ap netip.AddrPort) Endpoint {
	if ap.Addr().Unmap().Is4() {
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		return Endpoint{"tcp4", ap.String()}
	}
	return Endpoint{"tcp6", ap.String()}
}

// UnixEndpoint returns the endpoint for the unix socket at path.
func UnixEndpoint(path string) Endpoint { return Endpoint{"unix", path} }

// Open makes a socket to connect to ep.
func Open(ep Endpoint) (int, error) {
	return add(&handle{dialing: true}), nil
}

// Bind makes fd's dial leave from the local address ap.
func Bind(fd int, ap netip.AddrPort) error {
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	h.mu.Lock()
	h.dialer.LocalAddr = net.TCPAddrFromAddrPort(ap)
	h.mu.Unlock()
	return nil
}

// BindToDevice reports that the standard library's sockets cannot be
// bound to a device here.
func BindToDevice(fd int, device string) error {
	return fmt.Errorf("bind to device %q: %w", device, errors.ErrUnsupported)
}

// Connect starts connecting fd to ep in the background and returns
// syscall.EINPROGRESS: fd turns writable once the dial ends, and
// PendingError tells how.
func Connect(fd int, ep Endpoint) error {
	h := lookup(fd)
	if h == nil {
		return syscall.EBADF
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	h.cancel = cancel
	d := h.dialer
	h.mu.Unlock()
	go func() {
		nc, err := d.DialContext(ctx, ep.network, ep.addr)
		cancel()
		if err == nil {
			err = configure(nc, h.opts)
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			if nc != nil {
				nc.Close()
			}
			return
		}
		h.dialed = true
		if err != nil {
			h.connErr = errno(err)
			if nc != nil {
				nc.Close()
			}
		} else {
			h.start(nc)
		}
		h.mu.Unlock()
		h.signal()
	}()
	return syscall.EINPROGRESS
}

// Adopt takes nc for a loop: nc itself becomes the descriptor's
// connection, so the caller must not use or close it.
func Adopt(nc net.Conn) (int, error) {
	if pc, ok := nc.(*net.UDPConn); ok {
		return addPacket(pc), nil
	}
	return adopt(nc), nil
}

func adopt(nc net.Conn) int {
	h := &handle{}
	fd := add(h)
	h.mu.Lock()
	h.start(nc)
	h.mu.Unlock()
	return fd
}
