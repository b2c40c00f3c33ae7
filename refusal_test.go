//go:build unix

package sluice

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syncbuf"
)

// refuser answers each connection refused with a line naming the reason,
// and records what OnRefuse was given.
type refuser struct {
	*lifetimes
	mu      sync.Mutex
	remotes []string // each refused client's address, as OnRefuse got it
	reasons []error
}

func newRefuser() *refuser { return &refuser{lifetimes: newLifetimes()} }

func (h *refuser) OnRefuse(remote net.Addr, reason error) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remotes = append(h.remotes, remote.String())
	h.reasons = append(h.reasons, reason)
	return []byte(refusal(reason))
}

// refusal is the answer refuser gives for reason.
func refusal(reason error) string { return "-ERR " + reason.Error() + "\r\n" }

// refusedFor checks that OnRefuse has been called n times, each for
// reason, and returns the remote addresses it got, in the order it ran.
func (h *refuser) refusedFor(t *testing.T, n int, reason error) (remotes []string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.reasons, n)
	for _, r := range h.reasons {
		assert.ErrorIs(t, r, reason)
	}
	return slices.Clone(h.remotes)
}

// plainHandler has no OnRefuse: the lifetimes without refuser's method.
type plainHandler struct{ *lifetimes }

// heard is what a refused client read: the bytes before the end of the
// stream, and how the stream ended (nil: cleanly).
type heard struct {
	local string // the client's own address
	got   string
	err   error
}

// knockAll dials n clients at once from source (any local address when
// empty), each sending first at once, and returns what each read until
// the server ended its stream.
func knockAll(t *testing.T, addr, source string, n int, first func(i int) []byte) []heard {
	t.Helper()
	network, address, _ := strings.Cut(addr, "://")
	d := net.Dialer{Timeout: 5 * time.Second}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	out := make([]heard, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			c, err := d.Dial(network, address)
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			out[i].local = c.LocalAddr().String()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			// The server may have closed already: a write that fails is
			// no failure here, what is read is.
			c.Write(first(i))
			b, err := io.ReadAll(c)
			out[i].got, out[i].err = string(b), err
		})
	}
	wg.Wait()
	return out
}

// sameCommand is a client's first bytes: a command, as redis-cli sends
// one as soon as it connects.
func sameCommand(int) []byte { return []byte("*1\r\n$4\r\nPING\r\n") }

// checkHeard checks that every client read want, then the end of its
// stream or a reset, and returns how many did.
func checkHeard(t *testing.T, hs []heard, want string) int {
	t.Helper()
	ok := 0
	for _, h := range hs {
		if h.got == want && (h.err == nil || errors.Is(h.err, syscall.ECONNRESET)) {
			ok++
			continue
		}
		t.Errorf("client %s read %q, then %v; want %q, then the end of the stream or a reset", h.local, h.got, h.err, want)
	}
	return ok
}

// A client refused for WithMaxConnections reads what OnRefuse returned,
// then the end of its stream, even when it sent a command as soon as it
// connected; OnRefuse learns who it was and why.
func TestRefusalMaxConnections(t *testing.T) {
	const knocks = 50
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newRefuser()
		eng := start(t, h, "tcp://127.0.0.1:0", p, WithNumEventLoop(2), WithMaxConnections(1))
		addr := "tcp://" + eng.Addrs()[0].String()
		in := dial(t, addr)
		id := h.next(t)

		hs := knockAll(t, addr, "", knocks, sameCommand)
		ok := checkHeard(t, hs, refusal(ErrTooManyConns))
		remotes := h.refusedFor(t, knocks, ErrTooManyConns)
		for _, c := range hs {
			assert.Contains(t, remotes, c.local, "the remote address OnRefuse got")
		}
		require.NoError(t, echoOnce(in, []byte("still served")))
		s := eng.Stats()
		assert.EqualValues(t, knocks, s.RejectedMaxConns)
		assert.EqualValues(t, 1, s.Accepted)
		in.Close()
		return outcome{Delivered: []int{ok}, Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
	})
}

// A client refused for WithMaxConnectionsPerSource reads the answer for
// that reason; another source is not held back.
func TestRefusalPerSource(t *testing.T) {
	const knocks = 20
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newRefuser()
		eng := start(t, h, "tcp://127.0.0.1:0", p, WithNumEventLoop(2), WithMaxConnectionsPerSource(1))
		addr := "tcp://" + eng.Addrs()[0].String()
		in := dial(t, addr) // from 127.0.0.1
		first := h.next(t)

		hs := knockAll(t, addr, "127.0.0.1", knocks, sameCommand)
		ok := checkHeard(t, hs, refusal(ErrTooManyFromSource))
		h.refusedFor(t, knocks, ErrTooManyFromSource)
		other := burstFrom(t, addr, "127.0.0.2")
		second := h.next(t)
		require.NoError(t, echoOnce(other, []byte("another source")))
		require.NoError(t, echoOnce(in, []byte("still served")))
		s := eng.Stats()
		assert.EqualValues(t, knocks, s.RejectedPerSource)
		in.Close()
		other.Close()
		return outcome{Delivered: []int{ok}, Closed: h.closedErrs(t, first, second), Stats: closedStats(t, eng)}
	})
}

