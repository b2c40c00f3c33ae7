package sluice

import (
	"bytes"
	"errors"

	"github.com/sluicenet/sluice/poller"
	"github.com/sluicenet/sluice/proxyproto"
)

// With WithProxyProtocol a connection has a phase between its admission
// and OnOpen: it is registered for reads, but the handler is not called.
// What it sends accumulates in its inbound buffer, as a partial frame does,
// and is parsed after each read. proxyproto bounds what can accumulate: it
// tells a header from plain traffic within 12 bytes, and rejects a version
// 1 line past 107 bytes and a version 2 header past 16+65535.

// awaitHeader starts c's header phase, bounded by the header timeout.
func (l *eventloop) awaitHeader(c *conn) {
	c.state = stateHeader
	l.arm(c, &c.readTimer, timerHeader, l.eng.opts.proxyTimeout)
}

// headerReceived hands c, in its header phase, the bytes p just arrived.
func (l *eventloop) headerReceived(c *conn, p []byte) {
	c.feed(p)
	l.parseHeader(c)
	if l.eng.opts.wipe {
		clear(p)
	}
}

// parseHeader parses the bytes c holds: it opens c once they hold a whole
// header, or plain traffic where that is allowed; keeps them while they
// hold part of one; and closes c, counting why, when they are malformed or
// a required header is missing.
func (l *eventloop) parseHeader(c *conn) {
	h, n, err := proxyproto.Parse(c.buf)
	switch {
	case err == nil:
		c.buf = c.buf[n:]
		c.keepHeader(h)
	case errors.Is(err, proxyproto.ErrIncomplete):
		c.keepUnread()
		return
	case errors.Is(err, proxyproto.ErrNotProxy) && c.flags&flagProxyOptional != 0:
	case errors.Is(err, proxyproto.ErrNotProxy):
		l.refuse(c, countProxyMissing)
		return
	default:
		l.refuse(c, countProxyInvalid)
		return
	}
	l.endHeader(c)
}

// signatureLen is how many bytes tell a PROXY header from plain traffic.
const signatureLen = 12

// headerTimeout closes c, whose header did not complete in time. In
// ProxyOptional mode a client that sent too little to tell is opened
// instead: one that sent nothing may be waiting for the server to speak
// first, and a lone "\r\n" typed at a prompt starts like a version 2
// signature.
func (l *eventloop) headerTimeout(c *conn) {
	if len(c.buf) < signatureLen && c.flags&flagProxyOptional != 0 {
		l.endHeader(c)
		return
	}
	l.refuse(c, countProxyTimeouts)
}

// refuse closes c, in its header phase, and counts why.
func (l *eventloop) refuse(c *conn, why counter) {
	l.counts.add(why)
	l.closeConn(c, nil)
}

// endHeader ends c's header phase: it counts c against the client's
// source, then opens it and hands the bytes that followed the header, if
// any, straight to OnTraffic, without waiting for more, unless OnOpen
// paused it: then they wait, kept, for ResumeRead.
func (l *eventloop) endHeader(c *conn) {
	l.disarm(&c.readTimer)
	flags, err := l.admitSource(c.remote)
	if err != nil {
		l.turnAway(c.fd, c.remote, err)
		l.closeConn(c, nil)
		return
	}
	c.flags |= flags
	if c.sec() != nil {
		l.beginHandshake(c)
		return
	}
	c.state = stateOpen
	l.start(c)
	if c.state == stateOpen && len(c.buf) > 0 && c.events&poller.Readable != 0 {
		l.traffic(c)
	}
}

// keepHeader makes h, just parsed from c's inbound bytes, c's header, with
// copies of the bytes it views, made only when there are any; and when h
// relays a TCP connection, makes its source c's remote address.
func (c *conn) keepHeader(h proxyproto.Header) {
	h.TLVs = clone(h.TLVs)
	h.SourceUnix = clone(h.SourceUnix)
	h.DestinationUnix = clone(h.DestinationUnix)
	x := c.extra()
	x.proxy, x.hasProxy = h, true
	if h.Command == proxyproto.Proxy && (h.Transport == proxyproto.TCP4 || h.Transport == proxyproto.TCP6) {
		c.remote = h.Source
	}
}

// clone returns a copy of b, or nil when b is empty.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}
