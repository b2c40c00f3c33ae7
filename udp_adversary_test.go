//go:build linux

package sluice

import (
	"bytes"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/udptest"
)

// udpHandOut hands the listener's socket's Conn out, from its first
// datagram, for other goroutines to post to.
type udpHandOut struct {
	BuiltinEventEngine
	once sync.Once
	conn chan PacketConn
}

func (h *udpHandOut) OnTraffic(c Conn) Action {
	h.once.Do(func() { h.conn <- c.(PacketConn) })
	return None
}

// namedAddr is a net.Addr that is only its String, as a caller's own
// address type may be.
type namedAddr string

func (a namedAddr) Network() string { return "udp" }
func (a namedAddr) String() string  { return string(a) }

// TestUDPAsyncWriteToUnkindCallers posts datagrams to a listener's
// socket as careless callers would: to addresses it cannot read (no IP,
// a host name, no port, a nil *net.UDPAddr), each refused at once with
// its callback never run; and from many goroutines at once to a real
// peer, each callback run exactly once, every datagram arriving, and
// OutboundQueued back at zero once all are sent.
func TestUDPAsyncWriteToUnkindCallers(t *testing.T) {
	h := &udpHandOut{conn: make(chan PacketConn, 1)}
	_, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1))
	c := udpDial(t, addr)
	_, err := c.Write([]byte("hello"))
	require.NoError(t, err)
	var pc PacketConn
	select {
	case pc = <-h.conn:
	case <-time.After(10 * time.Second):
		t.Fatal("no datagram reached OnTraffic")
	}

	var ran atomic.Int64
	cb := func(Conn, error) { ran.Add(1) }
	for _, bad := range []struct {
		name string
		addr net.Addr
		want error
	}{
		{"no IP", &net.UDPAddr{Port: 9}, ErrNeedAddress},
		{"nil *UDPAddr", (*net.UDPAddr)(nil), ErrNeedAddress},
		{"nil", nil, ErrNeedAddress},
		{"host name", namedAddr("localhost:9"), ErrInvalidAddr},
		{"no port", namedAddr("127.0.0.1"), ErrInvalidAddr},
		{"empty", namedAddr(""), ErrInvalidAddr},
	} {
		err := pc.AsyncWriteTo([]byte("x"), bad.addr, cb)
		assert.ErrorIs(t, err, bad.want, bad.name)
	}

	const goroutines, each = 8, 24
	require.NoError(t, c.SetReadBuffer(1<<20)) // what is sent is read only once all is
	to := c.LocalAddr()
	var wg sync.WaitGroup
	var sent, failed atomic.Int64
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				p := []byte(strconv.Itoa(g*each + i))
				err := pc.AsyncWriteTo(p, to, func(_ Conn, err error) {
					if err != nil {
						failed.Add(1)
					}
					sent.Add(1)
				})
				if err != nil {
					t.Errorf("AsyncWriteTo: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, 10*time.Second, func() bool { return sent.Load() >= goroutines*each }, func() string {
		return strconv.Itoa(int(sent.Load())) + " callbacks ran of " + strconv.Itoa(goroutines*each)
	})
	assert.True(t, holdsFor(50*time.Millisecond, func() bool { return sent.Load() == goroutines*each }), "a callback ran twice")
	assert.Zero(t, failed.Load(), "sends to a live loopback peer failed")
	assert.Zero(t, ran.Load(), "a callback of a refused datagram ran")
	assert.InDelta(t, 144, postedTask, 32, "what a posting takes, which PacketConn's doc puts at 144 or so")
	waitFor(t, 10*time.Second, func() bool { return pc.OutboundQueued() == 0 }, func() string {
		return strconv.Itoa(pc.OutboundQueued()) + " bytes still counted as posted once every datagram was sent"
	})
	got := map[string]bool{}
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(got) < goroutines*each {
		n, err := c.Read(buf)
		require.NoError(t, err, "%d of %d datagrams arrived", len(got), goroutines*each)
		got[string(buf[:n])] = true
	}
}

// TestUDPTruncatedBehindAProxy sends, through a proxy, a datagram larger
// than the read buffer, and checks what OnDatagramError is promised of
// it: ErrDatagramTruncated, RemoteAddr the client the header names, and
// Peek the part that fit after the header; with sessions, on the
// client's session's Conn. OnTraffic sees none of it, and it is counted.
func TestUDPTruncatedBehindAProxy(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		t.Run(map[bool]string{false: "socket", true: "session"}[sessions], func(t *testing.T) {
			h := &udpEcho{truncated: make(chan []byte, 1)}
			opts := []Option{WithNumEventLoop(1), WithReadBufferCap(1024), WithProxyProtocol(ProxyRequired, 0)}
			if sessions {
				opts = append(opts, WithDatagramSessions(time.Minute, 16))
			}
			eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, opts...)
			proxy := udpDial(t, addr)
			client := netip.MustParseAddrPort("198.51.100.20:4000")
			header := dgramHeader(1, 0x12, client, eng.Addrs()[0].(*net.UDPAddr).AddrPort())
			big := bytes.Repeat([]byte("x"), 2000)
			_, err := proxy.Write(append(header, big...))
			require.NoError(t, err)
			select {
			case got := <-h.truncated:
				from, part, _ := bytes.Cut(got, []byte("|"))
				assert.Equal(t, client.String(), string(from), "the client the header names")
				assert.Equal(t, big[:1024-len(header)], part, "the part that fit, after the header")
			case <-time.After(10 * time.Second):
				t.Fatal("OnDatagramError never ran for a datagram larger than the read buffer")
			}
			assert.Equal(t, uint64(1), eng.Stats().DatagramsTruncated)
			if sessions {
				assert.Equal(t, int32(1), h.opens.Load(), "the client's session opened")
			}
			assert.Equal(t, "small", string(udptest.RoundTrip(t, proxy, append(header, "small"...))))
		})
	}
}
