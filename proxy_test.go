//go:build unix

package sluice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/proxyproto"
)

// headerSeen is what OnOpen saw of a connection's PROXY header.
type headerSeen struct {
	remote string
	header proxyproto.Header
	ok     bool
}

// recordHeaders makes h report what each connection's OnOpen sees of its
// PROXY header.
func recordHeaders(h *lifetimes) <-chan headerSeen {
	seen := make(chan headerSeen, 64)
	h.onOpen = func(c Conn) {
		hdr, ok := c.ProxyHeader()
		// Copies, so that the bytes OnOpen saw can be checked later.
		hdr.TLVs = bytes.Clone(hdr.TLVs)
		hdr.SourceUnix = bytes.Clone(hdr.SourceUnix)
		hdr.DestinationUnix = bytes.Clone(hdr.DestinationUnix)
		seen <- headerSeen{c.RemoteAddr().String(), hdr, ok}
	}
	return seen
}

// nextSeen returns what OnOpen saw of the next connection to open.
func nextSeen(t testing.TB, seen <-chan headerSeen) headerSeen {
	t.Helper()
	select {
	case s := <-seen:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("no connection opened")
		return headerSeen{}
	}
}

// mustTLVs encodes TLVs of the given types and values, in order.
func mustTLVs(t testing.TB, kv ...any) proxyproto.TLVs {
	t.Helper()
	var tlvs proxyproto.TLVs
	var err error
	for i := 0; i < len(kv); i += 2 {
		tlvs, err = tlvs.Append(kv[i].(proxyproto.TLVType), []byte(kv[i+1].(string)))
		require.NoError(t, err)
	}
	return tlvs
}

// mustV2 encodes h as a version 2 header.
func mustV2(t testing.TB, h proxyproto.Header) []byte {
	t.Helper()
	b, err := h.AppendV2(nil)
	require.NoError(t, err)
	return b
}

// clientAddr is how the server names a test client's end of c when no
// header replaces it.
func clientAddr(c net.Conn) string {
	if _, ok := c.LocalAddr().(*net.UnixAddr); ok {
		return "@" // an unbound client's, as the standard library names it too
	}
	return c.LocalAddr().String()
}

// proxyHeaderCase is a header a client sends, and the remote address the
// server should then see: the header's source, or, empty, the socket's.
type proxyHeaderCase struct {
	name   string
	header []byte
	remote string
}

