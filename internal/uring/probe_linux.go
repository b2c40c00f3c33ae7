package uring

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ErrUnsupported is wrapped by the errors of Probe and New when io_uring
// cannot serve here: the kernel is too old, io_uring is disabled by
// sysctl, or a seccomp filter (as in many containers) refuses it.
var ErrUnsupported = errors.New("uring: io_uring unavailable")

// requiredFeatures are the IORING_FEAT_* flags the package relies on.
var requiredFeatures = []struct {
	bit  uint32
	name string
}{
	{featNoDrop, "IORING_FEAT_NODROP"},      // no completion is ever dropped
	{featFastPoll, "IORING_FEAT_FAST_POLL"}, // sockets are polled, not handed to worker threads
	{featExtArg, "IORING_FEAT_EXT_ARG"},     // SubmitAndWait's timeout
	{featCQESkip, "IORING_FEAT_CQE_SKIP"},   // SkipSuccess
}

// requiredOps are the operations the package prepares. IORING_OP_SEND_ZC
// is not one of them, but came in Linux 6.0 with multishot receive, which
// has no opcode of its own to probe for.
var requiredOps = []struct {
	op   uint8
	name string
}{
	{opPollAdd, "IORING_OP_POLL_ADD"},
	{opAccept, "IORING_OP_ACCEPT"},
	{opRecv, "IORING_OP_RECV"},
	{opSend, "IORING_OP_SEND"},
	{opSendmsg, "IORING_OP_SENDMSG"},
	{opRead, "IORING_OP_READ"},
	{opAsyncCancel, "IORING_OP_ASYNC_CANCEL"},
	{opConnect, "IORING_OP_CONNECT"},
	{opClose, "IORING_OP_CLOSE"},
	{opSendZC, "IORING_OP_SEND_ZC"},
}

// Probe reports whether this process can use io_uring with everything the
// package needs: a ring, the features and operations above, and a
// provided-buffer ring. If not, the error wraps ErrUnsupported and says
// why. The answer is computed once and remembered.
func Probe() error { return probeOnce() }

var probeOnce = sync.OnceValue(probe)

func probe() error {
	disabled := sysctl("kernel/io_uring_disabled")
	if disabled == "2" {
		return fmt.Errorf("%w: disabled by sysctl kernel.io_uring_disabled=2", ErrUnsupported)
	}
	// The ring may be bound to this thread; keep to it until it is closed.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(4, 0)
	if err != nil {
		if !errors.Is(err, ErrUnsupported) {
			err = fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		if disabled == "1" {
			return fmt.Errorf("%w (kernel.io_uring_disabled=1 allows only the group kernel.io_uring_group)", err)
		}
		return err
	}
	defer r.Close()
	for _, f := range requiredFeatures {
		if r.features&f.bit == 0 {
			return fmt.Errorf("%w: kernel lacks %s", ErrUnsupported, f.name)
		}
	}
	var ops probeOps
	if err := r.register(registerProbe, unsafe.Pointer(&ops), uintptr(len(ops.ops))); err != nil {
		return fmt.Errorf("%w: probing operations: %w", ErrUnsupported, err)
	}
	for _, o := range requiredOps {
		if o.op > ops.lastOp || ops.ops[o.op].flags&probeOpSupported == 0 {
			return fmt.Errorf("%w: kernel lacks %s", ErrUnsupported, o.name)
		}
	}
	if _, err := NewBufRing(r, 0, 1, 1); err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return nil
}

// sysctl returns the value of /proc/sys/name, or "" if it cannot be read.
func sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
