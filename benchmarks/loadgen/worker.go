package loadgen

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// readBufSize is each worker's one read buffer: an echo up to this size
// fits in one read, a larger one takes several.
const readBufSize = 64 << 10

// A worker is one epoll loop and the connections it owns. Its methods run on
// one goroutine at a time, locked to its thread for the length of a run.
type worker struct {
	epfd   int
	conns  []conn
	buf    []byte
	events []unix.EpollEvent
	ts     unix.Timespec // the wait timeout, kept here so waiting never allocates
	dials  int           // connections opened, to spread them over source addresses
	res    Result
	// negotiated is what its TLS connections' handshakes settled on.
	negotiated string
}

func newWorker() (*worker, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &worker{
		epfd:   epfd,
		buf:    make([]byte, readBufSize),
		events: make([]unix.EpollEvent, 1024),
	}, nil
}

// close closes the worker's sockets and its epoll descriptor.
func (w *worker) close() {
	for i := range w.conns {
		w.kill(&w.conns[i])
	}
	unix.Close(w.epfd)
}

// watch sets the events epoll reports for connection i: readable, plus
// writable while out is true.
func (w *worker) watch(op, i int, out bool) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)} // Fd carries the index, not the descriptor
	if out {
		ev.Events |= unix.EPOLLOUT
	}
	return unix.EpollCtl(w.epfd, op, w.conns[i].fd, &ev)
}

// kill closes a connection (which also takes it out of the epoll set).
func (w *worker) kill(c *conn) {
	if !c.dead {
		unix.Close(c.fd)
		c.dead, c.busy, c.dialing = true, false, false
	}
}

// abandon gives up, at a drain deadline, on the connections still waiting:
// each counts as a timeout and is closed, its stream no longer in step.
func (w *worker) abandon() {
	for i := range w.conns {
		if c := &w.conns[i]; !c.dead && (c.busy || c.dialing) {
			w.res.Errors.Timeout++
			w.kill(c)
		}
	}
}

// wait waits up to timeout nanoseconds (forever if negative) for events and
// returns them.
func (w *worker) wait(timeout int64) []unix.EpollEvent {
	return epollWait(w.epfd, w.events, &w.ts, timeout)
}

// epollWait waits on epfd up to timeout nanoseconds (forever if negative)
// for events, into events, and returns them. It uses epoll_pwait2, whose
// timeout has nanosecond resolution: paced sends are microseconds apart;
// ts holds the timeout, kept by the caller so that waiting never
// allocates.
func epollWait(epfd int, events []unix.EpollEvent, ts *unix.Timespec, timeout int64) []unix.EpollEvent {
	var p uintptr
	if timeout >= 0 {
		*ts = unix.NsecToTimespec(timeout)
		p = uintptr(unsafe.Pointer(ts))
	}
	n, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), p, 0, 0)
	if errno != 0 { // EINTR: the Go runtime's signals
		return nil
	}
	return events[:n]
}

// preciseTimers asks the kernel to wake the calling thread on time rather
// than up to 50 µs late, its default timer slack.
func preciseTimers() {
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}
