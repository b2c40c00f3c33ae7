//go:build !linux && !windows && !sluice_std

package main

import "github.com/sluicenet/sluice/poller"

// settlePoller turns poller.Auto into epoll, the only kind served here,
// where the engine's readiness poller is kqueue.
func settlePoller(poller.Kind) poller.Kind { return poller.Epoll }

// multiplexingAPI names the poller as Redis's INFO names its own.
func multiplexingAPI(poller.Kind) string { return "kqueue" }
