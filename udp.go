package sluice

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/kill"
	"github.com/sluicenet/sluice/proxyproto"
	"github.com/sluicenet/sluice/wheel"
)

// ErrDatagramTruncated reports a datagram larger than the loop's read
// buffer (WithReadBufferCap): the kernel kept only what fit. OnTraffic
// does not see it; a DatagramErrorHandler does, and Stats counts it.
var ErrDatagramTruncated = errors.New("sluice: datagram larger than the read buffer, truncated")

// ErrNeedAddress is returned by AsyncWrite and AsyncWritev on the Conn of
// a UDP socket that is not connected, which has no peer of its own:
// PacketConn.AsyncWriteTo names the address.
var ErrNeedAddress = errors.New("sluice: a UDP socket that is not connected needs an address (AsyncWriteTo)")

// errPacketUnsupported wraps errors.ErrUnsupported for what a UDP socket
// cannot do: pause, half-close, TCP's options.
var errPacketUnsupported = fmt.Errorf("sluice: not for a UDP socket: %w", errors.ErrUnsupported)

// PacketConn is the Conn of a UDP socket, which a handler's callbacks get
// as a Conn; a type assertion reaches AsyncWriteTo.
//
// A UDP listener ("udp://host:port", udp4, udp6) has one socket per loop
// with WithReusePort(true), the kernel spreading senders over them, and
// otherwise one, on one loop. OnTraffic runs once per datagram with its
// socket's Conn: RemoteAddr is the datagram's sender, Next, Peek, Read
// and Discard give its bytes, and Write sends one datagram to that sender
// (Writev gathers its slices into one). That holds where the kernel
// coalesced a sender's burst into one receive, which it does on Linux's
// epoll when the read buffer (WithReadBufferCap) holds 64 KiB, the
// default (UDP_GRO, set on every UDP socket a loop watches, and turned
// off where the loop could not split what it coalesces: elsewhere, or
// with smaller read buffers). The kernel coalesces as datagrams arrive,
// so a socket enrolled with UDP_GRO on brings the bursts it coalesced
// before its loop took it, which only such a loop splits: elsewhere each
// reaches OnTraffic as one datagram, or truncated. The answers are gathered and
// sent together once the loop is done with what the socket's receive
// brought: with one sendmmsg(2) on Linux's epoll, with the loop's other
// submissions on io_uring; elsewhere each is sent at once. A gathered
// Write returns len(p) and nil, and a failure the kernel reports when
// the batch goes out is dropped, as the network drops a datagram, and
// counted in Stats.DatagramsSendFailed, as is every send the kernel
// refuses at once, which Write returns. A datagram larger than its
// address family carries (65,507 bytes over IPv4, 65,527 over IPv6) is
// refused with EMSGSIZE everywhere, and counted too. What the handler
// leaves unread is dropped with the datagram. No OnOpen or OnClose runs for a
// listener's socket, which is the engine's until it stops. The Conn is the
// socket's, the same for every datagram: RemoteAddr, Next and Write speak
// of the datagram in hand only inside OnTraffic. From elsewhere, or later,
// AsyncWriteTo names the address.
//
// A connected UDP socket (Engine.Dial of "udp://host:port", Engine.Enroll
// of a connected *net.UDPConn) is a connection as a TCP one is: OnOpen,
// OnTraffic per datagram from its peer only, Write to its peer (at once
// on epoll, so that it returns the send's error; with the loop's other
// submissions on io_uring, where a failure the kernel reports later
// closes the socket), AsyncWrite from any goroutine, Close, and OnClose.
// An ICMP port unreachable, which the kernel reports on the socket's next
// receive or send, closes it with an error that errors.Is tells as
// syscall.ECONNREFUSED.
//
// With WithProxyProtocol a listener's socket reads the version 2 header
// a proxy that relays UDP prepends to each datagram (ProxyOptional: when
// it begins with one): RemoteAddr is then the client the header names,
// ProxyHeader returns the header, whose TLVs view the datagram and last
// only as long as the callback, and Next and Peek give what follows it;
// Write answers the proxy, the datagram's real sender, without a header.
// A datagram whose header is malformed, or, in ProxyRequired mode,
// missing, is dropped and counted (Stats.ProxyInvalid, ProxyMissing).
// With WithDatagramSessions each peer of a listener has a Conn of its own.
//
// PauseRead, ResumeRead, CloseWrite, SetNoDelay, SetKeepAlive and
// SetLinger return an error wrapping errors.ErrUnsupported; SetHalfClose
// does nothing, and SetIdleTimeout does nothing but to a datagram session;
// Flush has nothing to send, since each Write is sent at once or with its
// batch, which no callback outlasts.
type PacketConn interface {
	Conn
	// AsyncWriteTo sends p as one datagram to addr (a *net.UDPAddr, or
	// any net.Addr whose String is "host:port" with a literal IP) from
	// this socket, from any goroutine, and calls cb on the loop once it
	// is sent, with the send's error, on every backend (a datagram with a
	// callback is sent with sendto(2) at once, io_uring's too). p must
	// not change until cb runs; cb
	// may be nil. What is posted and not yet sent counts against
	// WithMaxOutbound (and in OutboundQueued), each datagram its bytes
	// and the 144 or so its posting takes, so that many small or empty
	// ones are bounded too, as does each Wake until it runs; past it, it
	// returns ErrOutboundFull; it returns ErrEngineStopped when the
	// engine no longer runs. Posted datagrams are all a UDP socket holds:
	// its loop sends each when it takes it, or drops it and tells cb why
	// (a full send buffer: an error errors.Is tells as syscall.EAGAIN or
	// ENOBUFS), never keeping it to send later, so the socket adds
	// nothing to Stats.OutboundHeld. Writable answers false while what is
	// posted is past WithWriteBufferCap, and OnDrain follows once it is
	// down to half of it, as for a stream. On a connected
	// socket addr is its peer's or nil; another is refused with
	// ErrInvalidAddr, as is an address it cannot read, and on any error
	// cb never runs.
	AsyncWriteTo(p []byte, addr net.Addr, cb AsyncCallback) error
}