// proxyHeaderCases are the specification's version 1 examples and version
// 2 headers of each command, with TLVs and a CRC32C.
func proxyHeaderCases(t testing.TB) []proxyHeaderCase {
	const ffff6 = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
	crc := string(make([]byte, 4)) // AppendV2 fills it in
	tlvs := mustTLVs(t,
		proxyproto.TypeALPN, "h2",
		proxyproto.TypeAuthority, "example.com",
		proxyproto.TypeUniqueID, "req-42",
		proxyproto.TypeCRC32C, crc)
	ssl, err := mustTLVs(t, proxyproto.TypeNoop, "").AppendSSL(proxyproto.SSL{
		Client: proxyproto.ClientSSL,
		TLVs:   mustTLVs(t, proxyproto.SubtypeSSLVersion, "TLSv1.3"),
	})
	require.NoError(t, err)
	return []proxyHeaderCase{
		{"v1 TCP4", []byte("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"), "192.168.0.1:56324"},
		{"v1 TCP4 longest", []byte("PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n"), "255.255.255.255:65535"},
		{"v1 TCP6 longest", []byte("PROXY TCP6 " + ffff6 + " " + ffff6 + " 65535 65535\r\n"), "[" + ffff6 + "]:65535"},
		{"v1 UNKNOWN", []byte("PROXY UNKNOWN\r\n"), ""},
		{"v1 UNKNOWN longest", []byte("PROXY UNKNOWN " + ffff6 + " " + ffff6 + " 65535 65535\r\n"), ""},
		{"v2 PROXY TCP4 with TLVs and CRC32C", mustV2(t, proxyproto.Header{
			Command:     proxyproto.Proxy,
			Transport:   proxyproto.TCP4,
			Source:      netip.MustParseAddrPort("203.0.113.7:4242"),
			Destination: netip.MustParseAddrPort("198.51.100.1:443"),
			TLVs:        tlvs,
		}), "203.0.113.7:4242"},
		{"v2 PROXY TCP6 with SSL", mustV2(t, proxyproto.Header{
			Command:     proxyproto.Proxy,
			Transport:   proxyproto.TCP6,
			Source:      netip.MustParseAddrPort("[2001:db8::7]:51000"),
			Destination: netip.MustParseAddrPort("[2001:db8::1]:443"),
			TLVs:        ssl,
		}), "[2001:db8::7]:51000"},
		{"v2 LOCAL with TLVs", mustV2(t, proxyproto.Header{
			Command: proxyproto.Local,
			TLVs:    mustTLVs(t, proxyproto.TypeUniqueID, "health", proxyproto.TypeCRC32C, crc),
		}), ""},
		{"v2 PROXY UNIX-STREAM", mustV2(t, proxyproto.Header{
			Command:         proxyproto.Proxy,
			Transport:       proxyproto.UnixStream,
			SourceUnix:      []byte("/run/client.sock"),
			DestinationUnix: []byte("/run/server.sock"),
		}), ""},
		{"v2 PROXY UDP4", mustV2(t, proxyproto.Header{
			Command:     proxyproto.Proxy,
			Transport:   proxyproto.UDP4,
			Source:      netip.MustParseAddrPort("203.0.113.9:53"),
			Destination: netip.MustParseAddrPort("198.51.100.1:53"),
		}), ""},
	}
}

// headerCase returns the header of the case of proxyHeaderCases with the
// given name.
func headerCase(t testing.TB, name string) []byte {
	t.Helper()
	for _, tt := range proxyHeaderCases(t) {
		if tt.name == name {
			return tt.header
		}
	}
	t.Fatalf("no header case %q", name)
	return nil
}

// parsed is what the server should keep of header: Parse's result, with
// empty views as nil, since the connection copies only what is there.
func parsed(t testing.TB, header []byte) proxyproto.Header {
	t.Helper()
	h, n, err := proxyproto.Parse(header)
	require.NoError(t, err)
	require.Equal(t, len(header), n)
	for _, b := range []*[]byte{(*[]byte)(&h.TLVs), &h.SourceUnix, &h.DestinationUnix} {
		if len(*b) == 0 {
			*b = nil
		}
	}
	return h
}

func TestProxyHeader(t *testing.T) {
	for _, m := range engineModes {
		t.Run(m.name, func(t *testing.T) {
			h := newLifetimes()
			seen := recordHeaders(h)
			_, addr := serveAddr(t, modeAddr(t, m.addr), h, append(m.opts, WithProxyProtocol(ProxyRequired, 0))...)
			for _, tt := range proxyHeaderCases(t) {
				c := dial(t, addr)
				payload := []byte("payload after " + tt.name)
				// The header and the payload in one write: the payload must
				// reach OnTraffic without waiting for more bytes.
				require.NoError(t, echoAfter(c, tt.header, payload), tt.name)
				got := nextSeen(t, seen)
				want := tt.remote
				if want == "" {
					want = clientAddr(c)
				}
				assert.Equal(t, want, got.remote, tt.name)
				require.True(t, got.ok, tt.name)
				assert.Equal(t, parsed(t, tt.header), got.header, tt.name)
			}
		})
	}
}

// echoAfter sends header and payload in one write, then checks that
// exactly payload comes back.
func echoAfter(c net.Conn, header, payload []byte) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(append(append([]byte(nil), header...), payload...)); err != nil {
		return err
	}
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("read %d bytes: %w", len(payload), err)
	}
	if string(got) != string(payload) {
		return fmt.Errorf("echo %q, want %q", got, payload)
	}
	return nil
}

