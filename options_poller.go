package sluice

import (
	"errors"
	"fmt"

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