// DatagramErrorHandler is an EventHandler that hears of datagrams a UDP
// socket received but could not hand to OnTraffic whole.
type DatagramErrorHandler interface {
	// OnDatagramError runs on the socket's loop for a datagram dropped
	// unseen, with why; the datagram is counted in Stats either way:
	//
	//   - ErrDatagramTruncated: larger than the read buffer
	//     (WithReadBufferCap); Next and Peek give the part that fit, after
	//     its PROXY header if it has one (Stats.DatagramsTruncated).
	//   - proxyproto.ErrNotProxy: without the PROXY header a listener
	//     requires (Stats.ProxyMissing); an error wrapping
	//     proxyproto.ErrInvalid: with a malformed one (Stats.ProxyInvalid).
	//     c's RemoteAddr is the datagram's real sender, and Next and Peek
	//     give all of it.
	//   - ErrTooManySessions: from a peer with no session when its loop
	//     holds as many as WithDatagramSessions allows
	//     (Stats.SessionsRefused); c's RemoteAddr is that peer (behind a
	//     proxy, the client its header names), ProxyHeader the datagram's
	//     header if it has one, and Next and Peek give what follows it.
	//
	// c is the socket's Conn, or a truncated datagram's session's.
	OnDatagramError(c Conn, err error) Action
}

// udpConn is a UDP socket on a loop: a listener's, which takes datagrams
// from anyone, or a connected one, dialed or enrolled.
type udpConn struct {
	fd        int
	ds        driverSlot // what the loop's driver keeps for it
	loop      *eventloop
	state     connState // stateOpen, then stateClosed
	connected bool
	origin    Origin
	v6        bool           // an IPv6 socket, which reaches IPv4 peers mapped
	addr      net.Addr       // a listener's address, as Engine.Addrs lists it
	peer      netip.AddrPort // connected: its peer; a session's: its peer's last sender; else the sender of the datagram in hand
	buf       []byte         // the datagram in hand
	id        uint64         // connected: its kill.ConnID
	ctx       any
	busy      bool  // a callback for it runs
	closeErr  error // closed while busy: closed with this once the callback returns
	closing   bool
	byStop    bool         // closed by a stop of the engine, for Stats
	perBuffer int          // the most datagrams a buffer of its last receive held (receivePackets)
	posted    atomic.Int64 // bytes AsyncWriteTo posted, not yet sent, and their tasks and Wakes'
	// closeAsked: Close has posted its task; later calls post none.
	closeAsked atomic.Bool
	drainOwed  atomic.Bool // Writable said false: OnDrain is owed once posted falls to half the mark

	// A listener's socket's checks before a datagram reaches the handler
	// (udp_vet.go): vet says whether it makes any.
	vet   bool
	proxy ProxyMode

	// What the PROXY header of the datagram in hand said (udp_vet.go):
	// client, when valid, is RemoteAddr in place of peer.
	client    netip.AddrPort
	header    proxyproto.Header
	hasHeader bool

	// A session's (udp_session.go): the listener's socket it speaks
	// through, and its idle deadline.
	sock      *udpConn
	slot      int32
	idle      time.Duration
	idleTimer wheel.Timer
}