func TestProxyHeaderKeepsTLVs(t *testing.T) {
	h := newLifetimes()
	seen := recordHeaders(h)
	_, addr := serve(t, h, WithNumEventLoop(1), WithProxyProtocol(ProxyRequired, 0))
	c := dial(t, addr)
	header := headerCase(t, "v2 PROXY TCP4 with TLVs and CRC32C")
	require.NoError(t, echoAfter(c, header, []byte("x")))
	got := nextSeen(t, seen)
	id, ok := got.header.TLVs.Lookup(proxyproto.TypeUniqueID)
	require.True(t, ok)
	assert.Equal(t, "req-42", string(id))
	authority, _ := got.header.TLVs.Lookup(proxyproto.TypeAuthority)
	assert.Equal(t, "example.com", string(authority))
	_, ok = got.header.TLVs.Lookup(proxyproto.TypeCRC32C)
	assert.True(t, ok, "the checksum is kept with the other TLVs")

	// The TLVs are the connection's own: the traffic that follows, which
	// passes through the same buffers, leaves them unchanged.
	r := rand.New(rand.NewPCG(11, 12))
	require.NoError(t, echoOnce(c, randomBytes(r, 1<<20)))
	again, ok := getHeader(t, h, h.next(t))
	require.True(t, ok)
	assert.Equal(t, got.header, again)
}

// getHeader returns the PROXY header of the connection with id, asking on
// its loop.
func getHeader(t testing.TB, h *lifetimes, id uint64) (proxyproto.Header, bool) {
	t.Helper()
	type result struct {
		h  proxyproto.Header
		ok bool
	}
	got := make(chan result, 1)
	require.NoError(t, h.conn(id).Wake(func(c Conn, _ error) {
		hdr, ok := c.ProxyHeader()
		got <- result{hdr, ok}
	}))
	r := <-got
	return r.h, r.ok
}

// headerBytes returns how many bytes the connections of probe's loop that
// are still reading their PROXY header hold, asking on the loop.
func headerBytes(t testing.TB, probe Conn) int {
	t.Helper()
	got := make(chan int, 1)
	require.NoError(t, probe.Wake(func(c Conn, _ error) {
		n := 0
		for _, pc := range c.(*conn).loop.conns {
			if pc != nil && pc.state == stateHeader {
				n += len(pc.buf)
			}
		}
		got <- n
	}))
	return <-got
}

func TestProxyHeaderByteAtATime(t *testing.T) {
	for _, tt := range proxyHeaderCases(t) {
		if !strings.Contains(tt.name, "TCP") {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			h := newLifetimes()
			seen := recordHeaders(h)
			_, addr := serve(t, h, WithNumEventLoop(1), WithProxyProtocol(ProxyOptional, 0))
			probeConn := dial(t, addr)
			require.NoError(t, echoOnce(probeConn, []byte("probe"))) // plain traffic opens it
			probe := h.conn(h.next(t))
			nextSeen(t, seen)

			c := dial(t, addr)
			for i, b := range tt.header {
				_, err := c.Write([]byte{b})
				require.NoError(t, err)
				if i == len(tt.header)-1 {
					break
				}
				// Each byte arrives on its own before the next is sent, so
				// the loop parses every prefix of the header.
				waitFor(t, 5*time.Second, func() bool { return headerBytes(t, probe) == i+1 },
					func() string { return fmt.Sprintf("the server holds %d bytes after byte %d", headerBytes(t, probe), i) })
			}
			assert.Equal(t, tt.remote, nextSeen(t, seen).remote)
			require.NoError(t, echoOnce(c, []byte("after a slow header")))
		})
	}
}

