package sluice

import (
	"net/netip"

	"github.com/sluicenet/sluice/proxyproto"
)

// A listener's UDP socket may check each datagram before the handler sees
// it, in this order: its PROXY header (WithProxyProtocol), which names the
// client; the client's rate (WithDatagramRateLimit); and its session
// (WithDatagramSessions), which the datagram opens if it is the client's
// first. A socket that makes no check (udpConn.vet) hands each datagram
// straight to OnTraffic.

// vetDatagram checks p, a datagram from from on u, a listener's socket,
// and hands what it carries to the handler if the checks let it through:
// as the datagram in hand of u, or of its client's session.
func (l *eventloop) vetDatagram(u *udpConn, p []byte, from netip.AddrPort, truncated bool) {
	client := from
	var h proxyproto.Header
	hasHeader := false
	if u.proxy != ProxyOff {
		hdr, n, err := proxyproto.ParseDatagram(p)
		switch {
		case err == nil:
			p, h, hasHeader = p[n:], hdr, true
			if hdr.Command == proxyproto.Proxy && (hdr.Transport == proxyproto.UDP4 || hdr.Transport == proxyproto.UDP6) {
				client = hdr.Source
			}
		case err == proxyproto.ErrNotProxy && u.proxy == ProxyOptional:
		case err == proxyproto.ErrNotProxy:
			l.dropDatagram(u, p, from, from, countProxyMissing, err)
			return
		default:
			l.dropDatagram(u, p, from, from, countProxyInvalid, err)
			return
		}
	}
	if l.eng.opts.dgramRate > 0 && l.overRate(client) {
		l.counts.add(countDatagramsRateLimited)
		return
	}
	c := u
	if l.eng.opts.sessionMax > 0 {
		if c = l.session(u, p, from, client, h, hasHeader); c == nil {
			return
		}
	} else {
		u.peer, u.client = from, client
	}
	c.header, c.hasHeader = h, hasHeader
	l.handDatagram(c, p, truncated)
	c.header, c.hasHeader = proxyproto.Header{}, false // it views the datagram
	if c == u {
		u.peer, u.client = netip.AddrPort{}, netip.AddrPort{} // Write speaks of the datagram in hand only
	}
}

// dropDatagram counts p, a datagram from from on u for client, as why
// says, and tells the handler with err if it listens (DatagramErrorHandler).
func (l *eventloop) dropDatagram(u *udpConn, p []byte, from, client netip.AddrPort, why counter, err error) {
	l.counts.add(why)
	if _, ok := l.eng.handler.(DatagramErrorHandler); !ok {
		return
	}
	u.peer, u.client, u.buf = from, client, p
	u.busy = true
	a := l.datagramError(u, err)
	u.buf = nil
	u.peer, u.client = netip.AddrPort{}, netip.AddrPort{}
	l.packetDone(u, a)
}