// packets are a loop's UDP sockets, by descriptor, and a buffer Writev
// gathers a datagram in.
type packets struct {
	socks  []*udpConn
	n      int // how many socks are set
	gather []byte
	batch  *socket.Batch // made with the loop's first UDP socket's first datagram
	rates  []rateBucket  // WithDatagramRateLimit's, made with the first datagram it limits
}

// WithDatagramRateLimit bounds how many datagrams a second one source (an
// IPv4 address, or an IPv6 /64; with WithProxyProtocol, the client a
// datagram's header names) has handed to OnTraffic on a UDP listener's
// socket, allowing bursts of up to burst (at least one) at
// once; datagrams over it are dropped unseen and counted in
// Stats.DatagramsRateLimited. Each loop keeps the sources' rates in a
// fixed table of rateBuckets entries by hash, 64 KiB, whatever the
// senders do: sources that share an entry share its rate. Connected
// sockets are not limited. Zero or less, the default, turns it off.
func WithDatagramRateLimit(perSecond, burst int) Option {
	return func(o *options) {
		o.dgramRate, o.dgramBurst = max(perSecond, 0), max(burst, 1)
	}
}

// rateBuckets is how many sources' rates a loop tells apart.
const rateBuckets = 4096

// rateBucket is a token bucket: tokens as they were at at.
type rateBucket struct {
	tokens float64
	at     int64
}

// overRate reports whether a datagram from from is over its source's
// rate, and takes a token for it if not.
func (l *eventloop) overRate(from netip.AddrPort) bool {
	o := &l.eng.opts
	ps := &l.packets
	if ps.rates == nil {
		ps.rates = make([]rateBucket, rateBuckets)
	}
	k := kill.SourceKey(from.Addr())
	b := &ps.rates[(k*0x9e3779b97f4a7c15)>>52] // the top 12 bits: 4096 entries
	now := l.now()
	if b.at == 0 {
		b.tokens = float64(o.dgramBurst)
	} else {
		b.tokens = min(float64(o.dgramBurst), b.tokens+float64(now-b.at)*float64(o.dgramRate)/float64(time.Second))
	}
	b.at = now
	if b.tokens < 1 {
		return true
	}
	b.tokens--
	return false
}

// at returns the loop's UDP socket on fd, if fd is one.
func (ps *packets) at(fd int) *udpConn {
	if fd < 0 || fd >= len(ps.socks) {
		return nil
	}
	return ps.socks[fd]
}

func (ps *packets) put(u *udpConn) {
	if u.fd >= len(ps.socks) {
		ps.socks = append(ps.socks, make([]*udpConn, u.fd+1-len(ps.socks))...)
	}
	ps.socks[u.fd] = u
	ps.n++
}

func (ps *packets) remove(u *udpConn) {
	if ps.at(u.fd) == u {
		ps.socks[u.fd] = nil
		ps.n--
	}
}

// isPacket reports whether network is UDP's.
func isPacket(network string) bool {
	return network == "udp" || network == "udp4" || network == "udp6"
}

// listenPackets opens the UDP sockets s asks for on loops: one each,
// sharing the port with SO_REUSEPORT, or one on the first.
func (e *engine) listenPackets(s listenSpec, network, address string, loops []*eventloop) error {
	if s.tls != nil {
		return fmt.Errorf("%w: %q: TLS is for stream listeners", ErrInvalidAddr, s.addr)
	}
	vet := s.proxy != ProxyOff || e.opts.dgramRate > 0 || e.opts.sessionMax > 0
	sock := e.sock
	if sock.RecvBuf == 0 {
		sock.RecvBuf = DefaultPacketRecvBuffer
	}
	for i, l := range loops {
		fd, addr, v6, err := socket.ListenPacket(network, address, sock)
		if err != nil {
			return fmt.Errorf("sluice: listen %s %s: %w", network, address, err)
		}
		if i == 0 {
			e.addrs = append(e.addrs, addr)
			address = addr.String() // the others bind the port the first got
		}
		l.packets.put(&udpConn{fd: fd, loop: l, v6: v6, addr: e.addrs[len(e.addrs)-1], vet: vet, proxy: s.proxy})
	}
	return nil
}

// startPackets has the loop's driver receive on its listeners' UDP
// sockets, once the driver has started.
func (l *eventloop) startPackets() error {
	for _, u := range l.packets.socks {
		if u != nil && !u.connected {
			if err := l.drv.watchPackets(u); err != nil {
				return err
			}
		}
	}
	return nil
}

