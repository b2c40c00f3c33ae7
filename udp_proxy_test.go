//go:build linux

package sluice

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
	"github.com/sluicenet/sluice/proxyproto"
)

// dgramHeader builds, byte by byte, the PROXY protocol version 2 header a
// proxy prepends to a datagram it relays from src to dst: command 1 is
// PROXY, 0 LOCAL; transport 0x12 is UDP over IPv4, 0x22 over IPv6.
func dgramHeader(command, transport byte, src, dst netip.AddrPort) []byte {
	b := []byte("\r\n\r\n\x00\r\nQUIT\n")
	b = append(b, 0x20|command, transport, 0, 0)
	switch transport {
	case 0x12, 0x11:
		s, d := src.Addr().As4(), dst.Addr().As4()
		b = append(append(b, s[:]...), d[:]...)
	case 0x22, 0x21:
		s, d := src.Addr().As16(), dst.Addr().As16()
		b = append(append(b, s[:]...), d[:]...)
	}
	if transport != 0 {
		b = binary.BigEndian.AppendUint16(b, src.Port())
		b = binary.BigEndian.AppendUint16(b, dst.Port())
	}
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-16))
	return b
}

// udpProxied echoes each datagram's payload, recording who OnTraffic said
// sent it and the header it came with, and what OnDatagramError heard.
type udpProxied struct {
	BuiltinEventEngine
	mu      sync.Mutex
	senders []string
	headers []proxyproto.Header
	errs    []error
	dropped []string // what OnDatagramError saw: RemoteAddr|bytes
}

func (h *udpProxied) OnTraffic(c Conn) Action {
	hdr, ok := c.ProxyHeader()
	h.mu.Lock()
	h.senders = append(h.senders, c.RemoteAddr().String())
	if ok {
		h.headers = append(h.headers, hdr)
	}
	h.mu.Unlock()
	b, _ := c.Next(-1)
	c.Write(b)
	return None
}

func (h *udpProxied) OnDatagramError(c Conn, err error) Action {
	b, _ := c.Peek(-1)
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.dropped = append(h.dropped, c.RemoteAddr().String()+"|"+string(b))
	h.mu.Unlock()
	return None
}

func (h *udpProxied) seen() ([]string, []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.senders...), append([]error(nil), h.errs...)
}

// With the PROXY protocol required, each datagram's header names its
// client, which RemoteAddr reports; the answer goes to the proxy that
// sent it, without a header. A datagram without a header, or with a bad
// one, is dropped, counted and told to OnDatagramError, and the socket
// goes on.
func TestUDPProxyHeaderNamesTheClient(t *testing.T) {
	h := &udpProxied{}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithProxyProtocol(ProxyRequired, 0))
	proxy := udpDial(t, addr)
	dst := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	client := netip.MustParseAddrPort("203.0.113.7:5353")

	hdr := dgramHeader(1, 0x12, client, dst)
	assert.Equal(t, "hello", string(udptest.RoundTrip(t, proxy, append(hdr, "hello"...))))
	senders, _ := h.seen()
	assert.Equal(t, []string{client.String()}, senders)
	h.mu.Lock()
	require.Len(t, h.headers, 1)
	assert.Equal(t, proxyproto.UDP4, h.headers[0].Transport)
	assert.Equal(t, dst, h.headers[0].Destination)
	h.mu.Unlock()

	// An IPv6 client relayed over IPv4.
	client6 := netip.MustParseAddrPort("[2001:db8::7]:4242")
	dst6 := netip.MustParseAddrPort("[2001:db8::1]:53")
	assert.Equal(t, "six", string(udptest.RoundTrip(t, proxy, append(dgramHeader(1, 0x22, client6, dst6), "six"...))))
	// LOCAL: the proxy speaks for itself.
	assert.Equal(t, "local", string(udptest.RoundTrip(t, proxy, append(dgramHeader(0, 0, netip.AddrPort{}, netip.AddrPort{}), "local"...))))
	senders, _ = h.seen()
	assert.Equal(t, []string{client.String(), client6.String(), proxy.LocalAddr().String()}, senders)

	bad := [][]byte{
		[]byte("no header"),
		hdr[:20], // cut inside the addresses
		append(dgramHeader(1, 0x11, client, dst), "x"...), // a stream's transport
		append([]byte("PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n"), "v1"...),
	}
	for _, b := range bad {
		_, err := proxy.Write(b)
		require.NoError(t, err)
	}
	waitFor(t, 10*time.Second, func() bool {
		st := eng.Stats()
		return st.ProxyMissing == 2 && st.ProxyInvalid == 2
	}, func() string {
		return fmt.Sprintf("missing %d, invalid %d", eng.Stats().ProxyMissing, eng.Stats().ProxyInvalid)
	})
	_, errs := h.seen()
	require.Len(t, errs, 4)
	assert.ErrorIs(t, errs[0], proxyproto.ErrNotProxy)
	assert.ErrorIs(t, errs[1], proxyproto.ErrInvalid)
	assert.ErrorIs(t, errs[2], proxyproto.ErrInvalid)
	assert.ErrorIs(t, errs[3], proxyproto.ErrNotProxy)
	h.mu.Lock()
	assert.Equal(t, proxy.LocalAddr().String()+"|no header", h.dropped[0], "the dropped datagram, from its real sender")
	h.mu.Unlock()

	// Still serving, and none of the dropped reached OnTraffic.
	assert.Equal(t, "again", string(udptest.RoundTrip(t, proxy, append(hdr, "again"...))))
	senders, _ = h.seen()
	assert.Len(t, senders, 4)
}

