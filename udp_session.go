package sluice

import (
	"errors"
	"net/netip"
	"time"

	"github.com/sluicenet/sluice/proxyproto"
)

// ErrTooManySessions is what OnDatagramError hears of a datagram from a
// peer that has no session when its loop holds as many as
// WithDatagramSessions allows: the datagram is dropped, and counted in
// Stats.SessionsRefused.
var ErrTooManySessions = errors.New("sluice: too many datagram sessions")

// DefaultSessionIdleTimeout is how long a datagram session lasts after
// its peer's last datagram when WithDatagramSessions is given no idle
// time: the 30 s Linux's connection tracking gives a UDP flow.
const DefaultSessionIdleTimeout = 30 * time.Second

// DefaultMaxSessions is how many datagram sessions a loop holds at most
// when WithDatagramSessions is given no maximum.
const DefaultMaxSessions = 4096

// WithDatagramSessions gives each peer of a UDP listener a session of its
// own, a Conn as a connection's, so that a handler keeps what it knows of
// a peer in its Context as it does for a TCP client. A datagram from a
// peer (an address and port, or, with WithProxyProtocol, the client its
// header names) that has no session opens one: OnOpen runs with the
// session's Conn, and then OnTraffic with the datagram, as with each
// later one from that peer. The session's Write, and AsyncWrite from any
// goroutine, answer the peer through the listener's socket (to the
// sender of its last datagram, the proxy's address behind a proxy), a
// Write gathered with the socket's other answers as PacketConn says;
// Close, or the Close action, ends it, and OnClose runs; a later datagram
// from the peer opens a new one. OnOpen's Close action refuses the peer:
// its datagram is dropped. A session closes with ErrIdleTimeout
// once its peer has sent nothing for idle (counted in
// Stats.IdleTimeouts; what the server sends does not keep it open, since
// a peer that has gone cannot say so), which Conn.SetIdleTimeout changes
// for it, and with nil when the engine stops or the listener closes.
//
// A loop holds at most max sessions, about 600 bytes each besides the
// handler's context, whatever the senders do: a datagram from a peer
// without a session past that is dropped, counted in
// Stats.SessionsRefused, and told to a DatagramErrorHandler with
// ErrTooManySessions; each peer's own datagrams still reach its session.
// A loop's sessions are its listener sockets' peers: with
// WithReusePort(true) the kernel keeps a peer on one socket, so on one
// loop. idle zero or less means DefaultSessionIdleTimeout; max zero or
// less, DefaultMaxSessions.
//
// A session's Conn has no descriptor of its own: Fd is the listener's
// socket's, ID is zero (Engine.Kill does not reach it), and it is not
// counted in Stats.Conns or Loop.CountConnections. Without this option a
// listener's socket has no OnOpen or OnClose, and OnTraffic gets the
// socket's own Conn for every datagram (PacketConn).
func WithDatagramSessions(idle time.Duration, max int) Option {
	return func(o *options) {
		o.sessionIdle, o.sessionMax = idle, max
		if idle <= 0 {
			o.sessionIdle = DefaultSessionIdleTimeout
		}
		if max <= 0 {
			o.sessionMax = DefaultMaxSessions
		}
	}
}

// sessions are a loop's datagram sessions, by listener socket and peer,
// and by slot for their timers, whose handles name the slot.
type sessions struct {
	byPeer map[sessionKey]*udpConn
	slots  []*udpConn
	free   []int32
}

type sessionKey struct {
	sock *udpConn
	peer netip.AddrPort
}