// connectPacket opens d's connected UDP socket on the loop: a UDP connect
// sends nothing and ends at once, so it opens at once.
func (l *eventloop) connectPacket(d *dialSpec) {
	fd := d.fd
	if fd < 0 {
		var local netip.AddrPort
		if d.local != "" {
			ap, err := localAddrPort(d.local)
			if err != nil {
				l.dialFailed(d, err)
				return
			}
			local = ap
		}
		var err error
		if fd, err = socket.DialPacket(d.remote, local, d.device, d.sock); err != nil {
			l.dialFailed(d, err)
			return
		}
	}
	id, err := l.eng.table.Claim(l.idx, uint64(fd))
	if err != nil {
		socket.Close(fd)
		l.dialFailed(d, ErrTooManyConns)
		return
	}
	u := &udpConn{fd: fd, loop: l, connected: true, origin: Dialed, peer: d.remote, id: uint64(id), ctx: d.ctx}
	if d.fd >= 0 {
		u.origin = Enrolled
	}
	l.packets.put(u)
	l.count.Add(1)
	if err := l.drv.watchPackets(u); err != nil {
		l.releasePacket(u)
		l.dialFailed(d, err)
		return
	}
	if u.origin == Enrolled {
		l.counts.add(countEnrolled)
	} else {
		l.counts.add(countDialed)
	}
	u.busy = true
	out, a := l.onPacketOpen(u)
	if len(out) > 0 && !u.closing {
		u.Write(out)
	}
	l.packetDone(u, a)
}

// localAddrPort reads DialLocalAddr's "ip" or "ip:port".
func localAddrPort(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: local address %q: %v", ErrInvalidAddr, s, err)
	}
	return netip.AddrPortFrom(ip, 0), nil
}

// packetBatch is how many datagrams one readiness of a socket brings to
// the handler at most (but for the rest of a buffer the kernel coalesced:
// receivePackets), so that a flooded socket leaves the loop's other
// sockets their turn; a level-triggered poller reports the rest next.
const packetBatch = 64

// recvBytes bounds the memory a loop receives datagrams into where it
// receives several with one recvmmsg(2), each into a read buffer's worth
// (WithReadBufferCap): packetBatch of the default 64 KiB, fewer of larger
// ones, as the ring's UDP buffers are.
const recvBytes = 4 << 20

// recvBatch returns how many datagrams one recvmmsg takes at most, for
// read buffers of size bytes.
func recvBatch(size int) int {
	return min(max(recvBytes/size, 1), packetBatch)
}

// receivePackets hands u's waiting datagrams to the handler, up to
// budget of them: drivers call it when u is readable, with packetBatch or
// what is left of it. A receive the kernel coalesced may pass the budget,
// all of whose datagrams it hands over, so it asks for no more buffers
// than the budget's datagrams fill at as many a buffer as u's last
// receive brought: a flood of coalesced bursts passes it by a buffer's
// worth at most, and only the first receive of one by more. It returns
// how many it handed over, and whether it found the socket empty, rather
// than spent the budget (or closed).
func (l *eventloop) receivePackets(u *udpConn, budget int) (got int, empty bool) {
	ps := &l.packets
	if ps.batch == nil {
		size := l.eng.opts.readBufferCap
		ps.batch = socket.NewBatch(recvBatch(size), size)
	}
	b := ps.batch
	for got < budget {
		ask := min(b.Len(), max((budget-got)/max(u.perBuffer, 1), 1))
		n, drained, err := b.Recv(u.fd, ask)
		switch {
		case isErrno(err, syscall.EAGAIN):
			return got, true
		case err != nil:
			l.packetFailed(u, err)
			return got, false
		}
		u.perBuffer = b.PerBuffer()
		for i := range n {
			p, from, truncated := b.At(i)
			l.datagram(u, p, from, truncated)
			got++
			if u.state == stateClosed {
				l.dropReceived(b, i+1, n)
				return got, false
			}
		}
		if drained {
			return got, true // none left
		}
	}
	return got, false
}

// isErrno reports whether err is e itself: a comparison of the concrete
// type, cheaper than comparing interfaces once per receive.
func isErrno(err error, e syscall.Errno) bool {
	got, ok := err.(syscall.Errno)
	return ok && got == e
}

// dropReceived drops the datagrams from to n of b, received for a socket
// that closed before they reached the handler, wiping them
// WithWipeBuffers as datagram does those it hands over.
func (l *eventloop) dropReceived(b *socket.Batch, from, n int) {
	if !l.eng.opts.wipe {
		return
	}
	for i := from; i < n; i++ {
		p, _, _ := b.At(i)
		clear(p)
	}
}

// packetFailed handles a receive that failed: a connected socket closes
// with the error (ECONNREFUSED after an ICMP port unreachable); a
// listener's goes on, since no one sender's trouble is its own.
func (l *eventloop) packetFailed(u *udpConn, err error) {
	err = os.NewSyscallError("recvmsg", err)
	if u.connected {
		l.closePacket(u, err)
		return
	}
	l.eng.opts.logger.Debug("sluice: receiving a datagram failed", "addr", u.addr, "err", err)
}

