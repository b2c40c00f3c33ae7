// Package eventfd signals a Linux eventfd, the counter a loop waits on to
// be woken, whether epoll watches it or an io_uring polls it.
package eventfd

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// one is the 8 bytes a signal writes: 1 in the machine's byte order. It is
// only ever read, so every goroutine may pass it to write(2), and
// signalling allocates nothing.
var one = binary.NativeEndian.AppendUint64(nil, 1)

// Signal adds one to the eventfd fd, making whoever waits on it wake. A
// counter already at its maximum has a wake pending anyway, so EAGAIN is
// no error.
func Signal(fd int) error {
	for {
		_, err := unix.Write(fd, one)
		switch err {
		case unix.EINTR:
			continue
		case nil, unix.EAGAIN:
			return nil
		}
		return os.NewSyscallError("write eventfd", err)
	}
}
