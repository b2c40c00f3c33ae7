//go:build (darwin || dragonfly || freebsd) && !sluice_std

package poller

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// wakeIdent names the EVFILT_USER event that Wake triggers.
const wakeIdent = 0

// Poller is a kqueue with a user event that other goroutines trigger to
// wake it.
type Poller struct {
	kq     int
	events [maxEvents]unix.Kevent_t
	ready  [maxEvents]Ready
	wake   [1]unix.Kevent_t
}

// Open creates a poller.
func Open() (*Poller, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, os.NewSyscallError("kqueue", err)
	}
	unix.CloseOnExec(kq)
	p := &Poller{kq: kq}
	// EV_CLEAR resets the user event once it is reported, so each
	// NOTE_TRIGGER wakes exactly one Wait and nothing has to be read back.
	add := []unix.Kevent_t{{Ident: wakeIdent, Filter: unix.EVFILT_USER, Flags: unix.EV_ADD | unix.EV_CLEAR}}
	if _, err := unix.Kevent(kq, add, nil, nil); err != nil {
		unix.Close(kq)
		return nil, os.NewSyscallError("kevent", err)
	}
	p.wake[0] = unix.Kevent_t{Ident: wakeIdent, Filter: unix.EVFILT_USER, Fflags: unix.NOTE_TRIGGER}
	return p, nil
}

// Close releases the kqueue.
func (p *Poller) Close() error {
	return os.NewSyscallError("close", unix.Close(p.kq))
}

// Add starts watching fd for ev.
func (p *Poller) Add(fd int, ev Event) error {
	return p.change(fd, 0, ev)
}

// Modify changes what fd is watched for from old to ev.
func (p *Poller) Modify(fd int, old, ev Event) error {
	return p.change(fd, old, ev)
}

// Remove stops watching fd. It does nothing: closing a descriptor deletes
// its filters, whatever copies of it live on.
func (p *Poller) Remove(fd int) error { return nil }

// change adds the filters ev has and old lacks, and deletes the reverse.
func (p *Poller) change(fd int, old, ev Event) error {
	var changes [2]unix.Kevent_t
	n := 0
	for _, f := range [...]struct {
		bit    Event
		filter int16
	}{{Readable, unix.EVFILT_READ}, {Writable, unix.EVFILT_WRITE}} {
		var flags uint16
		switch {
		case ev&f.bit != 0 && old&f.bit == 0:
			flags = unix.EV_ADD
		case ev&f.bit == 0 && old&f.bit != 0:
			flags = unix.EV_DELETE
		default:
			continue
		}
		unix.SetKevent(&changes[n], fd, int(f.filter), int(flags))
		n++
	}
	if n == 0 {
		return nil
	}
	_, err := unix.Kevent(p.kq, changes[:n], nil, nil)
	return os.NewSyscallError("kevent", err)
}

// Wait blocks until a descriptor is ready, Wake is called, or timeout
// passes (a negative timeout waits without limit). The returned slice is
// reused by the next call.
func (p *Poller) Wait(timeout time.Duration) ([]Ready, error) {
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	syscount.Inc()
	n, err := unix.Kevent(p.kq, nil, p.events[:], ts)
	if err != nil {
		if err == unix.EINTR {
			return nil, nil
		}
		return nil, os.NewSyscallError("kevent", err)
	}
	ready := p.ready[:0]
	for i := range n {
		e := &p.events[i]
		var ev Event
		switch e.Filter {
		case unix.EVFILT_READ:
			ev = Readable
		case unix.EVFILT_WRITE:
			ev = Writable
		default:
			continue
		}
		if e.Flags&unix.EV_ERROR != 0 {
			ev = Readable | Writable
		}
		if e.Flags&(unix.EV_ERROR|unix.EV_EOF) != 0 {
			ev |= Failed
		}
		ready = append(ready, Ready{Fd: int(e.Ident), Events: ev})
	}
	return ready, nil
}

// Wake makes a Wait in progress, or the next one, return at once. It is
// safe from any goroutine.
func (p *Poller) Wake() error {
	for {
		_, err := unix.Kevent(p.kq, p.wake[:], nil, nil)
		if err == unix.EINTR {
			continue
		}
		return os.NewSyscallError("kevent", err)
	}
}
