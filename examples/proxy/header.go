package main

import (
	"net"
	"net/netip"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/proxyproto"
)

// appendHeader appends to buf the PROXY protocol header that tells a
// backend who client is, in the version v asks for, as HAProxy's
// send-proxy and send-proxy-v2 do.
//
// The source is the client's address, the original client's when a
// balancer in front sent a header of its own (-proxy-protocol), and the
// destination is the address the client reached: the balancer's header's
// when it named one, else this proxy's listener. A balancer's LOCAL header
// (its own connection, a health check) is passed on as LOCAL in version 2;
// version 1 cannot say LOCAL, so it says UNKNOWN, which asks the backend,
// too, to use the connection's own addresses. A client on a unix socket
// has no IP address to pass on, so it is UNKNOWN in either version.
func appendHeader(buf []byte, v sendProxy, client sluice.Conn) []byte {
	h := proxyproto.Header{Command: proxyproto.Proxy, Transport: proxyproto.Unknown}
	in, relayed := client.ProxyHeader()
	if relayed && in.Command == proxyproto.Local {
		if v == sendProxyV2 {
			h.Command = proxyproto.Local
		}
	} else if src, ok := ipOf(client.RemoteAddr()); ok {
		var dst netip.AddrPort
		if relayed && (in.Transport == proxyproto.TCP4 || in.Transport == proxyproto.TCP6) {
			dst = in.Destination
		} else if d, ok := ipOf(client.LocalAddr()); ok {
			dst = d
		}
		if dst.IsValid() {
			h.Source, h.Destination, h.Transport = sameFamily(src, dst)
		}
	}
	var out []byte
	var err error
	if v == sendProxyV1 {
		out, err = h.AppendV1(buf)
	} else {
		out, err = h.AppendV2(buf)
	}
	if err != nil {
		// Every header built above is one the encoders take; should that
		// ever change, an UNKNOWN header still lets the backend serve.
		h = proxyproto.Header{Command: proxyproto.Proxy}
		if v == sendProxyV1 {
			out, _ = h.AppendV1(buf)
		} else {
			out, _ = h.AppendV2(buf)
		}
	}
	return out
}

// ipOf returns a TCP address as an AddrPort, without an IPv6 zone, which
// the PROXY protocol has no room for.
func ipOf(a net.Addr) (netip.AddrPort, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port()), ap.IsValid()
}

// sameFamily returns src and dst in one address family, as a header needs
// them: IPv4 when both are (IPv4-mapped IPv6 counts as IPv4), else IPv6,
// with an IPv4 address mapped into it.
func sameFamily(src, dst netip.AddrPort) (netip.AddrPort, netip.AddrPort, proxyproto.Transport) {
	s, d := src.Addr().Unmap(), dst.Addr().Unmap()
	if s.Is4() && d.Is4() {
		return netip.AddrPortFrom(s, src.Port()), netip.AddrPortFrom(d, dst.Port()), proxyproto.TCP4
	}
	s, d = netip.AddrFrom16(s.As16()), netip.AddrFrom16(d.As16())
	return netip.AddrPortFrom(s, src.Port()), netip.AddrPortFrom(d, dst.Port()), proxyproto.TCP6
}
