package sluice

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syncbuf"
	"github.com/sluicenet/sluice/poller"
)

// TestAcceptPausesWhenOutOfDescriptors runs on epoll only: an io_uring
// accept takes the descriptor limit when it is submitted, so a multishot
// accept armed before the test lowers the limit never sees it.
func TestAcceptPausesWhenOutOfDescriptors(t *testing.T) {
	needsKernelSockets(t, "fills the process's descriptor table under the engine")
	var logs syncbuf.Buffer
	h := newOpener()
	eng, addr := serve(t, h, WithNumEventLoop(1), WithPoller(poller.Epoll),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))

	var rl unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &rl))
	restore := rl
	// The limit bounds descriptor numbers, and a new descriptor takes the
	// lowest free one: leave room for the client's socket and nothing more,
	// so the engine's accept fails with EMFILE.
	next, err := unix.Dup(0)
	require.NoError(t, err)
	unix.Close(next)
	rl.Cur = uint64(next + 1)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &rl))
	limited := true
	defer func() {
		if limited {
			unix.Setrlimit(unix.RLIMIT_NOFILE, &restore)
		}
	}()
	c := dial(t, addr)
	waitFor(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "pausing accepts") },
		func() string { return "no pause logged: " + logs.String() })
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &restore))
	limited = false

	h.next(t) // accepted once the pause is over
	c.Close()
	assert.Equal(t, 1, strings.Count(logs.String(), "pausing accepts"), "one warning per pause, not per attempt")
	assert.EqualValues(t, 1, eng.Stats().RejectedNoDescriptors, "the failed accept is counted")
}
