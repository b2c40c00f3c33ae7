//go:build linux && !sluice_std

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicenet/sluice/internal/uring"
	"github.com/sluicenet/sluice/poller"
)

// TestMultiplexingAPI checks that INFO names the poller the loops run on:
// epoll, io_uring, and for -poller auto whichever the engine's probe
// chose.
func TestMultiplexingAPI(t *testing.T) {
	ringWorks := uring.Probe() == nil
	auto := "epoll"
	if ringWorks {
		auto = "io_uring"
	}
	for _, tt := range []struct {
		kind poller.Kind
		want string
	}{{poller.Epoll, "epoll"}, {poller.IOUring, "io_uring"}, {poller.Auto, auto}} {
		t.Run(tt.kind.String(), func(t *testing.T) {
			if tt.kind == poller.IOUring && !ringWorks {
				t.Skip("io_uring is not available here")
			}
			ts := startServerOn(t, config{poller: tt.kind})
			assert.Equal(t, tt.want, infoFields(ts.do(t, "INFO", "server"))["multiplexing_api"])
		})
	}
}
