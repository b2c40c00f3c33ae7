//go:build linux && !sluice_std

package sluice

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syscount"
	"github.com/sluicenet/sluice/poller"
)

// A connection accepted on epoll is registered once OnOpen has said what
// it is watched for: one paused there, as a proxy pauses a client until
// its backend connects, costs one epoll_ctl, not an ADD for reading and a
// MOD to take it back. Counted from the loop asleep to the loop asleep
// again: the wait that hears of the connection and the ADD (accept(2) and
// setsockopt(2) are not counted).
func TestPausedInOnOpenIsRegisteredOnce(t *testing.T) {
	syscount.Enabled = true
	t.Cleanup(func() { syscount.Enabled = false })
	h := &pausedInOnOpen{conns: make(chan Conn, 16), got: make(chan string, 16)}
	eng, addr := serve(t, h, WithPoller(poller.Epoll), WithNumEventLoop(1))
	fewest := fewestSystemCalls(eng.e.loops[0], func() {
		dial(t, addr)
		<-h.conns
	})
	require.LessOrEqual(t, fewest, uint64(2), "counted system calls for a connection paused in OnOpen")
}
