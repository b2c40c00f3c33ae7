//go:build unix && !sluice_std

package sluice

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syscount"
	"github.com/sluicenet/sluice/poller"
)

// A loop holding its waits keeps the hot path's budget: no allocation and
// at most three system calls per echo round trip on epoll. Two loops on
// two Ps hold their waits; the idle one's P serves the client.
func TestHeldWaitHotPath(t *testing.T) {
	skipUnderRace(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	eng, addr := serve(t, echoHandler{}, WithNumEventLoop(2), WithHeldWaits(true))
	c := dialRaw(t, addr)
	for range 100 {
		c.roundTrip(t)
	}
	var l *eventloop
	for _, each := range eng.e.loops {
		if each.count.Load() > 0 {
			l = each
		}
	}
	require.NotNil(t, l, "the loop serving the client")
	allocs := testing.AllocsPerRun(1000, func() { c.roundTrip(t) })
	require.Zero(t, allocs, "heap allocations per 64-byte echo round trip")
	const trips = 1000
	perTrip := float64(fewestSystemCalls(l, func() {
		for range trips {
			c.roundTrip(t)
		}
	})) / trips
	t.Logf("%.2f system calls per 64-byte echo round trip", perTrip)
	if testPoller == poller.Epoll {
		require.LessOrEqual(t, perTrip, 3.0)
	}
}
