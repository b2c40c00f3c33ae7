package sluice

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/poller"
)

// Origin says how a connection came to its engine.
type Origin uint8

const (
	// Accepted: one of the engine's listeners accepted it.
	Accepted Origin = iota
	// Dialed: the engine connected it, for Engine.Dial or Loop.Dial.
	Dialed
	// Enrolled: it was made elsewhere and handed over with Enroll.
	Enrolled
)

var origins = [...]string{Accepted: "accepted", Dialed: "dialed", Enrolled: "enrolled"}

// String returns "accepted", "dialed" or "enrolled".
func (o Origin) String() string {
	if int(o) >= len(origins) {
		return "Origin(" + strconv.Itoa(int(o)) + ")"
	}
	return origins[o]
}

// DefaultDialTimeout bounds a dial, name resolution and connect together,
// unless DialTimeout says otherwise.
const DefaultDialTimeout = 10 * time.Second

// Loop is one of an engine's event loops. Its methods are safe from any
// goroutine. A handler reaches the loop of a connection with Conn.Loop, and
// any loop with Engine.Loop.
type Loop struct {
	l *eventloop
}

// Index returns the loop's number, from zero to Engine.NumLoops()-1.
func (lp Loop) Index() int { return lp.l.idx }

// Execute runs fn on the loop, where it may use the loop's connections as
// their own callbacks do: write to them, pause their reading, dial. It
// returns ErrEngineStopped, and never runs fn, when the loop no longer
// runs; otherwise fn runs exactly once, even if the engine stops first.
func (lp Loop) Execute(fn func()) error {
	return lp.l.post(executeTask(fn))
}

// Dial connects to addr from this loop, which then owns the connection;
// see Engine.Dial.
func (lp Loop) Dial(addr string, ctx any, opts ...DialOption) error {
	return lp.l.eng.dial(lp.l, addr, ctx, opts)
}

// Enroll hands nc to this loop; see Engine.Enroll.
func (lp Loop) Enroll(nc net.Conn, ctx any, opts ...DialOption) error {
	return lp.l.eng.enroll(lp.l, nc, ctx, opts)
}

// NumLoops returns how many event loops the engine runs.
func (eng Engine) NumLoops() int {
	if eng.e == nil {
		return 0
	}
	return len(eng.e.loops)
}

// Loop returns the engine's loop number i; it panics unless
// 0 <= i < NumLoops().
func (eng Engine) Loop(i int) Loop { return Loop{eng.e.loops[i]} }

// Dial connects to addr ("tcp://host:port", tcp4, tcp6, "unix:///path";
// without a scheme, TCP; "udp://host:port", udp4, udp6 for a connected
// UDP socket, see PacketConn) without blocking: it returns at once, and a loop
// connects in the background. Called from one of the handler's callbacks
// on Linux, where the loops are locked to their threads (the default, and
// always on io_uring), it dials from that callback's loop, so that a
// proxy's two connections share a loop and never cross threads; elsewhere,
// and from other goroutines, from the loop with the fewest connections.
// Loop.Dial picks the loop everywhere.
//
// Once connected, OnOpen runs for the new connection, whose Origin is
// Dialed and whose Context is ctx, then the handler serves it as any
// other. If the dial fails (refused, unreachable, a name that does not
// resolve, DialTimeout passed, the engine stopping, with DialTLS a
// handshake that fails) no OnOpen runs: the handler hears why in
// OnDialFailed if it implements DialFailedHandler, with an error that
// errors.Is can test (syscall.ECONNREFUSED, ErrDialTimeout,
// ErrEngineStopped). Names are resolved off the loops.
//
// Dial returns an error itself only for an address it cannot parse or
// an engine that has stopped; then nothing more is heard of the dial.
// The connection counts against WithMaxConnections from the start of its
// connect, and the engine's per-connection options (WithTCPNoDelay,
// WithTCPKeepAlive, the buffer sizes, WithIdleTimeout, WithHalfClose)
// apply to it unless a DialOption overrides them.
func (eng Engine) Dial(addr string, ctx any, opts ...DialOption) error {
	if eng.e == nil {
		return ErrEngineStopped
	}
	return eng.e.dial(eng.e.callerLoop(), addr, ctx, opts)
}