// datagram hands the handler p, a datagram from from, once the socket's
// checks, if it makes any, let it through.
func (l *eventloop) datagram(u *udpConn, p []byte, from netip.AddrPort, truncated bool) {
	l.counts.addN(countBytesIn, len(p))
	switch {
	case u.connected:
		l.handDatagram(u, p, truncated)
	case u.vet:
		l.vetDatagram(u, p, from, truncated)
	default:
		u.peer = from
		l.handDatagram(u, p, truncated)
		u.peer = netip.AddrPort{} // Write speaks of the datagram in hand only
	}
	if l.eng.opts.wipe {
		clear(p)
	}
}

// handDatagram hands p to the handler as c's datagram in hand: to
// OnTraffic, or, truncated, to OnDatagramError.
func (l *eventloop) handDatagram(c *udpConn, p []byte, truncated bool) {
	c.buf = p
	c.busy = true
	a := None
	if truncated {
		l.counts.add(countDatagramsTruncated)
		a = l.datagramError(c, ErrDatagramTruncated)
	} else {
		a = l.onPacketTraffic(c)
	}
	c.buf = nil
	l.packetDone(c, a)
}

// datagramError tells the handler, if it listens, why c's datagram in
// hand does not reach OnTraffic, and returns its Action.
func (l *eventloop) datagramError(c *udpConn, err error) Action {
	if h, ok := l.eng.handler.(DatagramErrorHandler); ok {
		return l.onDatagramError(h, c, err)
	}
	return None
}

// packetDone ends a callback on u and carries out its action: Close
// closes a connected socket or a session, and does nothing to a
// listener's socket.
func (l *eventloop) packetDone(u *udpConn, a Action) {
	u.busy = false
	if u.closing {
		l.closePacket(u, u.closeErr)
		return
	}
	switch a {
	case Close:
		if u.isConn() {
			l.closePacket(u, nil)
		}
	case Shutdown:
		l.eng.shutdownAsked()
	}
}

// sendPacket sends p to to from u, or to u's peer when it is connected. A
// connected socket that learns its peer is unreachable closes. now sends
// it with sendto at once, whatever the driver, for a caller told the
// send's result (AsyncWriteTo's callback): the ring reports only a
// failure, and later.
func (l *eventloop) sendPacket(u *udpConn, p []byte, to netip.AddrPort, now bool) (int, error) {
	if u.state == stateClosed {
		return 0, ErrConnClosed
	}
	dst := to
	if u.connected {
		dst, to = u.peer, netip.AddrPort{}
	}
	var (
		n   int
		err error
	)
	switch {
	case len(p) > maxDatagram || len(p) > maxDatagram4 && dst.Addr().Unmap().Is4():
		err = syscall.EMSGSIZE
	case !u.connected && !u.v6 && !to.Addr().Unmap().Is4():
		err = syscall.EAFNOSUPPORT // an IPv4 socket
	case now:
		n, err = socket.SendTo(u.fd, p, to, u.v6)
	default:
		n, err = l.drv.sendDatagram(u, p, to)
	}
	if err != nil {
		err = os.NewSyscallError("sendto", err)
		l.sendFailed(u, err)
		return 0, err
	}
	l.counts.addN(countBytesOut, n)
	return n, nil
}

// maxDatagram is the largest datagram UDP carries over IPv6: 65535 bytes
// less its header's 8; maxDatagram4 over IPv4, less IPv4's 20 more. Both
// are checked before sending, since the ring would learn of EMSGSIZE only
// once Write had returned.
const (
	maxDatagram  = 65535 - 8
	maxDatagram4 = maxDatagram - 20
)

// sendFailed counts a datagram u failed to send, and closes u, connected,
// when err says its peer is unreachable (ECONNREFUSED after an ICMP port
// unreachable) or its socket failed; a full socket buffer or a datagram
// too large closes nothing. Every datagram that never left comes here
// once, or to lostSend once its socket has closed.
func (l *eventloop) sendFailed(u *udpConn, err error) {
	l.lostSend(err)
	if u.connected && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.EMSGSIZE) {
		l.closePacket(u, err)
		return
	}
}

// lostSend counts a datagram that failed to send with err, and logs it.
func (l *eventloop) lostSend(err error) {
	l.counts.add(countDatagramsSendFailed)
	l.eng.opts.logger.Debug("sluice: sending a datagram failed", "err", err)
}