// With the PROXY protocol optional, a datagram without a header is served
// as from its real sender; a bad header is still dropped.
func TestUDPProxyHeaderOptional(t *testing.T) {
	h := &udpProxied{}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1), WithProxyProtocol(ProxyOptional, 0))
	c := udpDial(t, addr)
	assert.Equal(t, "plain", string(udptest.RoundTrip(t, c, []byte("plain"))))
	dst := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	client := netip.MustParseAddrPort("198.51.100.9:1000")
	assert.Equal(t, "relayed", string(udptest.RoundTrip(t, c, append(dgramHeader(1, 0x12, client, dst), "relayed"...))))
	_, err := c.Write(dgramHeader(1, 0x12, client, dst)[:17])
	require.NoError(t, err)
	waitFor(t, 10*time.Second, func() bool { return eng.Stats().ProxyInvalid == 1 }, func() string { return "the bad header not counted" })
	senders, errs := h.seen()
	assert.Equal(t, []string{c.LocalAddr().String(), client.String()}, senders)
	require.Len(t, errs, 1)
	assert.True(t, errors.Is(errs[0], proxyproto.ErrInvalid), errs[0])
	assert.Zero(t, eng.Stats().ProxyMissing)
}

// A listener of its own may read the header where the engine's others do
// not, and the per-source rate counts the client a header names.
func TestUDPProxyListenerAndRate(t *testing.T) {
	h := &udpProxied{}
	eng, plain := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1),
		WithListener("udp://127.0.0.1:0", ListenProxyProtocol(ProxyRequired)), WithDatagramRateLimit(1, 1))
	relayed := eng.Addrs()[1].(*net.UDPAddr)
	c := udpDial(t, plain)
	assert.Equal(t, "plain", string(udptest.RoundTrip(t, c, []byte("plain"))))

	proxy, err := net.DialUDP("udp", nil, relayed)
	require.NoError(t, err)
	defer proxy.Close()
	header := func(i int) []byte {
		client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 53)
		return dgramHeader(1, 0x12, client, relayed.AddrPort())
	}
	assert.Equal(t, "hi", string(udptest.RoundTrip(t, proxy, append(header(1), "hi"...))))
	_, err = proxy.Write(append(header(1), "more"...))
	require.NoError(t, err)
	waitFor(t, 10*time.Second, func() bool { return eng.Stats().DatagramsRateLimited == 1 }, func() string {
		return "the first client's second datagram within its second was not limited"
	})
	for i := 2; i <= 3; i++ {
		assert.Equal(t, "hi", string(udptest.RoundTrip(t, proxy, append(header(i), "hi"...))), "client %d has a rate of its own", i)
	}
	assert.Equal(t, uint64(1), eng.Stats().DatagramsRateLimited)
}

// A proxy's segmented burst over IPv6, which a socket that coalesces
// receives gets in one buffer, is vetted datagram by datagram on every
// backend: each one's own PROXY header names its client (RemoteAddr),
// each client's rate (WithDatagramRateLimit) counts its datagrams, not
// the buffer, and each client has a session of its own
// (WithDatagramSessions).
func TestUDPCoalescedBurstVettedPerDatagram(t *testing.T) {
	const clients, each = 4, 3
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &udpProxied{}
		eng, addr := serveAddr(t, "udp://[::1]:0", h, p, WithNumEventLoop(1),
			WithProxyProtocol(ProxyRequired, 0), WithDatagramRateLimit(1, each-1), WithDatagramSessions(time.Minute, clients))
		proxy := udpDial(t, addr)
		to := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
		var all []byte
		size := 0
		for i := range clients {
			client := netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("2001:db8:%d::1", i+1)), 53)
			for j := range each {
				d := append(dgramHeader(1, 0x22, client, to), fmt.Sprintf("client %d datagram %d", i+1, j)...)
				size = len(d)
				all = append(all, d...)
			}
		}
		require.NoError(t, udptest.WriteSegmented(proxy, nil, all, size))
		buf := make([]byte, 1<<16)
		var answers []string
		for range clients * (each - 1) {
			require.NoError(t, proxy.SetReadDeadline(time.Now().Add(5*time.Second)))
			n, err := proxy.Read(buf)
			require.NoError(t, err, "answer %d", len(answers))
			answers = append(answers, string(buf[:n]))
		}
		var want, senders []string
		for i := range clients {
			for j := range each - 1 {
				want = append(want, fmt.Sprintf("client %d datagram %d", i+1, j))
				senders = append(senders, fmt.Sprintf("[2001:db8:%d::1]:53", i+1))
			}
		}
		assert.Equal(t, want, answers)
		waitFor(t, 10*time.Second, func() bool { return eng.Stats().DatagramsRateLimited == clients }, func() string {
			return fmt.Sprintf("%d datagrams rate limited, not one a client", eng.Stats().DatagramsRateLimited)
		})
		got, errs := h.seen()
		assert.Equal(t, senders, got)
		assert.Empty(t, errs)
		st := eng.Stats()
		return outcome{Delivered: []int{len(answers), int(st.DatagramsRateLimited), int(st.ProxyInvalid), int(st.ProxyMissing)}}
	})
}
