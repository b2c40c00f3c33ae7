//go:build sluice_std

package socket

import (
	"os"

	"golang.org/x/sys/unix"
)

// ReceiveCoalesced turns UDP_GRO off, whatever on says: the development
// backend's reader takes one datagram a read and cannot split what the
// kernel coalesced, which a socket enrolled or handed over with it on
// would bring.
func ReceiveCoalesced(fd int, on bool) error {
	pc := packetConn(fd)
	if pc == nil {
		return nil
	}
	rc, err := pc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(s uintptr) { serr = unix.SetsockoptInt(int(s), unix.SOL_UDP, unix.UDP_GRO, 0) }); err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt", serr)
}
