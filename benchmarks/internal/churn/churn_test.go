package churn_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicenet/sluice/benchmarks/internal/churn"
	"github.com/sluicenet/sluice/benchmarks/internal/churn/churntest"
)

// blocking is the simplest Dialer: a goroutine per dial in flight.
type blocking struct {
	wg sync.WaitGroup
}

func (b *blocking) Start(cfg churn.Config, t *churn.Tally) error {
	for i := range cfg.Conns {
		b.wg.Go(func() {
			msg, echo := make([]byte, cfg.Size), make([]byte, cfg.Size)
			churn.Fill(msg, i)
			for n := i; !t.Stopping(); n += cfg.Conns {
				c, err := net.Dial("tcp", cfg.Addrs[n%len(cfg.Addrs)])
				if err != nil {
					t.DialFailed()
					continue
				}
				churn.Stamp(msg, uint64(n))
				c.Write(msg)
				if _, err := io.ReadFull(c, echo); err != nil {
					t.Closed()
				} else if !bytes.Equal(msg, echo) {
					t.Mismatch()
				} else {
					t.Done()
				}
				c.Close()
			}
		})
	}
	return nil
}

func (b *blocking) Stop(context.Context) error {
	b.wg.Wait()
	return nil
}

func TestRun(t *testing.T) {
	churntest.Check(t, new(blocking))
}

func TestRunCountsMismatches(t *testing.T) {
	churntest.CheckMismatch(t, new(blocking))
}

func TestStamp(t *testing.T) {
	a, b := make([]byte, 16), make([]byte, 16)
	churn.Fill(a, 1)
	churn.Fill(b, 2)
	assert.NotEqual(t, a, b, "slots differ")
	churn.Fill(b, 1)
	churn.Stamp(b, 7)
	assert.NotEqual(t, a, b, "dials differ")
	assert.Equal(t, a[8:], b[8:], "the stamp takes the first 8 bytes")
}
