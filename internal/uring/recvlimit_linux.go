package uring

import (
	"time"

	"golang.org/x/sys/unix"
)

// RecvLimitWorks reports whether the kernel honours SetRecvLimit, by
// trying it on a socket pair. It uses r and b, and leaves nothing armed
// on r and every buffer of b free; call it before anything else is armed
// on r.
func RecvLimitWorks(r *Ring, b *BufRing) bool {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if _, err := unix.Write(fds[0], []byte("xx")); err != nil {
		return false
	}
	// User data no caller's can be: nothing else is armed on r.
	const probe, cancel = 1 << 63, 1<<63 | 1
	r.PrepRecvMultishot(fds[1], b, probe).SetRecvLimit(1)
	works, ended := false, false
	for deadline := time.Now().Add(time.Second); !ended && time.Now().Before(deadline); {
		if err := r.SubmitAndWait(1, 100*time.Millisecond); err != nil {
			return false
		}
		r.ForEachCQE(func(c CQE) {
			if c.UserData != probe {
				return
			}
			if id, ok := c.Buffer(); ok {
				b.Recycle(id)
			}
			switch {
			case !c.More():
				// Capped, it ends once it has taken bytes; an older kernel
				// refuses it with EINVAL.
				works, ended = c.Res > 0, true
			case c.Res > 0:
				// A kernel that ignores the cap keeps it armed.
				r.PrepCancel(probe, cancel)
			}
		})
	}
	return works
}