// closePacket closes u, with err for OnClose: at once, or, inside one of
// its callbacks, once that returns.
func (l *eventloop) closePacket(u *udpConn, err error) {
	if u.state == stateClosed {
		return
	}
	if u.busy {
		if !u.closing {
			u.closing, u.closeErr = true, err
		}
		return
	}
	u.state = stateClosed
	switch {
	case u.sock != nil:
		l.endSession(u, err)
		return
	case !u.connected:
		l.closeSessions(u)
		l.packets.remove(u)
		l.drv.closePackets(u)
		u.fd = -1 // its number may be reused: the Conn names no socket
		return
	}
	l.eng.table.Kill(kill.ConnID(u.id))
	l.countPacketClose(u, err)
	u.busy = true
	l.onPacketClose(u, err)
	u.busy = false
	l.releasePacket(u)
}

// isConn reports whether u is a connection of its own, with OnOpen and
// OnClose: a connected socket or a session.
func (u *udpConn) isConn() bool { return u.connected || u.sock != nil }

// countPacketClose counts u, a connection of its own closing with err, in
// Stats, as countClose counts a stream's. No peer ends a UDP exchange.
func (l *eventloop) countPacketClose(u *udpConn, err error) {
	if why, ok := closeCounter(err, false, u.byStop); ok {
		l.counts.add(why)
	}
}

// releasePacket lets go of u, connected and done with: its socket, its
// slot in the engine's table, its count.
func (l *eventloop) releasePacket(u *udpConn) {
	u.state = stateClosed
	l.packets.remove(u)
	l.drv.closePackets(u)
	u.fd = -1
	l.count.Add(-1)
	l.eng.table.Release(kill.ConnID(u.id))
}

// closePackets closes the loop's UDP sockets: the listeners' only, or all,
// the connected ones with err.
func (l *eventloop) closePackets(all bool, err error) {
	if l.packets.n == 0 {
		return
	}
	for _, u := range l.packets.socks {
		if u != nil && (all || !u.connected) {
			u.byStop = true
			l.closePacket(u, err)
		}
	}
}

// killPacket resets the connected UDP socket fd if it is id's, for
// Engine.Kill, and reports whether it was.
func (l *eventloop) killPacket(fd int, id uint64) bool {
	u := l.packets.at(fd)
	if u == nil || !u.connected || u.id != id {
		return false
	}
	l.counts.add(countKilled)
	l.closePacket(u, ErrKilled)
	return true
}

// runPacketTask runs what another goroutine posted for u.
func (l *eventloop) runPacketTask(t *task) {
	u := t.u
	var err error
	if u.state == stateClosed {
		err = ErrConnClosed
	} else {
		switch t.kind {
		case taskPacketWrite:
			to := t.to
			if u.sock != nil && !to.IsValid() {
				to = u.peer // a session's
			}
			if len(t.bufs) > 0 {
				_, err = u.sendv(t.bufs, to, t.cb != nil)
			} else {
				_, err = l.sendPacket(u, t.buf, to, t.cb != nil)
			}
		case taskPacketWake:
			u.busy = true
			l.packetDone(u, l.onPacketTraffic(u))
		case taskPacketClose:
			l.closePacket(u, nil)
		}
	}
	l.unpostPacket(u, t.reserved) // a write's or Wake's, as it was posted
	if t.cb != nil {
		u.busy = u.state != stateClosed
		l.onPacketAsync(u, t.cb, err)
		if u.busy {
			l.packetDone(u, None)
		}
	}
}

// unpostPacket takes n, what a task posted for u counted, off u's posted
// bytes, and runs the OnDrain a false Writable is owed once they are down
// to half the high-water mark. A datagram is sent or dropped when its
// task runs, so posted bytes are all a UDP socket ever holds.
func (l *eventloop) unpostPacket(u *udpConn, n int64) {
	left := u.posted.Add(-n)
	if l.eng.drain == nil || !u.drainOwed.Load() || left > int64(l.eng.opts.writeBufCap/2) {
		return
	}
	u.drainOwed.Store(false)
	if u.state == stateClosed {
		return
	}
	u.busy = true
	l.packetDone(u, l.onPacketDrain(u))
}

// The handler's callbacks for a UDP socket, each guarded: a panic closes
// a connected socket or a session and is logged; a listener's socket goes
// on.

func (l *eventloop) onPacketTraffic(u *udpConn) Action {
	defer l.recoverPacket(u)
	return l.eng.handler.OnTraffic(u)
}

func (l *eventloop) onPacketOpen(u *udpConn) (out []byte, a Action) {
	defer l.recoverPacket(u)
	return l.eng.handler.OnOpen(u)
}

func (l *eventloop) onPacketClose(u *udpConn, err error) {
	defer l.recoverPacket(u)
	if l.eng.handler.OnClose(u, err) == Shutdown {
		l.eng.shutdownAsked()
	}
}

func (l *eventloop) onDatagramError(h DatagramErrorHandler, u *udpConn, err error) Action {
	defer l.recoverPacket(u)
	return h.OnDatagramError(u, err)
}

