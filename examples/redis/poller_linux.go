//go:build linux && !sluice_std

package main

import (
	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/poller"
)

// settlePoller turns poller.Auto into the kind the engine would choose,
// by the engine's own probe, so that INFO can say which one serves.
func settlePoller(k poller.Kind) poller.Kind {
	if k != poller.Auto {
		return k
	}
	if uring.Probe() != nil {
		return poller.Epoll
	}
	return poller.IOUring
}

// multiplexingAPI names the poller as Redis's INFO names its own.
func multiplexingAPI(k poller.Kind) string {
	if k == poller.IOUring {
		return "io_uring"
	}
	return "epoll"
}