// burstFrom dials addr from source.
func burstFrom(t *testing.T, addr, source string) net.Conn {
	t.Helper()
	network, address, _ := strings.Cut(addr, "://")
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	c, err := d.Dial(network, address)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// Behind a balancer that sends the PROXY header, the per-source limit
// counts the clients the headers name, so a refusal for it comes once the
// header is read: the balancer reads the answer, and OnRefuse gets the
// client's address.
func TestRefusalPerSourceAfterProxyHeader(t *testing.T) {
	const knocks = 20
	header := func(i int) []byte {
		return fmt.Appendf(nil, "PROXY TCP4 203.0.113.7 198.51.100.1 %d 6379\r\n*1\r\n$4\r\nPING\r\n", 1000+i)
	}
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newRefuser()
		eng := start(t, h, "tcp://127.0.0.1:0", p, WithNumEventLoop(2),
			WithMaxConnectionsPerSource(1), WithProxyProtocol(ProxyRequired, 0))
		addr := "tcp://" + eng.Addrs()[0].String()
		in := dial(t, addr)
		_, err := in.Write([]byte("PROXY TCP4 203.0.113.7 198.51.100.1 999 6379\r\n"))
		require.NoError(t, err)
		id := h.next(t)

		hs := knockAll(t, addr, "", knocks, header)
		ok := checkHeard(t, hs, refusal(ErrTooManyFromSource))
		for _, remote := range h.refusedFor(t, knocks, ErrTooManyFromSource) {
			assert.True(t, strings.HasPrefix(remote, "203.0.113.7:"), "OnRefuse got %s", remote)
		}
		s := eng.Stats()
		assert.EqualValues(t, knocks, s.RejectedPerSource)
		assert.EqualValues(t, 1, s.Accepted)
		in.Close()
		return outcome{Delivered: []int{ok}, Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
	})
}

// A handler without OnRefuse has its refused connections closed without a
// word, as before the hook: the client reads nothing.
func TestRefusalWithoutHandler(t *testing.T) {
	const knocks = 10
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := plainHandler{newLifetimes()}
		eng := start(t, h, "tcp://127.0.0.1:0", p, WithNumEventLoop(2), WithMaxConnections(1))
		require.Nil(t, eng.e.refusal, "a handler without OnRefuse taken for a RefusalHandler")
		addr := "tcp://" + eng.Addrs()[0].String()
		in := dial(t, addr)
		id := h.next(t)
		hs := knockAll(t, addr, "", knocks, sameCommand)
		ok := checkHeard(t, hs, "")
		assert.EqualValues(t, knocks, eng.Stats().RejectedMaxConns)
		in.Close()
		return outcome{Delivered: []int{ok}, Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
	})
}

// panickyRefuser panics in OnRefuse.
type panickyRefuser struct{ *lifetimes }

func (panickyRefuser) OnRefuse(net.Addr, error) []byte { panic("no words") }

// A panic in OnRefuse is logged and closes only the refused connection,
// without an answer; the loop and its connections carry on.
func TestRefusalPanics(t *testing.T) {
	var logs syncbuf.Buffer
	h := panickyRefuser{newLifetimes()}
	eng := start(t, h, "tcp://127.0.0.1:0", WithNumEventLoop(1), WithMaxConnections(1),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	addr := "tcp://" + eng.Addrs()[0].String()
	in := dial(t, addr)
	h.next(t)
	checkHeard(t, knockAll(t, addr, "", 2, sameCommand), "")
	require.NoError(t, echoOnce(in, []byte("still served")))
	assert.Equal(t, 2, strings.Count(logs.String(), "no words"), "panics logged")
	assert.EqualValues(t, 2, eng.Stats().RejectedMaxConns)
}

// While the connections together hold more than WithInboundBudget, a new
// connection is refused with ErrInboundOverBudget, and OnRefuse can say
// so; once the engine is back under its budget, clients are served
// again. The engine is held over its budget by the test, so that the
// shedder, which would otherwise end the excess within a turn, has none
// to end.
func TestRefusalOverBudget(t *testing.T) {
	const budget = 1 << 20
	h := newRefuser()
	eng, addr := serve(t, h, WithNumEventLoop(2), WithInboundBudget(budget))
	eng.e.mem.held.Add(budget + 1)
	hs := knockAll(t, addr, "", 5, sameCommand)
	checkHeard(t, hs, refusal(ErrInboundOverBudget))
	h.refusedFor(t, 5, ErrInboundOverBudget)
	assert.EqualValues(t, 5, eng.Stats().RejectedOverBudget)
	eng.e.mem.held.Add(-(budget + 1))
	require.NoError(t, echoOnce(dial(t, addr), []byte("served again")))
}
