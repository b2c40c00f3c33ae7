package uring

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SendsTo reports whether the kernel's IORING_OP_SEND takes an address,
// as PrepSendTo needs (Linux 6.1 and later; the operation itself came
// earlier and refuses one with EINVAL). No flag or opcode tells, so it
// tries: one byte from a UDP socket on the loopback to itself, through a
// ring of its own. Anything that keeps it from trying answers false. The
// answer is computed once and remembered.
func SendsTo() bool { return sendsToOnce() }

var sendsToOnce = sync.OnceValue(sendsTo)

func sendsTo() bool {
	if Probe() != nil {
		return false
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}) != nil {
		return false
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return false
	}
	name := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
	port := sa.(*unix.SockaddrInet4).Port
	p := (*[2]byte)(unsafe.Pointer(&name.Port))
	p[0], p[1] = byte(port>>8), byte(port)

	runtime.LockOSThread() // the ring may be bound to this thread
	defer runtime.UnlockOSThread()
	r, err := New(2, 0)
	if err != nil {
		return false
	}
	defer r.Close()
	b := []byte{0}
	r.PrepSendTo(fd, b, unsafe.Pointer(name), unix.SizeofSockaddrInet4, unix.MSG_DONTWAIT, 1)
	if r.SubmitAndWait(1, time.Second) != nil {
		return false
	}
	sent := false
	r.ForEachCQE(func(c CQE) { sent = c.Res == 1 })
	runtime.KeepAlive(b)
	runtime.KeepAlive(name)
	return sent
}
