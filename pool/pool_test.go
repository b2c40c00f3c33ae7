package pool_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/pool"
)

const deadline = 5 * time.Second

// records is a slog.Handler that sends every record down the channel.
type records chan slog.Record

func (h records) Enabled(context.Context, slog.Level) bool { return true }

func (h records) Handle(_ context.Context, r slog.Record) error {
	h <- r.Clone()
	return nil
}

func (h records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h records) WithGroup(string) slog.Handler      { return h }

// newPool returns a pool that is released when the test ends.
func newPool(t *testing.T, opts ...pool.Option) *pool.Pool {
	t.Helper()
	p, err := pool.New(opts...)
	require.NoError(t, err)
	t.Cleanup(p.Release)
	return p
}

// runs reports whether p runs a task now.
func runs(t *testing.T, p *pool.Pool) bool {
	done := make(chan struct{})
	if p.Submit(func() { close(done) }) != nil {
		return false
	}
	select {
	case <-done:
		return true
	case <-time.After(deadline):
		t.Fatal("a submitted task never ran")
		return false
	}
}

func TestDefaults(t *testing.T) {
	p := newPool(t)
	assert.Equal(t, pool.DefaultSizePerCPU*runtime.GOMAXPROCS(0), p.Cap())
	assert.True(t, runs(t, p))
}

func TestInvalidSize(t *testing.T) {
	for _, n := range []int{0, -1} {
		_, err := pool.New(pool.WithSize(n))
		assert.ErrorIs(t, err, pool.ErrInvalidSize)
	}
}

func TestOverload(t *testing.T) {
	p := newPool(t, pool.WithSize(1))
	started, unblock := make(chan struct{}), make(chan struct{})
	require.NoError(t, p.Submit(func() {
		close(started)
		<-unblock
	}))
	<-started

	err := p.Submit(func() { t.Error("ran in an overloaded pool") })
	require.ErrorIs(t, err, pool.ErrPoolOverload)

	close(unblock)
	require.Eventually(t, func() bool { return runs(t, p) }, deadline, time.Millisecond)
}

func TestPanicRecovered(t *testing.T) {
	logged := make(records, 1)
	p := newPool(t, pool.WithSize(1), pool.WithLogger(slog.New(logged)))
	require.NoError(t, p.Submit(func() { panic("boom") }))

	var rec slog.Record
	select {
	case rec = <-logged:
	case <-time.After(deadline):
		t.Fatal("the panic was not logged")
	}
	attrs := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	assert.Equal(t, slog.LevelError, rec.Level)
	assert.Equal(t, "boom", attrs["panic"])
	assert.True(t, strings.Contains(attrs["stack"], "TestPanicRecovered"), "the stack shows where it panicked:\n%s", attrs["stack"])

	require.Eventually(t, func() bool { return runs(t, p) }, deadline, time.Millisecond)
}

func TestReleaseTimeout(t *testing.T) {
	p, err := pool.New()
	require.NoError(t, err)
	unblock := make(chan struct{})
	require.NoError(t, p.Submit(func() { <-unblock }))

	assert.ErrorIs(t, p.ReleaseTimeout(time.Millisecond), pool.ErrTimeout)
	assert.ErrorIs(t, p.Submit(func() {}), pool.ErrPoolClosed)
	close(unblock)
}

func TestReleaseTimeoutWaits(t *testing.T) {
	p, err := pool.New()
	require.NoError(t, err)
	unblock := make(chan struct{})
	require.NoError(t, p.Submit(func() { <-unblock }))

	released := make(chan error, 1)
	go func() { released <- p.ReleaseTimeout(deadline) }()
	require.Eventually(t, func() bool { return p.Submit(func() {}) == pool.ErrPoolClosed }, deadline, time.Millisecond)
	select {
	case <-released:
		t.Fatal("ReleaseTimeout returned while a task was running")
	default:
	}

	close(unblock)
	select {
	case err := <-released:
		require.NoError(t, err)
	case <-time.After(deadline):
		t.Fatal("ReleaseTimeout did not return once the task finished")
	}
}
