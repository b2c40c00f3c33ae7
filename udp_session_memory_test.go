//go:build linux

package sluice

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// udpSessionCount counts the sessions opened, and keeps nothing.
type udpSessionCount struct {
	BuiltinEventEngine
	opens atomic.Int64
}

func (h *udpSessionCount) OnOpen(Conn) ([]byte, Action) {
	h.opens.Add(1)
	return nil, None
}

// TestUDPSessionMemory checks what WithDatagramSessions says a session
// costs, about 600 bytes besides the handler's context, with a loop
// holding thousands, each opened by a client a PROXY header names (so
// that one socket can be thousands of peers), measured as the heap grows
// while they are open.
func TestUDPSessionMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	const n = 4096
	h := &udpSessionCount{}
	eng, addr := serveAddr(t, "udp://127.0.0.1:0", h, WithNumEventLoop(1),
		WithProxyProtocol(ProxyRequired, 0), WithDatagramSessions(time.Minute, n))
	proxy := udpDial(t, addr)
	dst := eng.Addrs()[0].(*net.UDPAddr).AddrPort()
	open := func(from, to int) {
		for i := from; i < to; i++ {
			client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 1000)
			if _, err := proxy.Write(append(dgramHeader(1, 0x12, client, dst), "hi"...)); err != nil {
				t.Fatal(err)
			}
			if i%64 == 63 {
				waitFor(t, 10*time.Second, func() bool { return h.opens.Load() == int64(i+1) }, func() string {
					return fmt.Sprintf("%d of %d sessions opened", h.opens.Load(), i+1)
				})
			}
		}
	}
	open(0, 64) // the loop's first, which make what every session shares
	before := heap()
	open(64, n)
	per := float64(heap()-before) / (n - 64)
	t.Logf("%.0f bytes a session", per)
	if per > 640 {
		t.Errorf("a session holds %.0f bytes of heap, past the 600 or so WithDatagramSessions says", per)
	}
}

// heap returns the bytes the heap holds once collected.
func heap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