// Enroll hands the engine a TCP or unix connection made elsewhere, by
// net.Dial or a net.Listener, or passed over by another process, or a
// connected *net.UDPConn (see PacketConn): the
// engine takes a copy of its descriptor and closes nc, and a loop opens it
// as it would a dialed one (Origin Enrolled, Context ctx, OnOpen). The
// loop is chosen as Dial's is. nc must have no reads or writes under way,
// and nothing it has read but not handed over is carried across.
// DialNoDelay, DialKeepAlive, DialReadBuffer and DialWriteBuffer apply;
// DialTimeout, DialLocalAddr and DialDevice, which concern a connect, do
// not. The engine's own options apply as to any connection, except
// keep-alive, which nc keeps as it was unless DialKeepAlive says.
//
// An error wrapping errors.ErrUnsupported (nc is not a TCP, unix or
// connected UDP socket), or a failure to copy the descriptor, leaves nc open and the
// caller's. Once copied, nc is closed; if the engine has stopped, Enroll
// returns ErrEngineStopped, and if it cannot open the connection later (a
// limit, a stop) the connection is closed and OnDialFailed hears of it.
// On the development backend (Windows, or the sluice_std build tag) the
// engine takes nc itself rather than a copy: nc must not be used again.
func (eng Engine) Enroll(nc net.Conn, ctx any, opts ...DialOption) error {
	if eng.e == nil {
		return ErrEngineStopped
	}
	return eng.e.enroll(eng.e.callerLoop(), nc, ctx, opts)
}

// A DialOption changes how Dial or Enroll sets up one connection.
type DialOption func(*dialSpec)

// DialTimeout bounds the dial, name resolution and connect together
// (DefaultDialTimeout without it). Zero or less means the default.
func DialTimeout(d time.Duration) DialOption {
	return func(dl *dialSpec) {
		if d > 0 {
			dl.timeout = d
		}
	}
}

// DialLocalAddr makes the connection leave from a local address, given as
// "ip" or "ip:port", as net.Dialer's LocalAddr does.
func DialLocalAddr(addr string) DialOption {
	return func(dl *dialSpec) { dl.local = addr }
}

// DialDevice binds the connection to a network interface, by name
// (SO_BINDTODEVICE; Linux only, and it may need CAP_NET_RAW).
func DialDevice(name string) DialOption {
	return func(dl *dialSpec) { dl.device = name }
}

// DialNoDelay sets TCP_NODELAY on the connection, overriding
// WithTCPNoDelay.
func DialNoDelay(noDelay bool) DialOption {
	return func(dl *dialSpec) { dl.sock.NoDelay = noDelay }
}

// DialKeepAlive sets the connection's TCP keep-alive as
// Conn.SetKeepAlive does, overriding WithTCPKeepAlive.
func DialKeepAlive(idle, interval time.Duration, count int) DialOption {
	return func(dl *dialSpec) {
		dl.sock.KeepAlive, dl.sock.KeepAliveInterval, dl.sock.KeepAliveCount = idle, interval, count
		dl.keepAliveSet = true
	}
}

// DialReadBuffer sets the socket's receive buffer (SO_RCVBUF) before it
// connects, overriding WithSocketRecvBuffer.
func DialReadBuffer(n int) DialOption {
	return func(dl *dialSpec) { dl.sock.RecvBuf = n }
}

// DialWriteBuffer sets the socket's send buffer (SO_SNDBUF) before it
// connects, overriding WithSocketSendBuffer.
func DialWriteBuffer(n int) DialOption {
	return func(dl *dialSpec) { dl.sock.SendBuf = n }
}

// DialTLS makes the connection a TLS client's, with the standard library's
// crypto/tls and a copy of cfg taken when Dial or Enroll is called (nil:
// the zero Config, as tls.Dial takes it). Once the connect succeeds, or
// the socket is enrolled, the handshake runs on a goroutine of its own as
// a TLS listener's does, bounded by WithTLSHandshakeTimeout and counted
// against WithTLSMaxHandshakes; OnOpen runs only once it is over, and
// Conn.ConnectionState tells what was agreed. From then on the handler
// sees only plaintext, as on an accepted TLS connection.
//
// The server is verified as crypto/tls verifies it, against cfg.RootCAs
// (the system's roots when nil) and cfg.ServerName. For Dial an empty
// ServerName is the host of the address dialed, a name or an IP address,
// as tls.Dial takes it; for Enroll, as for tls.Client, and for a unix
// socket it stays empty, so give ServerName or InsecureSkipVerify.
// Renegotiation is kept off.
//
// A handshake that fails, or does not end in time, or would pass
// WithTLSMaxHandshakes, fails the dial as a refused connect does: no
// OnOpen or OnClose runs, and OnDialFailed hears why in its *net.OpError,
// which wraps ErrTLSHandshakeTimeout, ErrTooManyHandshakes, or crypto/tls's
// error as tls.Conn's Handshake returns it (errors.As finds a
// *tls.CertificateVerificationError in it for a server that failed
// verification), or ErrHandlerPanic if a callback of cfg panicked. It
// counts in Stats.DialFailed and in Stats.TLSHandshakeFailures (a timeout
// in Stats.TLSHandshakeTimeouts); Stats.Dialed and Stats.Enrolled count
// the connection once its handshake is over. TLSFailedHandler hears only of accepted connections. As with
// crypto/tls, a TLS 1.3 server that refuses the client's certificate
// says so after the client's handshake is over: the connection opens, and
// closes with crypto/tls's error once the refusal arrives.
func DialTLS(cfg *tls.Config) DialOption {
	return func(dl *dialSpec) {
		if cfg == nil {
			dl.tls = &tls.Config{Renegotiation: tls.RenegotiateNever}
			return
		}
		dl.tls = tlsConfig(cfg)
	}
}