func (l *eventloop) onPacketDrain(u *udpConn) Action {
	defer l.recoverPacket(u)
	return l.eng.drain.OnDrain(u)
}

func (l *eventloop) onPacketAsync(u *udpConn, cb AsyncCallback, err error) {
	defer l.recoverPacket(u)
	cb(u, err)
}

func (l *eventloop) recoverPacket(u *udpConn) {
	r := recover()
	if r == nil {
		return
	}
	l.eng.opts.logger.Error("sluice: handler panicked", "panic", r, "stack", string(debug.Stack()))
	if u.isConn() && !u.closing && u.state != stateClosed {
		u.closing, u.closeErr = true, fmt.Errorf("%w: %v", ErrHandlerPanic, r)
	}
}

// The Conn of a UDP socket.

func (u *udpConn) Read(p []byte) (int, error) {
	if len(u.buf) == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}

func (u *udpConn) Next(n int) ([]byte, error) {
	b, err := u.Peek(n)
	if err == nil {
		u.buf = u.buf[len(b):]
	}
	return b, err
}

func (u *udpConn) Peek(n int) ([]byte, error) {
	if n <= 0 {
		return u.buf, nil
	}
	if n > len(u.buf) {
		return u.buf, io.ErrShortBuffer
	}
	return u.buf[:n:n], nil
}

func (u *udpConn) Discard(n int) (int, error) {
	if n <= 0 || n > len(u.buf) {
		n = len(u.buf)
	}
	u.buf = u.buf[n:]
	return n, nil
}

func (u *udpConn) InboundBuffered() int { return len(u.buf) }

func (u *udpConn) Write(p []byte) (int, error) {
	if !u.connected && !u.peer.IsValid() {
		return 0, ErrNeedAddress
	}
	return u.loop.sendPacket(u, p, u.peer, false)
}

func (u *udpConn) Writev(bs [][]byte) (int, error) {
	if !u.connected && !u.peer.IsValid() {
		return 0, ErrNeedAddress
	}
	return u.sendv(bs, u.peer, false)
}

// sendv sends bs, gathered, as one datagram to to, as sendPacket does.
func (u *udpConn) sendv(bs [][]byte, to netip.AddrPort, now bool) (int, error) {
	if size(bs) > maxDatagram { // before the loop keeps a buffer its size
		err := os.NewSyscallError("sendto", syscall.EMSGSIZE)
		if u.state != stateClosed {
			u.loop.sendFailed(u, err)
		}
		return 0, err
	}
	ps := &u.loop.packets
	ps.gather = ps.gather[:0]
	for _, b := range bs {
		ps.gather = append(ps.gather, b...)
	}
	n, err := u.loop.sendPacket(u, ps.gather, to, now)
	if u.loop.eng.opts.wipe {
		clear(ps.gather) // sent, or copied to be
	}
	return n, err
}

func (u *udpConn) Flush() error {
	if u.state == stateClosed {
		return ErrConnClosed
	}
	return nil
}

func (u *udpConn) OutboundBuffered() int { return 0 }
func (u *udpConn) OutboundQueued() int   { return int(u.posted.Load()) }
func (u *udpConn) Context() any          { return u.ctx }
func (u *udpConn) SetContext(v any)      { u.ctx = v }
func (u *udpConn) Fd() int               { return u.fd }
func (u *udpConn) ID() uint64            { return u.id }
func (u *udpConn) Loop() Loop            { return Loop{u.loop} }
func (u *udpConn) Origin() Origin        { return u.origin }

func (u *udpConn) LocalAddr() net.Addr {
	a, err := socket.LocalAddr(u.fd)
	if err != nil {
		return nil
	}
	switch a := a.(type) {
	case *net.TCPAddr:
		return net.UDPAddrFromAddrPort(a.AddrPort())
	case *net.UDPAddr:
		return a
	}
	return nil
}

func (u *udpConn) RemoteAddr() net.Addr {
	ap := u.peer
	if u.client.IsValid() {
		ap = u.client
	}
	if !ap.IsValid() {
		return nil
	}
	return net.UDPAddrFromAddrPort(unmapped(ap))
}

func (u *udpConn) ListenerAddr() net.Addr {
	if u.connected {
		return nil
	}
	return u.addr
}

func (u *udpConn) ProxyHeader() (proxyproto.Header, bool)       { return u.header, u.hasHeader }
func (u *udpConn) ConnectionState() (tls.ConnectionState, bool) { return tls.ConnectionState{}, false }
func (u *udpConn) SetHalfClose(bool)                            {}
func (u *udpConn) PauseRead() error                             { return errPacketUnsupported }
func (u *udpConn) ResumeRead() error                            { return errPacketUnsupported }
func (u *udpConn) CloseWrite() error                            { return errPacketUnsupported }
func (u *udpConn) SetNoDelay(bool) error                        { return errPacketUnsupported }
func (u *udpConn) SetLinger(int) error                          { return errPacketUnsupported }