func TestProxyHeaderThenLargePayload(t *testing.T) {
	h := newLifetimes()
	seen := recordHeaders(h)
	_, addr := serve(t, h, WithNumEventLoop(2), WithProxyProtocol(ProxyRequired, 0))
	c := dial(t, addr)
	payload := randomBytes(rand.New(rand.NewPCG(13, 14)), 1<<20)
	header := headerCase(t, "v1 TCP4")
	go c.Write(append(append([]byte(nil), header...), payload...))
	got := make([]byte, len(payload))
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.True(t, string(payload) == string(got), "echo differs at byte %d", firstDiff(got, payload))
	assert.Equal(t, "192.168.0.1:56324", nextSeen(t, seen).remote)
}

// requireRefused checks that the server closed c without a reply.
func requireRefused(t testing.TB, c net.Conn) {
	t.Helper()
	require.NoError(t, refused(c))
}

// refused waits for the server to close c, and returns an error if it
// replies or does not close it.
func refused(c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case n > 0:
		return errors.New("the server replied")
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("the server did not close the connection")
	}
	return nil
}

func TestProxyHeaderRefused(t *testing.T) {
	badCRC := headerCase(t, "v2 PROXY TCP4 with TLVs and CRC32C")
	badCRC[len(badCRC)-1] ^= 1
	tests := []struct {
		name     string
		sent     string
		required bool // refused only where the header is required
		counts   func(Stats) uint64
	}{
		{"v1 port out of range", "PROXY TCP4 192.0.2.1 192.0.2.2 65536 443\r\nhello", false, statProxyInvalid},
		{"v1 longer than 107 bytes", "PROXY UNKNOWN " + strings.Repeat("x", 100), false, statProxyInvalid},
		{"v1 bare LF", "PROXY TCP4 192.0.2.1 192.0.2.2 1 2\n", false, statProxyInvalid},
		{"v2 CRC32C mismatch", string(badCRC), false, statProxyInvalid},
		{"v2 version 3", "\r\n\r\n\x00\r\nQUIT\n\x31\x11\x00\x0c" + strings.Repeat("\x00", 12), false, statProxyInvalid},
		{"plain traffic", "GET / HTTP/1.1\r\n\r\n", true, statProxyMissing},
		{"one plain byte", "x", true, statProxyMissing},
	}
	for _, m := range engineModes {
		for _, mode := range []ProxyMode{ProxyOptional, ProxyRequired} {
			t.Run(m.name+"/"+mode.String(), func(t *testing.T) {
				h := newLifetimes()
				eng, addr := serveAddr(t, modeAddr(t, m.addr), h, append(m.opts, WithProxyProtocol(mode, 0))...)
				for _, tt := range tests {
					if tt.required && mode != ProxyRequired {
						continue
					}
					before := eng.Stats()
					c := dial(t, addr)
					_, err := c.Write([]byte(tt.sent))
					require.NoError(t, err)
					requireRefused(t, c)
					waitFor(t, 5*time.Second, func() bool { return eng.Stats().Conns == 0 },
						func() string { return tt.name + ": the refused connection still holds its slot" })
					s := eng.Stats()
					assert.EqualValues(t, 1, tt.counts(s)-tt.counts(before), "%s: counted", tt.name)
					assert.Zero(t, s.Accepted, tt.name)
				}
				assert.Empty(t, h.ids, "OnOpen ran")
				assert.Zero(t, h.closedCount(), "OnClose ran")
			})
		}
	}
}

func statProxyInvalid(s Stats) uint64 { return s.ProxyInvalid }
func statProxyMissing(s Stats) uint64 { return s.ProxyMissing }

func TestProxyOptionalPlainTraffic(t *testing.T) {
	for _, m := range engineModes {
		t.Run(m.name, func(t *testing.T) {
			h := newLifetimes()
			seen := recordHeaders(h)
			eng, addr := serveAddr(t, modeAddr(t, m.addr), h, append(m.opts, WithProxyProtocol(ProxyOptional, 0))...)
			c := dial(t, addr)
			r := rand.New(rand.NewPCG(15, 16))
			for _, n := range []int{1, 64, 65537, 300_000} {
				require.NoError(t, echoOnce(c, randomBytes(r, n)))
			}
			got := nextSeen(t, seen)
			assert.False(t, got.ok, "a header where none was sent")
			assert.Equal(t, clientAddr(c), got.remote)
			assert.EqualValues(t, 1, eng.Stats().Accepted)
		})
	}
}

