package main

import (
	"testing"

	"github.com/sluicenet/sluice/benchmarks/internal/churn/churntest"
)

func TestDialer(t *testing.T) {
	churntest.Check(t, new(dialer))
}

func TestDialerCountsMismatches(t *testing.T) {
	churntest.CheckMismatch(t, new(dialer))
}
