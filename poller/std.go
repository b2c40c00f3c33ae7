//go:build windows || sluice_std

package poller

import (
	"sync"
	"time"

	"github.com/sluicenet/sluice/internal/socket"
)

// Poller watches the standard library's connections, which Windows
// and the sluice_std build tag use: their goroutines report each change
// (socket.Watch), and Wait asks every descriptor reported since the last
// Wait what it is ready for (socket.Poll), as a level-triggered poller.
type Poller struct {
	mu       sync.Mutex
	interest map[int]Event
	changed  map[int]struct{} // reported since the last Wait looked
	wake     chan struct{}
	timer    *time.Timer
	look     []int
	ready    []Ready
}

// Open creates a poller.
func Open() (*Poller, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Poller{
		interest: make(map[int]Event),
		changed:  make(map[int]struct{}),
		wake:     make(chan struct{}, 1),
		timer:    t,
	}, nil
}

// Close releases the poller.
func (p *Poller) Close() error {
	p.timer.Stop()
	return nil
}

// Add starts watching fd for ev.
func (p *Poller) Add(fd int, ev Event) error {
	p.set(fd, ev)
	socket.Watch(fd, p.notify)
	return nil
}

// Modify changes what fd is watched for from old to ev.
func (p *Poller) Modify(fd int, old, ev Event) error {
	p.set(fd, ev)
	return nil
}

// Remove stops watching fd.
func (p *Poller) Remove(fd int) error {
	socket.Watch(fd, nil)
	p.mu.Lock()
	delete(p.interest, fd)
	delete(p.changed, fd)
	p.mu.Unlock()
	return nil
}

// set records what fd is watched for and has the next Wait look at it.
func (p *Poller) set(fd int, ev Event) {
	p.mu.Lock()
	p.interest[fd] = ev
	p.mu.Unlock()
	p.notify(fd)
}

// notify has the next Wait look at fd, and wakes a Wait in progress.
func (p *Poller) notify(fd int) {
	p.mu.Lock()
	p.changed[fd] = struct{}{}
	p.mu.Unlock()
	p.Wake()
}

// Wait blocks until a descriptor is ready, Wake is called, or timeout
// passes (a negative timeout waits without limit). The returned slice is
// reused by the next call.
func (p *Poller) Wait(timeout time.Duration) ([]Ready, error) {
	if ready := p.collect(); len(ready) > 0 || timeout == 0 {
		return ready, nil
	}
	var expired <-chan time.Time
	if timeout > 0 {
		p.timer.Reset(timeout)
		defer p.timer.Stop()
		expired = p.timer.C
	}
	select {
	case <-p.wake:
		return p.collect(), nil
	case <-expired:
		return nil, nil
	}
}

// collect asks each descriptor reported since the last look what it is
// ready for. One still ready is looked at again next time, as a level-
// triggered poller reports it until it is drained. An error on a
// descriptor watched for nothing is reported once, as epoll reports it.
func (p *Poller) collect() []Ready {
	p.mu.Lock()
	look := p.look[:0]
	for fd := range p.changed {
		look = append(look, fd)
	}
	clear(p.changed)
	p.mu.Unlock()
	p.look = look
	ready := p.ready[:0]
	for _, fd := range look {
		readable, writable, failed, gone := socket.Poll(fd)
		p.mu.Lock()
		interest, watched := p.interest[fd]
		if gone {
			delete(p.interest, fd)
		}
		p.mu.Unlock()
		if gone || !watched {
			continue
		}
		var ev Event
		if readable && interest&Readable != 0 {
			ev |= Readable
		}
		if writable && interest&Writable != 0 {
			ev |= Writable
		}
		if failed {
			ev |= interest | Failed
			if interest == 0 {
				ev = Readable | Writable | Failed
			}
		}
		if ev != 0 {
			ready = append(ready, Ready{Fd: fd, Events: ev})
			if interest != 0 {
				p.mu.Lock()
				p.changed[fd] = struct{}{}
				p.mu.Unlock()
			}
		}
	}
	p.ready = ready
	return ready
}

// Wake makes a Wait in progress, or the next one, return at once. It is
// safe from any goroutine.
func (p *Poller) Wake() error {
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}