// greeter speaks first, as SMTP and MySQL servers do.
type greeter struct{ *lifetimes }

func (g greeter) OnOpen(c Conn) ([]byte, Action) {
	g.lifetimes.OnOpen(c)
	return []byte("220 ready\r\n"), None
}

// TestProxyOptionalServerSpeaksFirst checks that a client that sends
// nothing, waiting for the server's greeting, is opened once the header
// timeout passes, not closed.
func TestProxyOptionalServerSpeaksFirst(t *testing.T) {
	const timeout = 100 * time.Millisecond
	h := newLifetimes()
	eng, addr := serve(t, greeter{h}, WithNumEventLoop(1), WithProxyProtocol(ProxyOptional, timeout))
	start := time.Now()
	c := dial(t, addr)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len("220 ready\r\n"))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "220 ready\r\n", string(got))
	assert.GreaterOrEqual(t, time.Since(start), timeout)
	require.NoError(t, echoOnce(c, []byte("HELO")))
	assert.Zero(t, eng.Stats().ProxyTimeouts)
}

// TestProxyOptionalShortPrefix checks that a client whose first bytes
// could start a version 2 signature, a lone "\r\n" typed at a prompt, is
// served as plain traffic once the timeout shows nothing more is coming.
func TestProxyOptionalShortPrefix(t *testing.T) {
	const timeout = 100 * time.Millisecond
	eng, addr := serve(t, echoHandler{}, WithNumEventLoop(1), WithProxyProtocol(ProxyOptional, timeout))
	c := dial(t, addr)
	require.NoError(t, echoOnce(c, []byte("\r\n")))
	assert.Zero(t, eng.Stats().ProxyTimeouts)
}

func TestProxyHeaderTimeout(t *testing.T) {
	const timeout = 150 * time.Millisecond
	tests := map[ProxyMode][]string{
		ProxyRequired: {"", "PROXY TCP4 192.0."},
		// A client that sends too little to tell a header from plain
		// traffic is opened in this mode once the timeout passes
		// (TestProxyOptionalServerSpeaksFirst, TestProxyOptionalShortPrefix).
		ProxyOptional: {"\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\xc0\x00"},
	}
	for mode, sends := range tests {
		t.Run(mode.String(), func(t *testing.T) {
			h := newLifetimes()
			eng, addr := serve(t, h, WithNumEventLoop(1), WithProxyProtocol(mode, timeout))
			took := make([]time.Duration, len(sends))
			errs := make([]error, len(sends))
			var wg sync.WaitGroup
			for i, sent := range sends {
				start := time.Now()
				c := dial(t, addr)
				_, err := c.Write([]byte(sent))
				require.NoError(t, err)
				wg.Go(func() {
					errs[i] = refused(c)
					took[i] = time.Since(start)
				})
			}
			wg.Wait()
			for i, d := range took {
				require.NoError(t, errs[i], "%q", sends[i])
				assert.GreaterOrEqual(t, d, timeout, "%q closed early", sends[i])
				assert.LessOrEqual(t, d, timeout+lateness, "%q closed late", sends[i])
			}
			assert.EqualValues(t, len(sends), eng.Stats().ProxyTimeouts)
			assert.Empty(t, h.ids, "OnOpen ran")
			assert.Zero(t, h.closedCount(), "OnClose ran")
		})
	}
}