// session returns the session of client on u, a listener's socket, for
// p, a datagram from from: the one open, whose idle deadline starts over,
// or a new one, opened with OnOpen. It returns nil, the datagram dropped,
// when the loop holds as many as it may, or when OnOpen closed it.
func (l *eventloop) session(u *udpConn, p []byte, from, client netip.AddrPort, h proxyproto.Header, hasHeader bool) *udpConn {
	ss := &l.sessions
	k := sessionKey{u, client}
	if s := ss.byPeer[k]; s != nil {
		s.peer = from
		if s.idle > 0 {
			l.wheel.Extend(s.idleTimer, l.now()+int64(s.idle))
		}
		return s
	}
	if len(ss.byPeer) >= l.eng.opts.sessionMax {
		u.header, u.hasHeader = h, hasHeader
		l.dropDatagram(u, p, from, client, countSessionsRefused, ErrTooManySessions)
		u.header, u.hasHeader = proxyproto.Header{}, false // it views the datagram
		return nil
	}
	s := &udpConn{fd: u.fd, ds: u.ds, loop: l, v6: u.v6, addr: u.addr, origin: Accepted,
		sock: u, peer: from, client: client, header: h, hasHeader: hasHeader}
	ss.add(k, s)
	l.setSessionIdle(s, l.eng.opts.sessionIdle)
	s.busy = true
	out, a := l.onPacketOpen(s)
	if len(out) > 0 && !s.closing {
		s.Write(out)
	}
	l.packetDone(s, a)
	if s.state == stateClosed {
		s.header, s.hasHeader = proxyproto.Header{}, false // it views the datagram
		return nil
	}
	return s
}

func (ss *sessions) add(k sessionKey, s *udpConn) {
	if ss.byPeer == nil {
		ss.byPeer = make(map[sessionKey]*udpConn)
	}
	ss.byPeer[k] = s
	if n := len(ss.free); n > 0 {
		s.slot = ss.free[n-1]
		ss.free = ss.free[:n-1]
		ss.slots[s.slot] = s
		return
	}
	s.slot = int32(len(ss.slots))
	ss.slots = append(ss.slots, s)
}

func (ss *sessions) remove(s *udpConn) {
	delete(ss.byPeer, sessionKey{s.sock, s.client})
	ss.slots[s.slot] = nil
	ss.free = append(ss.free, s.slot)
}

// setSessionIdle closes s once its peer has sent nothing for d from now
// on, or never when d is zero or less.
func (l *eventloop) setSessionIdle(s *udpConn, d time.Duration) {
	s.idle = max(d, 0)
	l.disarm(&s.idleTimer)
	if d > 0 {
		s.idleTimer = l.timers().Insert(l.now()+int64(d), uint64(s.slot)<<timerKindBits|uint64(timerSession))
	}
}

// sessionIdle closes the session in slot, whose peer has been idle past
// its deadline.
func (l *eventloop) sessionIdle(slot int32) {
	if int(slot) >= len(l.sessions.slots) || l.sessions.slots[slot] == nil {
		return // closing a session cancels its timer; this is a bug's guard
	}
	s := l.sessions.slots[slot]
	s.idleTimer = noTimer
	l.counts.add(countIdleTimeouts)
	l.closePacket(s, ErrIdleTimeout)
}

// endSession ends s, closed with err: OnClose runs once it has let go of
// its slot, so that a datagram its peer sends meanwhile opens a new one.
func (l *eventloop) endSession(s *udpConn, err error) {
	l.disarm(&s.idleTimer)
	l.sessions.remove(s)
	l.countPacketClose(s, err)
	s.busy = true
	l.onPacketClose(s, err)
	s.busy = false
	s.fd = -1
}

// closeSessions closes the sessions of u, a listener's socket that is
// closing, as by a stop.
func (l *eventloop) closeSessions(u *udpConn) {
	for k, s := range l.sessions.byPeer {
		if k.sock == u {
			s.byStop = true
			l.closePacket(s, nil)
		}
	}
}

// SetIdleTimeout gives a datagram session (WithDatagramSessions) an idle
// timeout of d from now on, or none when d is zero or less; it does
// nothing to any other UDP socket.
func (u *udpConn) SetIdleTimeout(d time.Duration) {
	if u.sock != nil && u.state != stateClosed {
		u.loop.setSessionIdle(u, d)
	}
}