func (u *udpConn) SetKeepAlive(time.Duration, time.Duration, int) error {
	return errPacketUnsupported
}

func (u *udpConn) SetReadBuffer(n int) error {
	if u.fd < 0 {
		return ErrConnClosed
	}
	return socket.SetRecvBuffer(u.fd, n)
}

func (u *udpConn) SetWriteBuffer(n int) error {
	if u.fd < 0 {
		return ErrConnClosed
	}
	return socket.SetSendBuffer(u.fd, n)
}

// Writable notes that OnDrain is owed before it reads the posted bytes a
// second time, and the loop reads the note after each fall in them
// (unpostPacket), so that one of the two sees the other: a false answer
// is always followed by OnDrain, as a stream's is.
func (u *udpConn) Writable() bool {
	mark := u.loop.eng.opts.writeBufCap
	if u.OutboundQueued() <= mark {
		return true
	}
	u.drainOwed.Store(true)
	return u.OutboundQueued() <= mark
}

func (u *udpConn) AsyncWrite(p []byte, cb AsyncCallback) error {
	if !u.isConn() {
		return ErrNeedAddress
	}
	return u.post(p, nil, netip.AddrPort{}, cb)
}

func (u *udpConn) AsyncWritev(bs [][]byte, cb AsyncCallback) error {
	if !u.isConn() {
		return ErrNeedAddress
	}
	return u.post(nil, bs, netip.AddrPort{}, cb)
}

func (u *udpConn) AsyncWriteTo(p []byte, addr net.Addr, cb AsyncCallback) error {
	var to netip.AddrPort
	switch a := addr.(type) {
	case *net.UDPAddr:
		to = a.AddrPort()
	case nil:
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidAddr, err)
		}
		to = ap
	}
	if !to.IsValid() && !u.isConn() {
		return ErrNeedAddress
	}
	if u.connected && to.IsValid() && unmapped(to) != unmapped(u.peer) {
		return fmt.Errorf("%w: %s: a connected UDP socket sends only to its peer, %s", ErrInvalidAddr, to, u.peer)
	}
	return u.post(p, nil, to, cb)
}

// unmapped is ap with an IPv4-mapped address as IPv4.
func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// post posts a datagram for u to send, counted against WithMaxOutbound
// until it is sent.
func (u *udpConn) post(p []byte, bs [][]byte, to netip.AddrPort, cb AsyncCallback) error {
	n := int64(len(p)+size(bs)) + int64(len(bs))*postedSlice + postedTask
	if !u.reserve(n) {
		return ErrOutboundFull
	}
	t := newTask(taskPacketWrite, nil)
	t.buf, t.bufs, t.to, t.cb = p, bs, to, cb
	return u.postTask(t, n)
}

// postTask posts t for u with the n bytes reserved for it, which the loop
// gives back as it runs t (runPacketTask), or at once if the loop no
// longer takes tasks.
func (u *udpConn) postTask(t *task, n int64) error {
	t.u, t.reserved = u, n
	if err := u.loop.post(t); err != nil {
		u.posted.Add(-n)
		return err
	}
	return nil
}

// reserve counts n more posted bytes against WithMaxOutbound, and
// reports false, counting the refusal, when they would pass it.
func (u *udpConn) reserve(n int64) bool {
	limit := int64(u.loop.eng.opts.maxOutbound)
	for {
		posted := u.posted.Load()
		if limit > 0 && posted+n > limit {
			u.loop.counts.add(countOutboundRefused)
			return false
		}
		if u.posted.CompareAndSwap(posted, posted+n) {
			return true
		}
	}
}

// Wake counts its task against WithMaxOutbound until it runs, as a
// stream's does, so that a goroutine waking the socket faster than its
// OnTraffic runs cannot grow the loop's queue without bound.
func (u *udpConn) Wake(cb AsyncCallback) error {
	if !u.reserve(postedTask) {
		return ErrOutboundFull
	}
	t := newTask(taskPacketWake, nil)
	t.cb = cb
	return u.postTask(t, postedTask)
}

func (u *udpConn) Close() error {
	if !u.isConn() {
		return errPacketUnsupported
	}
	if u.closeAsked.Swap(true) {
		return nil // asked already: as a stream's Close, once
	}
	t := newTask(taskPacketClose, nil)
	t.u = u
	if err := u.loop.post(t); err != nil {
		u.closeAsked.Store(false)
		return err
	}
	return nil
}
