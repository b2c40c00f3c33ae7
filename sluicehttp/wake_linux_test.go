//go:build !sluice_std

package sluicehttp

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
)

// eventfdSignals sums the counters of the process's eventfds. An epoll
// loop never reads its wake-up eventfd, so its counter is the number of
// times the loop was woken for posted work.
func eventfdSignals(t *testing.T) uint64 {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var sum uint64
	for _, fd := range fds {
		if link, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); link != "anon_inode:[eventfd]" {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "eventfd-count:"); ok {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				require.NoError(t, err)
				sum += n
			}
		}
	}
	return sum
}

// TestPoolAnswersNeedNoWake checks that the handlers a loop hands to the
// pool run before the loop waits again, so that their answers, queued on
// a loop that is awake, cost no wake-up: with one P, a loop that waited
// first would hold it in epoll_wait until the runtime took it back, and
// each answer would then wake the loop.
func TestPoolAnswersNeedNoWake(t *testing.T) {
	if testPoller != poller.Epoll {
		t.Skip("counts the wake-ups of an epoll loop, whose eventfd is never read")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	addr := serve(t, &Server{Handler: plaintext}, sluice.WithNumEventLoop(1))
	c := dial(t, addr)
	br := bufio.NewReader(c)
	roundTrip := func() {
		_, err := io.WriteString(c, plainRequest)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
	}
	roundTrip()
	const requests = 100
	before := eventfdSignals(t)
	for range requests {
		roundTrip()
	}
	wakes := eventfdSignals(t) - before
	t.Logf("%d wake-ups for %d requests", wakes, requests)
	assert.Less(t, wakes, uint64(requests/10))
}
