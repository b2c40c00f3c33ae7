package main

import (
	"errors"
	"os"
	"testing"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"

	"github.com/sluicenet/sluice/benchmarks/internal/churn/churntest"
)

// stopAtBoot is an engine that stops as soon as it starts.
type stopAtBoot struct{ sluice.BuiltinEventEngine }

func (stopAtBoot) OnBoot(sluice.Engine) sluice.Action { return sluice.Shutdown }

// skipWithout skips a test of poller kind where this kernel lacks it,
// except on CI, whose kernel has every kind.
func skipWithout(t *testing.T, kind poller.Kind) {
	err := sluice.Run(stopAtBoot{}, "", sluice.WithPoller(kind))
	if errors.Is(err, sluice.ErrPollerUnsupported) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
}

func TestDialer(t *testing.T) {
	for _, kind := range []poller.Kind{poller.Epoll, poller.IOUring} {
		t.Run(kind.String(), func(t *testing.T) {
			skipWithout(t, kind)
			churntest.Check(t, &dialer{kind: kind})
		})
	}
}

func TestDialerVariants(t *testing.T) {
	t.Run("loop-dial", func(t *testing.T) { churntest.Check(t, &dialer{loopDial: true}) })
	t.Run("linger=false", func(t *testing.T) { churntest.Check(t, &dialer{noLinger: true}) })
}

func TestDialerCountsMismatches(t *testing.T) {
	churntest.CheckMismatch(t, &dialer{kind: poller.Epoll})
}