// dialSpec is one Dial or Enroll on its way to a loop. While its connection
// connects, and runs its TLS handshake, the conn's context holds it.
type dialSpec struct {
	network string // tcp, tcp4, tcp6 or unix
	addr    string // as the caller gave it, for errors
	host    string // to resolve, when addr names a host
	port    uint16
	path    string // a unix socket's, to dial
	ep      socket.Endpoint
	parsed  bool // ep is set: the address needs no resolving
	remote  netip.AddrPort
	ctx     any
	timeout time.Duration
	expires time.Time
	local   string
	device  string
	sock    socket.Options

	keepAliveSet bool        // by DialKeepAlive: an enrolled socket keeps its own otherwise
	tls          *tls.Config // DialTLS's copy: the connection is a TLS client's

	next      []netip.Addr // the host's further addresses, to try in turn
	resolving bool         // counted in its loop's resolving until it reaches it
	fd        int          // the descriptor Enroll took; -1 for a dial
	err       error        // why it failed before reaching its loop
	raw       connectAddr  // laid out where a driver connects by address, in place until the connect ends
}

func (e *engine) newDial(ctx any, opts []DialOption) *dialSpec {
	d := &dialSpec{ctx: ctx, timeout: DefaultDialTimeout, sock: e.sock, fd: -1}
	for _, opt := range opts {
		opt(d)
	}
	d.expires = time.Now().Add(d.timeout)
	return d
}

func (e *engine) dial(l *eventloop, addr string, ctx any, opts []DialOption) error {
	d := e.newDial(ctx, opts)
	if err := d.parse(addr); err != nil {
		return err
	}
	if l.tasks.isClosed() {
		return ErrEngineStopped
	}
	if !d.parsed {
		// The loop stays up, even stopping, until the dial reaches it
		// (connect), so that the handler hears how it ended.
		d.resolving = true
		l.resolving.Add(1)
		go func() {
			d.resolve(e.stopping)
			if l.postDial(d) != nil {
				l.resolving.Add(-1) // the loop failed, and exited anyway
			}
		}()
		return nil
	}
	return l.postDial(d)
}

// parse reads addr; it leaves parsed false when the host is a name to
// resolve.
func (d *dialSpec) parse(addr string) error {
	network, address, err := parseAddr(addr)
	if err != nil {
		return err
	}
	d.network, d.addr = network, addr
	if network == "unix" {
		d.path, d.ep, d.parsed = address, socket.UnixEndpoint(address), true
		return nil
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrInvalidAddr, addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("%w: %q: port %q is not a number", ErrInvalidAddr, addr, port)
	}
	d.host, d.port = host, uint16(p)
	if host == "" {
		d.host = "localhost" // as net.Dial takes an empty host
	}
	if ip, err := netip.ParseAddr(d.host); err == nil {
		return d.to(ip)
	}
	return nil
}

// to sets the address to connect to.
func (d *dialSpec) to(ip netip.Addr) error {
	ip = ip.Unmap()
	if strings.HasSuffix(d.network, "4") && !ip.Is4() || strings.HasSuffix(d.network, "6") && !ip.Is6() {
		return fmt.Errorf("%w: %q: %s is not an address of %s", ErrInvalidAddr, d.addr, ip, d.network)
	}
	d.remote = netip.AddrPortFrom(ip, d.port)
	d.ep, d.parsed = socket.TCPEndpoint(d.remote), true
	return nil
}

// resolve looks the host up, off the loops, within the dial's time, or
// until the engine begins to stop. The addresses after the first are kept
// for connectFailed to try in turn, as net.Dial does.
func (d *dialSpec) resolve(stopping context.Context) {
	ctx, cancel := context.WithDeadline(stopping, d.expires)
	defer cancel()
	network := "ip" + d.network[3:] // ip, ip4 or ip6, from tcp or udp
	ips, err := net.DefaultResolver.LookupNetIP(ctx, network, d.host)
	switch {
	case stopping.Err() != nil:
		d.err = ErrEngineStopped
	case errors.Is(err, context.DeadlineExceeded):
		d.err = ErrDialTimeout
	case err != nil:
		d.err = err
	default:
		d.err = d.to(ips[0])
		d.next = ips[1:]
	}
}

