//go:build linux && !sluice_std

package sluice

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// WithWipeBuffers: bytes received for a connection that closed in the
// same turn, which the handler never sees, are wiped from where the loop
// received them. On io_uring one multishot receive brings a read buffer's
// worth, whose callback resets the connection, and then the secret behind
// it, in a second completion handled after the connection is gone; on
// epoll the secret stays in the socket the reset discards.
func TestWipeBuffersReceivedAfterClose(t *testing.T) {
	const size = 4 << 10
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		h.traffic = func(c Conn) Action {
			c.SetLinger(0)
			return Close
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithReadBufferCap(size), WithWipeBuffers(true))
		client := dial(t, addr)
		id := h.next(t)
		fd := h.conn(id).Fd()
		l := eng.e.loops[0]

		// Both parts wait in the socket before the loop receives either.
		release, held := make(chan struct{}), make(chan struct{})
		require.NoError(t, Loop{l}.Execute(func() { close(held); <-release }))
		<-held
		msg := append(bytes.Repeat([]byte{'x'}, size), "secret-in-flight"...)
		_, err := client.Write(msg)
		require.NoError(t, err)
		waitFor(t, 5e9, func() bool {
			n, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
			return err == nil && n == len(msg)
		}, func() string { return "the message never reached the server's socket" })
		close(release)
		h.waitClosed(t, id)

		left := make(chan []byte, 1)
		require.NoError(t, Loop{l}.Execute(func() { left <- receivedTCPInto(l) }))
		assert.False(t, bytes.Contains(<-left, []byte("secret")), "bytes received after the close left where the loop received them")
		return outcome{}
	})
}

// receivedTCPInto returns a copy of the memory l receives streams into:
// its read buffer, and on io_uring the ring's provided buffers.
func receivedTCPInto(l *eventloop) []byte {
	all := bytes.Clone(l.buf[:cap(l.buf)])
	if rg, ok := l.drv.(*ringDriver); ok {
		for id := range ringBufCount(l.eng.opts.readBufferCap) {
			all = append(all, rg.bufs.Buf(uint16(id))...)
		}
	}
	return all
}
