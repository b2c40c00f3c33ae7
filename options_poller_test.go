//go:build unix

package sluice

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/poller"
)

// testPoller is the poller every engine a test starts runs on, unless the
// test chooses one: epoll, or what SLUICE_TEST_POLLER names, so that the
// whole suite runs again on io_uring with SLUICE_TEST_POLLER=uring.
var testPoller = func() poller.Kind {
	var k poller.Kind
	if name := os.Getenv("SLUICE_TEST_POLLER"); name != "" {
		if err := k.UnmarshalText([]byte(name)); err != nil {
			panic(err)
		}
	}
	return k
}()

func TestPollerKindText(t *testing.T) {
	for _, k := range []poller.Kind{poller.Epoll, poller.IOUring, poller.Auto} {
		b, err := k.MarshalText()
		require.NoError(t, err)
		var got poller.Kind
		require.NoError(t, got.UnmarshalText(b))
		assert.Equal(t, k, got)
	}
	var k poller.Kind
	assert.ErrorIs(t, k.UnmarshalText([]byte("kqueue")), poller.ErrInvalidKind)
	assert.Equal(t, "Kind(9)", poller.Kind(9).String())
}
