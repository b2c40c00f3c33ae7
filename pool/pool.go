package pool

import (
	"errors"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/panjf2000/ants/v2"
)

// DefaultSizePerCPU is how many workers a Pool has per GOMAXPROCS unless
// WithSize says otherwise. Workers mostly wait on I/O, so many more than
// the CPUs keep them busy, while a bound keeps a flood of requests from
// turning into a flood of goroutines.
const DefaultSizePerCPU = 256

// Errors returned by a Pool. Most are ants' own, so errors.Is matches
// them under either name.
var (
	// ErrPoolOverload is returned by Submit when every worker is busy.
	ErrPoolOverload = ants.ErrPoolOverload

	// ErrPoolClosed is returned by Submit after Release.
	ErrPoolClosed = ants.ErrPoolClosed

	// ErrTimeout is returned by ReleaseTimeout when workers are still
	// running at the deadline.
	ErrTimeout = ants.ErrTimeout

	// ErrInvalidSize is returned by New for a size that is not positive.
	ErrInvalidSize = errors.New("pool: size must be positive")
)

// Pool runs tasks on a bounded set of reused goroutines. A task that
// panics is recovered and logged with its stack, and the pool carries on.
// Its methods are safe for concurrent use.
type Pool struct {
	p   *ants.Pool
	log *slog.Logger
}

// Option configures a Pool.
type Option func(*options)

type options struct {
	size int
	log  *slog.Logger
}

// WithSize bounds the pool to n workers running at once.
func WithSize(n int) Option {
	return func(o *options) { o.size = n }
}

// WithLogger logs recovered panics to l instead of slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// New returns a Pool of DefaultSizePerCPU workers per GOMAXPROCS, or as
// the options say. Workers start as tasks arrive and exit after a while
// idle.
func New(opts ...Option) (*Pool, error) {
	o := options{size: DefaultSizePerCPU * runtime.GOMAXPROCS(0), log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.size <= 0 {
		return nil, ErrInvalidSize
	}
	p := &Pool{log: o.log}
	ap, err := ants.NewPool(o.size, ants.WithNonblocking(true), ants.WithPanicHandler(p.recovered))
	if err != nil {
		return nil, err
	}
	p.p = ap
	return p, nil
}

// Submit runs task on a free worker. It never blocks: with every worker
// busy it returns ErrPoolOverload.
func (p *Pool) Submit(task func()) error { return p.p.Submit(task) }

// Running returns how many workers are running tasks or waiting for one.
func (p *Pool) Running() int { return p.p.Running() }

// Cap returns the most workers the pool runs at once.
func (p *Pool) Cap() int { return p.p.Cap() }

// Release closes the pool to new tasks without waiting for running ones.
func (p *Pool) Release() { p.p.Release() }

// ReleaseTimeout closes the pool to new tasks and waits up to d for the
// running ones to finish, returning ErrTimeout if they have not.
func (p *Pool) ReleaseTimeout(d time.Duration) error { return p.p.ReleaseTimeout(d) }

// recovered logs a panic that a task raised. It runs in the worker's
// deferred recovery, before the stack unwinds, so the stack it logs shows
// where the task panicked.
func (p *Pool) recovered(v any) {
	p.log.Error("pool: task panicked", "panic", v, "stack", string(debug.Stack()))
}