func (e *engine) enroll(l *eventloop, nc net.Conn, ctx any, opts []DialOption) error {
	d := e.newDial(ctx, opts)
	if err := d.adopt(nc); err != nil {
		return err
	}
	if err := l.postDial(d); err != nil {
		socket.Close(d.fd)
		return err
	}
	return nil
}

// adopt takes nc's socket (socket.Adopt) and closes nc.
func (d *dialSpec) adopt(nc net.Conn) error {
	network := nc.LocalAddr().Network()
	if network == "udp" && nc.RemoteAddr() == nil {
		return fmt.Errorf("sluice: enroll of a UDP socket that is not connected: %w", errors.ErrUnsupported)
	}
	if network != "tcp" && network != "unix" && network != "udp" {
		return fmt.Errorf("sluice: enroll %T over %s: %w", nc, network, errors.ErrUnsupported)
	}
	fd, err := socket.Adopt(nc)
	if err != nil {
		return fmt.Errorf("sluice: enroll: %w", err)
	}
	d.fd = fd
	d.network, d.addr = network, nc.RemoteAddr().String()
	switch ra := nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		d.remote = ra.AddrPort()
	case *net.UDPAddr:
		d.remote = ra.AddrPort()
	}
	return nil
}

// opError wraps why d failed as the standard library's dials do.
func (d *dialSpec) opError(err error) error {
	var addr net.Addr
	switch {
	case d.path != "": // a unix socket's
		addr = &net.UnixAddr{Name: d.path, Net: "unix"}
	case d.remote.IsValid() && isPacket(d.network):
		addr = net.UDPAddrFromAddrPort(d.remote)
	case d.remote.IsValid(): // a dial's address, or an enrolled socket's peer
		addr = net.TCPAddrFromAddrPort(d.remote)
	}
	op := "dial"
	if d.fd >= 0 {
		op = "enroll"
	}
	return &net.OpError{Op: op, Net: d.network, Addr: addr, Err: err}
}

// callerLoop returns the loop whose thread calls it, when that is one
// of the engine's loops, and otherwise the loop with the fewest
// connections. A loop locked to its thread is the only goroutine that
// runs there, so the thread names it.
func (e *engine) callerLoop() *eventloop {
	if tid := threadID(); tid != 0 {
		for _, l := range e.loops {
			if l.tid == tid {
				return l
			}
		}
	}
	best := e.loops[0]
	for _, l := range e.loops[1:] {
		if l.load() < best.load() {
			best = l
		}
	}
	return best
}

func (l *eventloop) postDial(d *dialSpec) error {
	t := newTask(taskDial, nil)
	t.dial = d
	return l.post(t)
}

// connect opens d's connection on the loop: a dial's connect starts
// (the driver's connect), an enrolled socket opens at once.
func (l *eventloop) connect(d *dialSpec) {
	if d.resolving {
		d.resolving = false
		l.resolving.Add(-1)
	}
	err := d.err
	if err == nil && l.draining {
		err = ErrEngineStopped
	}
	if err != nil {
		if d.fd >= 0 {
			socket.Close(d.fd)
		}
		l.dialFailed(d, err)
		return
	}
	if isPacket(d.network) {
		l.connectPacket(d)
		return
	}
	fd, err := l.dialSocket(d)
	if err != nil {
		l.dialFailed(d, err)
		return
	}
	c := &conn{fd: fd, remote: d.remote, loop: l, ctx: d, state: stateConnecting}
	c.flags = flagDialed
	if d.fd >= 0 {
		c.flags = flagEnrolled
	}
	if l.eng.opts.halfClose {
		c.flags |= flagHalfClose
	}
	id, err := l.eng.table.Claim(l.idx, uint64(fd))
	if err != nil {
		socket.Close(fd)
		l.dialFailed(d, ErrTooManyConns)
		return
	}
	c.id = uint64(id)
	l.register(c)
	if d.fd >= 0 {
		l.connected(c)
		return
	}
	l.arm(c, &c.readTimer, timerConnect, time.Until(d.expires))
	l.drv.connect(c, d)
}

