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
// Up to d of 1ms, a gathering loop holds its waits as WithHeldWaits
// describes, whatever that says: where every P is a loop's (GOMAXPROCS
// equal to the loops), the runtime would otherwise take the P back in
// nearly every wait and wake another thread to hold it, spending more
// than gathering saves.
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

// WithHeldWaits has each loop keep its P (the Go scheduler's) through its
// waits in the kernel, up to 1ms at a time, where no P is spare
// (GOMAXPROCS no more than the loops) and the loop runs on epoll or
// io_uring. There the runtime's sysmon otherwise takes the P back from a
// loop blocked in a wait and, once it has, looks every 20µs, taking it
// back from nearly every wait and waking another thread to hold it, which
// the loop then takes back. A held wait is a system call the runtime is
// not told of. Measured on echo, UDP and HTTP loads with GOMAXPROCS equal
// to the loops, it did not lower the CPU per request (BENCHMARKS.md, "Held
// waits"): measure your own load before turning it on.
//
// Before each held wait the loop lets any goroutine that is runnable run
// (a pool handler or a goroutine its callbacks woke), so those run before
// it waits, and their tasks (AsyncWrite, Execute) cost no wake-up. The
// price is paid by goroutines that need a P while a loop holds one: those
// a Go timer or Go's own network poller wakes (a net.Conn, an HTTP client
// called from a handler) wait for the hold to end, up to 1ms, and, while
// the loop is kept busy, for the runtime to poll the network, up to 10ms.
// Measured with GOMAXPROCS 1, a client on a net.Conn in the same process
// saw its round trips take 1.7ms rather than 0.1ms. So it is off by
// default: turn it on for processes whose loops do their own network work.
// WithGatherWait's loops hold their waits (up to a gathering time of 1ms)
// whatever it says.
func WithHeldWaits(held bool) Option {
	return func(o *options) { o.heldWaits = held }
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
