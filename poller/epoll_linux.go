//go:build !sluice_std

package poller

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/eventfd"
	"github.com/sluicenet/sluice/internal/syscount"
)

// Poller is an epoll instance with an eventfd that other goroutines write
// to wake it.
type Poller struct {
	epfd   int
	wakefd int
	events [maxEvents]unix.EpollEvent
	ready  [maxEvents]Ready
}

// Open creates a poller.
func Open() (*Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	p := &Poller{epfd: epfd, wakefd: wakefd}
	// Edge-triggered: every write to the eventfd raises a new edge, so the
	// loop never has to read the counter back. That saves a system call per
	// wake-up; the counter would take 2^64 wakes to overflow.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(wakefd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		p.Close()
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return p, nil
}

// Close releases the poller's descriptors.
func (p *Poller) Close() error {
	unix.Close(p.wakefd)
	return os.NewSyscallError("close", unix.Close(p.epfd))
}

// Add starts watching fd for ev.
func (p *Poller) Add(fd int, ev Event) error {
	syscount.Inc()
	e := unix.EpollEvent{Events: epollEvents(ev), Fd: int32(fd)}
	return os.NewSyscallError("epoll_ctl add", unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &e))
}

// Modify changes what fd is watched for from old to ev.
func (p *Poller) Modify(fd int, old, ev Event) error {
	syscount.Inc()
	e := unix.EpollEvent{Events: epollEvents(ev), Fd: int32(fd)}
	return os.NewSyscallError("epoll_ctl mod", unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &e))
}

// Remove stops watching fd. Closing a descriptor takes it off epoll only
// once every copy of it is closed, and a listener's copies may live on in
// other processes.
func (p *Poller) Remove(fd int) error {
	syscount.Inc()
	return os.NewSyscallError("epoll_ctl del", unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil))
}

// Wait blocks until a descriptor is ready, Wake is called, or timeout
// passes (a negative timeout waits without limit). The returned slice is
// reused by the next call.
func (p *Poller) Wait(timeout time.Duration) ([]Ready, error) {
	syscount.Inc()
	n, err := unix.EpollWait(p.epfd, p.events[:], waitMillis(timeout))
	if err != nil {
		if err == unix.EINTR {
			return nil, nil
		}
		return nil, os.NewSyscallError("epoll_wait", err)
	}
	ready := p.ready[:0]
	for i := range n {
		e := &p.events[i]
		if int(e.Fd) == p.wakefd {
			continue
		}
		var ev Event
		if e.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			ev |= Readable
		}
		if e.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			ev |= Writable
		}
		if e.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			ev |= Failed
		}
		ready = append(ready, Ready{Fd: int(e.Fd), Events: ev})
	}
	return ready, nil
}

// Wake makes a Wait in progress, or the next one, return at once. It is
// safe from any goroutine.
func (p *Poller) Wake() error {
	return eventfd.Signal(p.wakefd)
}

func epollEvents(ev Event) uint32 {
	if ev == 0 {
		// The kernel reports an error or hang-up whatever a descriptor is
		// watched for; edge-triggered, it does so once, rather than on
		// every wait until the descriptor is watched again.
		return unix.EPOLLET
	}
	var e uint32
	if ev&Readable != 0 {
		e |= unix.EPOLLIN
	}
	if ev&Writable != 0 {
		e |= unix.EPOLLOUT
	}
	return e
}

// waitMillis converts a wait timeout to whole milliseconds, rounding up so
// that a loop never wakes before its deadline only to wait again.
func waitMillis(d time.Duration) int {
	if d < 0 {
		return -1
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}