// dialSocket returns d's socket, set up to connect: the one Enroll took,
// or a new one with d's options.
func (l *eventloop) dialSocket(d *dialSpec) (int, error) {
	isUnix := d.network == "unix"
	if d.fd >= 0 {
		if !d.keepAliveSet {
			d.sock.KeepAlive = 0 // leaves the socket's as it is
		}
		err := socket.Configure(d.fd, isUnix, d.sock)
		if err == nil && !isUnix {
			err = socket.SetNoDelay(d.fd, d.sock.NoDelay)
		}
		if err == nil && !isUnix && d.keepAliveSet && d.sock.KeepAlive <= 0 {
			err = socket.SetKeepAlive(d.fd, 0, 0, 0)
		}
		if err != nil {
			socket.Close(d.fd)
		}
		return d.fd, err
	}
	fd, err := socket.Open(d.ep)
	if err != nil {
		return -1, err
	}
	if err = socket.Configure(fd, isUnix, d.sock); err == nil && d.device != "" {
		err = socket.BindToDevice(fd, d.device)
	}
	if err == nil && d.local != "" {
		err = d.bindLocal(fd)
	}
	if err != nil {
		socket.Close(fd)
		return -1, err
	}
	return fd, nil
}

// bindLocal binds fd to the address DialLocalAddr gave.
func (d *dialSpec) bindLocal(fd int) error {
	ap, err := netip.ParseAddrPort(d.local)
	if err != nil {
		ip, err2 := netip.ParseAddr(d.local)
		if err2 != nil {
			return fmt.Errorf("%w: local address %q: %v", ErrInvalidAddr, d.local, err)
		}
		ap = netip.AddrPortFrom(ip, 0)
	}
	if d.network == "unix" || ap.Addr().Unmap().Is4() != d.remote.Addr().Unmap().Is4() {
		return fmt.Errorf("%w: local address %q is not of the remote's family", ErrInvalidAddr, d.local)
	}
	return socket.Bind(fd, ap)
}

// register makes c, a dialed or enrolled connection, the loop's.
func (l *eventloop) register(c *conn) {
	l.place(c)
	l.count.Add(1)
}

// connected opens c, whose connect succeeded or which was enrolled: it is
// watched for reading, counted, and offered to OnOpen.
func (l *eventloop) connected(c *conn) {
	var err error
	if c.events == 0 {
		err = l.drv.add(c.fd, poller.Readable)
	} else {
		err = l.drv.modify(c.fd, c.events, poller.Readable)
	}
	if err != nil {
		l.closeConn(c, err)
		return
	}
	d := c.ctx.(*dialSpec)
	l.disarm(&c.readTimer)
	c.events = poller.Readable
	if d.tls != nil {
		if d.tls.ServerName == "" && d.fd < 0 {
			d.tls.ServerName = d.host // as tls.Dial: a unix socket's is empty
		}
		c.extra().sec = &tlsSession{cfg: d.tls}
		c.state = stateHandshake // the dial stays in ctx until it ends
		l.beginHandshake(c)
		return
	}
	l.dialOpened(c, d)
}

// dialOpened opens c, whose dial d is over: connected, and its TLS
// handshake ended if it has one. The handler gets it, with the caller's
// context.
func (l *eventloop) dialOpened(c *conn, d *dialSpec) {
	c.ctx, c.state = d.ctx, stateOpen
	if c.flags&flagEnrolled != 0 {
		l.counts.add(countEnrolled)
	} else {
		l.counts.add(countDialed)
	}
	l.start(c)
}

// connectFailed ends c, whose connect failed or was cut short, and tells
// the handler why, unless its host has another address to try: a connect
// refused or unreachable tries the next, within the dial's time.
func (l *eventloop) connectFailed(c *conn, err error) {
	c.state = stateClosed
	l.conns[c.fd] = nil
	l.stopTimers(c)
	l.release(c)
	d := c.ctx.(*dialSpec)
	var se *os.SyscallError
	if len(d.next) > 0 && errors.As(err, &se) && se.Syscall == "connect" && time.Now().Before(d.expires) {
		ip := d.next[0]
		d.next = d.next[1:]
		if d.to(ip) == nil {
			l.connect(d)
			return
		}
	}
	l.dialFailed(d, err)
}

// dialFailed counts d's failure and tells the handler, if it listens.
func (l *eventloop) dialFailed(d *dialSpec, err error) {
	l.counts.add(countDialFailed)
	if h, ok := l.eng.handler.(DialFailedHandler); ok {
		defer l.recoverConn(nil)
		h.OnDialFailed(d.addr, d.ctx, d.opError(err))
	}
}

// execute runs a function Loop.Execute posted.
func (l *eventloop) execute(fn func()) {
	defer l.recoverConn(nil)
	fn()
}
