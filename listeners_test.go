//go:build unix

package sluice

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opened is what OnOpen saw of a connection: which listener took it, how
// it came, and who the handler thinks the peer is.
type opened struct {
	listener string // ListenerAddr, as addrName writes it
	origin   Origin
	remote   string
}

// openLog records, by connection ID, what OnOpen saw of each connection.
type openLog struct {
	mu   sync.Mutex
	seen map[uint64]opened
}

// logOpens makes h record what OnOpen sees of each connection. An entry is
// in place before h.next returns the connection's ID.
func logOpens(h *lifetimes) *openLog {
	o := &openLog{seen: map[uint64]opened{}}
	h.onOpen = func(c Conn) {
		s := opened{listener: addrName(c.ListenerAddr()), origin: c.Origin(), remote: c.RemoteAddr().String()}
		o.mu.Lock()
		o.seen[c.ID()] = s
		o.mu.Unlock()
	}
	return o
}

func (o *openLog) get(id uint64) opened {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[id]
}

// addrName writes a as serve returns an address to dial, network first,
// so that addresses of different networks never look alike.
func addrName(a net.Addr) string {
	if a == nil {
		return "<nil>"
	}
	return a.Network() + "://" + a.String()
}

// One engine serves a TCP port, a unix socket and a second TCP port at
// once: every listener answers, and a connection knows which one it came
// through. With SO_REUSEPORT each loop opens its own socket per address,
// and Addrs still names each address once. An engine whose Run address is
// empty listens on WithListener's alone.
func TestSeveralListeners(t *testing.T) {
	tests := []struct {
		name    string
		run     string // Run's address
		opts    []Option
		clients int // per listener
	}{
		{"one loop", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(1)}, 1},
		{"shared by two loops", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(2)}, 2},
		// More clients, so that the kernel is likely to pick each loop's
		// socket for some of them.
		{"reuseport", "tcp://127.0.0.1:0", []Option{WithNumEventLoop(2), WithReusePort(true)}, 4},
		{"no address of Run's", "", []Option{WithNumEventLoop(2)}, 2},
	}
	msg := []byte("ping")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				sock := t.TempDir() + "/second.sock"
				h := newLifetimes()
				opens := logOpens(h)
				opts := append([]Option{p, WithListener("unix://" + sock), WithListener("tcp://127.0.0.1:0")}, tt.opts...)
				eng, first := serveAddr(t, tt.run, h, opts...)

				// Run's address, if any, then WithListener's in order.
				addrs := eng.Addrs()
				want := []string{"unix://" + sock, "tcp"}
				if tt.run != "" {
					want = append([]string{"tcp"}, want...)
				}
				require.Len(t, addrs, len(want), "one entry per address: %v", addrs)
				assert.Equal(t, first, addrName(addrs[0]))
				ports := map[int]bool{}
				for i, a := range addrs {
					if want[i] != "tcp" {
						assert.Equal(t, want[i], addrName(a), "Addrs()[%d]", i)
						continue
					}
					require.IsType(t, &net.TCPAddr{}, a, "Addrs()[%d]", i)
					port := a.(*net.TCPAddr).Port
					assert.False(t, port == 0 || ports[port], "Addrs()[%d] has port %d", i, port)
					ports[port] = true
				}

				var out outcome
				var ids []uint64
				for i, a := range addrs {
					for range tt.clients {
						c := dial(t, addrName(a))
						id := h.next(t)
						require.NoError(t, echoOnce(c, msg), "listener %d", i)
						seen := opens.get(id)
						assert.Equal(t, addrName(a), seen.listener, "ListenerAddr of a client of listener %d", i)
						assert.Equal(t, Accepted, seen.origin)
						require.NoError(t, c.Close())
						ids = append(ids, id)
						out.Delivered = append(out.Delivered, len(msg))
					}
				}
				out.Closed = h.closedErrs(t, ids...)
				out.Stats = closedStats(t, eng)
				assert.EqualValues(t, len(addrs)*tt.clients, out.Stats.Accepted)
				return out
			})
		})
	}
}

// proxyClient is a client of TestListenerProxyProtocol: the listener it
// connects to, whether it begins with a PROXY header, and whether the
// server must serve it.
type proxyClient struct {
	listener int // index in Addrs
	header   bool
	served   bool
}

