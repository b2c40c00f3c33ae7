//go:build windows || sluice_std

package main

import "github.com/sluicenet/sluice/poller"

// settlePoller turns poller.Auto into epoll, the only kind the
// development backend serves.
func settlePoller(poller.Kind) poller.Kind { return poller.Epoll }

// multiplexingAPI names the development backend, which waits on the
// standard library's network poller from goroutines of its own.
func multiplexingAPI(poller.Kind) string { return "goroutines" }
