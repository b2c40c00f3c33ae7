package eventfd

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Each signal adds one to the counter, and a reader takes the sum.
func TestSignal(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(fd)
	for range 3 {
		require.NoError(t, Signal(fd))
	}
	var b [8]byte
	_, err = unix.Read(fd, b[:])
	require.NoError(t, err)
	require.EqualValues(t, 3, binary.NativeEndian.Uint64(b[:]))
	require.Zero(t, testing.AllocsPerRun(100, func() { Signal(fd) }), "signalling allocates")
}

// A closed descriptor is an error that names the call.
func TestSignalClosed(t *testing.T) {
	require.ErrorContains(t, Signal(-1), "write eventfd")
}
