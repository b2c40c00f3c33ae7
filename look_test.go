//go:build unix && !sluice_std

package sluice

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdingEcho echoes, and holds the loop inside the callback of a message
// that begins with 'h' until the test lets it go, so that the test can
// have the kernel hold what the loop will find next.
type holdingEcho struct {
	BuiltinEventEngine
	entered, gate chan struct{}
}

func (h *holdingEcho) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	if len(b) > 0 && b[0] == 'h' {
		h.entered <- struct{}{}
		<-h.gate
	}
	c.Write(b)
	return None
}

// A turn that found more than one socket ready is followed by a look that
// does not wait, which hands the loop what arrived meanwhile, and a look
// that found something by another; a lone connection's turns, one socket
// each, are followed by none (its peer sends nothing before its answer).
func TestPollLooksAfterABusyTurn(t *testing.T) {
	h := &holdingEcho{entered: make(chan struct{}), gate: make(chan struct{})}
	eng, addr := serve(t, h, WithNumEventLoop(1))
	d, ok := eng.e.loops[0].drv.(*pollDriver)
	if !ok {
		t.Skip("the loop is on io_uring, whose driver does not look")
	}
	counts := func() (looks, found uint64) {
		onLoopOf(t, eng, 0, func() { looks, found = d.looks, d.found })
		return
	}
	var cs [3]*rawClient
	for i := range cs {
		cs[i] = dialRaw(t, addr)
		for range 50 {
			cs[i].roundTrip(t)
		}
	}
	looks, found := counts()
	require.Zero(t, looks, "looks after turns that found one socket each")

	hold := bytes.Repeat([]byte{'h'}, 64)
	a, b, c := cs[0], cs[1], cs[2]
	require.NoError(t, writeAll(a.fd, hold))
	<-h.entered // the loop is in a's callback
	require.NoError(t, writeAll(b.fd, hold))
	c.send(t)
	h.gate <- struct{}{}
	<-h.entered // the next wait found b and c; the loop is in b's callback
	a.send(t)   // for the look after this busy turn
	h.gate <- struct{}{}
	for _, x := range []*rawClient{a, a, b, c} {
		x.receive(t)
	}
	l := eng.e.loops[0]
	waitFor(t, 5*time.Second, l.sleeping.Load, func() string { return "the loop never went back to its wait" })
	looks, found = counts()
	require.Equal(t, uint64(1), found, "looks that found something")
	require.Equal(t, uint64(2), looks, "looks: one after the busy turn, one after the look that found a's")
}
