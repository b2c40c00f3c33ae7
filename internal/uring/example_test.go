//go:build linux

package uring_test

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/uring"
)

// A ring receives into provided buffers and sends, one system call per
// turn of the loop.
func Example() {
	if err := uring.Probe(); err != nil {
		fmt.Println(err) // a real program falls back to epoll here
		return
	}
	runtime.LockOSThread() // the ring belongs to this thread
	defer runtime.UnlockOSThread()
	ring, err := uring.New(64, 0)
	if err != nil {
		panic(err)
	}
	defer ring.Close()
	bufs, err := uring.NewBufRing(ring, 0, 16, 4096)
	if err != nil {
		panic(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		panic(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])

	const recv, send = 1, 2
	ring.PrepRecvMultishot(fds[1], bufs, recv)
	ring.PrepSend(fds[0], []byte("hello"), unix.MSG_DONTWAIT, send)
	var sent, received string
	for received == "" {
		if err := ring.SubmitAndWait(1, time.Second); err != nil {
			panic(err)
		}
		ring.ForEachCQE(func(c uring.CQE) {
			switch c.UserData {
			case send:
				sent = fmt.Sprintf("sent %d bytes", c.Res)
			case recv:
				id, _ := c.Buffer()
				received = fmt.Sprintf("received %q", bufs.Buf(id)[:c.Res])
				bufs.Recycle(id)
			}
		})
	}
	fmt.Println(sent)
	fmt.Println(received)
	// Output:
	// sent 5 bytes
	// received "hello"
}