// Each listener reads a PROXY header or not as its own mode says, so that
// one engine serves a public port and an internal one behind a load
// balancer: a header where none is read is plain traffic, a client
// without one where one is required is closed unseen, and where one is
// read the connection's RemoteAddr is the client the header names.
func TestListenerProxyProtocol(t *testing.T) {
	const source = "192.0.2.7:40000"
	header := []byte("PROXY TCP4 192.0.2.7 198.51.100.1 40000 443\r\n")
	tests := []struct {
		name     string
		engine   []Option // the engine's own mode, which Run's listener takes
		internal ProxyMode
		clients  []proxyClient
	}{
		{"public plain, internal required", nil, ProxyRequired, []proxyClient{
			{listener: 0, header: false, served: true},
			{listener: 1, header: true, served: true},
			{listener: 1, header: false, served: false},
		}},
		{"engine required, internal off", []Option{WithProxyProtocol(ProxyRequired, 0)}, ProxyOff, []proxyClient{
			{listener: 0, header: false, served: false},
			{listener: 0, header: true, served: true},
			{listener: 1, header: false, served: true},
		}},
		{"engine required, internal optional", []Option{WithProxyProtocol(ProxyRequired, 0)}, ProxyOptional, []proxyClient{
			{listener: 1, header: false, served: true},
			{listener: 1, header: true, served: true},
			{listener: 0, header: false, served: false},
		}},
		// Each loop's own socket for the internal address keeps its mode.
		{"public plain, internal required, reuseport", []Option{WithNumEventLoop(2), WithReusePort(true)}, ProxyRequired, []proxyClient{
			{listener: 1, header: true, served: true},
			{listener: 1, header: false, served: false},
			{listener: 1, header: true, served: true},
			{listener: 1, header: false, served: false},
			{listener: 0, header: false, served: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newLifetimes()
				opens := logOpens(h)
				opts := append([]Option{p, WithNumEventLoop(1),
					WithListener("tcp://127.0.0.1:0", ListenProxyProtocol(tt.internal))}, tt.engine...)
				eng, _ := serve(t, h, opts...)
				addrs := eng.Addrs()
				require.Len(t, addrs, 2)

				var out outcome
				var ids []uint64
				refused := 0
				for i, pc := range tt.clients {
					c := dial(t, addrName(addrs[pc.listener]))
					var first []byte
					if pc.header {
						first = header
					}
					payload := []byte(fmt.Sprintf("client %d", i))
					if !pc.served {
						_, err := c.Write(append(first, payload...))
						require.NoError(t, err)
						requireRefused(t, c)
						refused++
						waitFor(t, 5*time.Second, func() bool { return eng.Stats().ProxyMissing == uint64(refused) },
							func() string { return fmt.Sprintf("client %d: %+v", i, eng.Stats()) })
						out.Delivered = append(out.Delivered, 0)
						continue
					}
					require.NoError(t, echoAfter(c, first, payload), "client %d", i)
					id := h.next(t)
					seen := opens.get(id)
					assert.Equal(t, addrName(addrs[pc.listener]), seen.listener, "client %d", i)
					if pc.header {
						assert.Equal(t, source, seen.remote, "client %d: the header's source", i)
					} else {
						assert.Equal(t, c.LocalAddr().String(), seen.remote, "client %d: the socket's peer", i)
					}
					require.NoError(t, c.Close())
					ids = append(ids, id)
					out.Delivered = append(out.Delivered, len(payload))
				}
				out.Closed = h.closedErrs(t, ids...)
				out.Stats = closedStats(t, eng)
				assert.EqualValues(t, len(ids), out.Stats.Accepted, "the refused are not counted as accepted")
				assert.EqualValues(t, refused, out.Stats.ProxyMissing)
				assert.Len(t, h.ids, 0, "a refused client was opened")
				return out
			})
		})
	}
}

// A listener that requires a PROXY header bounds the wait for it by
// WithProxyProtocol's timeout even where the engine's own mode is off:
// a client that stalls inside its header is closed unseen once the
// timeout passes, and counted.
func TestListenerProxyHeaderTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		eng, _ := serve(t, h, p, WithNumEventLoop(1), WithProxyProtocol(ProxyOff, timeout),
			WithListener("tcp://127.0.0.1:0", ListenProxyProtocol(ProxyRequired)))
		addrs := eng.Addrs()
		require.Len(t, addrs, 2)
		c := dial(t, addrName(addrs[1]))
		_, err := c.Write([]byte("PROXY TCP4 192.0.2.1"))
		require.NoError(t, err)
		start := time.Now()
		requireRefused(t, c)
		took := time.Since(start)
		// The timeout counts from the accept, which may come a little
		// before start.
		assert.GreaterOrEqual(t, took, timeout/2, "closed before the timeout")
		assert.Less(t, took, timeout+lateness, "closed late")
		s := closedStats(t, eng)
		assert.EqualValues(t, 1, s.ProxyTimeouts)
		assert.Len(t, h.ids, 0, "the stalled client was opened")
		return outcome{Stats: s}
	})
}
