//go:build !sluice_std

package sluice

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syncbuf"
	"github.com/sluicenet/sluice/poller"
)

// ringRefusedEnv marks the child process of TestPollerWhereTheRingIsRefused.
const ringRefusedEnv = "SLUICE_TEST_RING_REFUSED"

// TestPollerWhereTheRingIsRefused runs, in a process of its own, what a
// container's seccomp profile does to io_uring: io_uring_setup fails with
// EPERM. There poller.Auto must serve on epoll, and poller.IOUring must fail
// Run with ErrPollerUnsupported rather than start a loop that cannot wait.
func TestPollerWhereTheRingIsRefused(t *testing.T) {
	args := []string{os.Args[0], "-test.run=^TestPollerWhereTheRingIsRefused$", "-test.v", "-test.count=1"}
	switch os.Getenv(ringRefusedEnv) {
	case "filter":
		// The filter is installed, then the process starts afresh under
		// it, as a program in such a container does: what this process
		// learned of io_uring before the filter must not count.
		refuseRing(t)
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, ringRefusedEnv+"=") })
		err := syscall.Exec(args[0], args, append(env, ringRefusedEnv+"=run"))
		t.Fatalf("exec: %v", err)
	case "run":
		onRefusedRing(t)
		return
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), ringRefusedEnv+"=filter")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestPollerWhereTheRingIsRefused", "the child ran the scenario:\n%s", out)
}

// refuseRing installs a seccomp filter on every thread of this process.
func refuseRing(t *testing.T) {
	// Load the system call's number; io_uring_setup gets EPERM, every other
	// call is allowed.
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	require.NoError(t, unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		t.Fatalf("seccomp: %v", errno)
	}
}

// onRefusedRing checks what each poller choice does where io_uring_setup
// fails.
func onRefusedRing(t *testing.T) {
	_, err := Start(echoHandler{}, "tcp://127.0.0.1:0", WithPoller(poller.IOUring))
	require.ErrorIs(t, err, ErrPollerUnsupported)
	assert.True(t, errors.Is(err, unix.EPERM), "the error says why: %v", err)

	var log syncbuf.Buffer
	eng, addr := serve(t, echoHandler{}, WithPoller(poller.Auto), WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	assert.Contains(t, log.String(), "using epoll", "Auto says which poller it took")
	assert.Contains(t, log.String(), "operation not permitted", "and why")
	assert.Equal(t, poller.Epoll, eng.e.opts.poller)
	c, err := net.Dial("tcp", strings.TrimPrefix(addr, "tcp://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	got := make([]byte, 4)
	_, err = c.Read(got)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(got))
}
