package pool_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/internal/enginetest"
	"github.com/sluicenet/sluice/pool"
)

// Answers of offloader.
var (
	answerDone     = []byte("d")
	answerOverload = []byte("o")
)

// offloader hands each 't' it reads to the pool as a task that calls work
// and then answers 'd' with AsyncWrite; when the pool is overloaded it
// answers 'o' at once. Every other byte it echoes from the loop.
type offloader struct {
	sluice.BuiltinEventEngine
	pool *pool.Pool
	work func()
}

func (h *offloader) OnTraffic(c sluice.Conn) sluice.Action {
	in, _ := c.Next(-1)
	for i, b := range in {
		if b != 't' {
			_, _ = c.Write(in[i : i+1])
			continue
		}
		err := h.pool.Submit(func() {
			h.work()
			_ = c.AsyncWrite(answerDone, nil)
		})
		switch {
		case errors.Is(err, pool.ErrPoolOverload):
			_, _ = c.Write(answerOverload)
		case err != nil:
			return sluice.Close
		}
	}
	return sluice.None
}

// serveOne runs h on an engine with one loop and returns where to dial.
func serveOne(t *testing.T, h sluice.EventHandler) string {
	_, addr := enginetest.Serve(t, h, sluice.WithNumEventLoop(1))
	return addr
}

// read reads n bytes from c.
func read(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	require.NoError(t, err)
	return string(b)
}

// TestLoopResponsiveWhileTasksBlock checks that an event loop whose
// handler has handed 1,000 blocking tasks to the pool goes on serving
// another connection at once, while the tasks block and while they all
// answer together.
func TestLoopResponsiveWhileTasksBlock(t *testing.T) {
	const (
		tasks    = 1000
		blocking = 100 * time.Millisecond
		// A generous bound, for -race on a shared 2-core machine: a loop
		// that waited on a task would take blocking.
		bound = 50 * time.Millisecond
	)
	p := newPool(t, pool.WithSize(tasks))
	var finished atomic.Int64
	addr := serveOne(t, &offloader{pool: p, work: func() {
		time.Sleep(blocking)
		finished.Add(1)
	}})
	busy, idle := enginetest.Dial(t, addr), enginetest.Dial(t, addr)

	_, err := busy.Write(bytes.Repeat([]byte("t"), tasks))
	require.NoError(t, err)
	answers := make(chan string, 1)
	go func() {
		b := make([]byte, tasks)
		_, err := io.ReadFull(busy, b)
		assert.NoError(t, err)
		answers <- string(b)
	}()
	// Submitting 1,000 tasks holds the loop for as long as starting 1,000
	// goroutines takes; what is measured is what comes after.
	require.Eventually(t, func() bool { return p.Running() == tasks }, deadline, time.Millisecond,
		"every task is running")

	// Round trips while every task blocks, then while they finish and
	// their answers come back through the loop.
	var rounds [2]int
	var worst [2]time.Duration
	for len(answers) == 0 {
		start := time.Now()
		_, err := idle.Write([]byte("e"))
		require.NoError(t, err)
		require.Equal(t, "e", read(t, idle, 1))
		phase := min(finished.Load(), 1)
		rounds[phase]++
		worst[phase] = max(worst[phase], time.Since(start))
	}
	assert.Equal(t, string(bytes.Repeat(answerDone, tasks)), <-answers, "every task answered, none shed")
	t.Logf("worst echo round trip while %d tasks blocked: %v of %d; while they answered: %v of %d",
		tasks, worst[0], rounds[0], worst[1], rounds[1])
	assert.GreaterOrEqual(t, rounds[0], 10, "the echoes overlapped the blocking tasks")
	assert.Less(t, worst[0], bound, "while the tasks blocked")
	assert.Less(t, worst[1], bound, "while the tasks answered")
}

// TestOverloadAnsweredFromLoop checks that Submit to a full pool fails at
// once with ErrPoolOverload, so the loop answers instead of blocking.
func TestOverloadAnsweredFromLoop(t *testing.T) {
	p := newPool(t, pool.WithSize(1))
	unblock := make(chan struct{})
	c := enginetest.Dial(t, serveOne(t, &offloader{pool: p, work: func() { <-unblock }}))

	_, err := c.Write([]byte("tte"))
	require.NoError(t, err)
	assert.Equal(t, "oe", read(t, c, 2), "the second task is refused while the first blocks")
	close(unblock)
	assert.Equal(t, "d", read(t, c, 1), "the first task answers once unblocked")
}