// TestProxyPerSourceLimit checks that the per-source limit counts the
// client a PROXY header names, not the balancer the connection comes from.
func TestProxyPerSourceLimit(t *testing.T) {
	header := func(source string) []byte {
		return mustV2(t, proxyproto.Header{
			Command:     proxyproto.Proxy,
			Transport:   proxyproto.TCP4,
			Source:      netip.MustParseAddrPort(source),
			Destination: netip.MustParseAddrPort("198.51.100.1:443"),
		})
	}
	for _, m := range tcpModes() {
		t.Run(m.name, func(t *testing.T) {
			h := newLifetimes()
			eng, addr := serveAddr(t, m.addr, h, append(m.opts,
				WithProxyProtocol(ProxyRequired, 0), WithMaxConnectionsPerSource(1))...)
			// All three come from 127.0.0.1; two name one client.
			a, b, again := dial(t, addr), dial(t, addr), dial(t, addr)
			require.NoError(t, echoAfter(a, header("203.0.113.1:1000"), []byte("a")))
			require.NoError(t, echoAfter(b, header("203.0.113.2:1000"), []byte("b")))
			_, err := again.Write(header("203.0.113.1:2000"))
			require.NoError(t, err)
			requireRefused(t, again)
			s := eng.Stats()
			assert.EqualValues(t, 2, s.Accepted)
			assert.EqualValues(t, 1, s.RejectedPerSource)

			// Closing the first frees its client's place.
			require.NoError(t, a.Close())
			waitFor(t, 5*time.Second, func() bool { return eng.Stats().Conns == 1 },
				func() string { return "the close was not seen" })
			require.NoError(t, echoAfter(dial(t, addr), header("203.0.113.1:3000"), []byte("c")))
		})
	}
}

// sendingHeader starts an engine whose one client has sent part of a PROXY
// header, and returns once the engine holds the connection.
func sendingHeader(t *testing.T, loops int) (*lifetimes, Engine, net.Conn) {
	t.Helper()
	h := newLifetimes()
	eng, addr := serve(t, h, WithNumEventLoop(loops), WithProxyProtocol(ProxyRequired, time.Hour))
	c := dial(t, addr)
	_, err := c.Write([]byte("PROXY TCP6 2001:db8::"))
	require.NoError(t, err)
	waitFor(t, 5*time.Second, func() bool { return eng.CountConnections() == 1 },
		func() string { return "the connection was not registered" })
	return h, eng, c
}

// TestStopClosesHeaderPhase checks that a graceful stop does not wait for
// connections still sending their header.
func TestStopClosesHeaderPhase(t *testing.T) {
	h, eng, c := sendingHeader(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, eng.Stop(ctx))
	requireRefused(t, c)
	assert.Zero(t, h.closedCount(), "OnClose ran")
}

// TestKillInHeaderPhase kills a connection still sending its header, found
// through ConnIDs since the handler never learnt its ID.
func TestKillInHeaderPhase(t *testing.T) {
	h, eng, c := sendingHeader(t, 2)
	for id := range eng.ConnIDs() {
		require.NoError(t, eng.Kill(id))
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, syscall.ECONNRESET)
	s := eng.Stats()
	assert.EqualValues(t, 1, s.Killed)
	assert.Zero(t, s.ProxyTimeouts+s.ProxyInvalid+s.ProxyMissing)
	assert.Zero(t, h.closedCount(), "OnClose ran")
}

func TestProxyModeText(t *testing.T) {
	for _, m := range []ProxyMode{ProxyOff, ProxyOptional, ProxyRequired} {
		b, err := m.MarshalText()
		require.NoError(t, err)
		var got ProxyMode
		require.NoError(t, got.UnmarshalText(b))
		assert.Equal(t, m, got)
	}
	var m ProxyMode
	require.ErrorIs(t, m.UnmarshalText([]byte("on")), ErrInvalidProxyMode)
	assert.Equal(t, "ProxyMode(7)", ProxyMode(7).String())

	o := defaultOptions()
	WithProxyProtocol(ProxyRequired, 0)(&o)
	assert.Equal(t, DefaultProxyHeaderTimeout, o.proxyTimeout)
}
