package sluice

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicenet/sluice/poller"
)

// ErrPollerUnsupported is wrapped by the error Run returns when
// WithPoller(poller.IOUring) asks for io_uring where it cannot serve: not
// Linux, a kernel too old, io_uring disabled by sysctl or refused by a
// seccomp filter. The error says which.
var ErrPollerUnsupported = errors.New("sluice: poller unsupported here")

// WithPoller chooses how the event loops wait: poller.Epoll (the default;
// kqueue on macOS and the BSDs), poller.IOUring, or poller.Auto, which
// takes io_uring where the kernel allows it and epoll otherwise, and logs
// which and why. Run fails with an error wrapping ErrPollerUnsupported
// when poller.IOUring is asked for where it cannot serve.
func WithPoller(k poller.Kind) Option {
	return func(o *options) { o.poller = k }
}

// WithGatherWait has each io_uring loop that is about to sleep for want of
// events let them gather for up to d before it handles any, so that one
// wake-up and one io_uring_enter serve several. It is for servers whose
// clients send spread out, each wait finding about one event (a Go client
// with a goroutine per connection, say): there a loop pays a wake-up and a
// system call for almost every request, and gathering trades up to d of
// latency for fewer of both. Zero, the default, turns it off.
//
// The bound is measured from when the loop begins to wait: an event that
// comes after d has passed is handled at once, so a lone request on an
// idle loop waits for nothing, and no event waits longer than d. A wait
// gathers only when the loop would sleep: one that finds an event ready
// as it begins handles it at once, as without the option, and the wait
// that follows an accept does not gather, since the new connection's
// first request may be on its way already. A wait ends early once 64
// events are in, or when the loop's next timer is due;
// a task posted while the loop gathers (AsyncWrite, Wake, Execute, a
// stop) waits with the events, at most d. A loop that has work of its own
// queued (tasks, connections to resume) does not wait at all, and output
// its callbacks wrote goes to the kernel as the wait begins, so a reply
// is never held back. d is taken in whole microseconds; below one it is
// off, above a second it is a second.
//
// Up to d of 1ms, a gathering loop keeps its P (the Go scheduler's) through
// its waits, as a running goroutine does, for up to 1ms at a time, where no
// P is spare (GOMAXPROCS no more than the loops): there the runtime would
// otherwise take the P back in nearly every wait and wake another thread
// to hold it, spending more than gathering saves. Before each such wait
// the loop lets any runnable goroutine run (a pool handler, a goroutine
// its callbacks readied), and holds no wait while one still is. What a
// hold still delays are goroutines readied while it lasts: those a Go
// timer or Go's own network poller wakes (a net.Conn in the same process)
// wait up to 1ms for the hold to end, and, while the loop stays busy, up
// to 10ms for the runtime to poll the network. A wait that brings nothing
// is followed by an ordinary one, so an idle loop sleeps.
//
// It needs Linux 6.12 (the kernel's IORING_FEAT_MIN_TIMEOUT); on older
// kernels, where the loop logs that it cannot, and on epoll, kqueue and
// the development backend it is ignored: their waits return at the first
// ready socket, and gathering there would cost a second wait, a system
// call and a wake-up more per turn, the very cost it saves on io_uring.
func WithGatherWait(d time.Duration) Option {
	return func(o *options) {
		if d < time.Microsecond {
			d = 0
		}
		o.gatherWait = min(d, time.Second)
	}
}

// choosePoller settles the options' poller on Epoll or IOUring before the
// loops start, so that each loop picks its run loop once.
func (o *options) choosePoller() error {
	switch o.poller {
	case poller.IOUring:
		if err := probeRing(); err != nil {
			return fmt.Errorf("%w: %w", ErrPollerUnsupported, err)
		}
	case poller.Auto:
		if err := probeRing(); err != nil {
			o.logger.Info("sluice: using epoll", "why", err)
			o.poller = poller.Epoll
			return nil
		}
		o.logger.Info("sluice: using io_uring")
		o.poller = poller.IOUring
	}
	return nil
}
