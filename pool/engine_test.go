package pool_test

import (
	"bytes"
	"errors"
	"io"
	"net"
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
// another connection while every task blocks, and while they all answer
// together. The tasks block until the test lets them go, so a loop that
// waited on one would never answer the echo in between.
func TestLoopResponsiveWhileTasksBlock(t *testing.T) {
	const (
		tasks  = 1000
		echoes = 20 // while the tasks block
	)
	p := newPool(t, pool.WithSize(tasks))
	gate := make(chan struct{})
	addr := serveOne(t, &offloader{pool: p, work: func() { <-gate }})
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
	require.Eventually(t, func() bool { return p.Running() == tasks }, deadline, time.Millisecond,
		"every task is running")

	echo := func() time.Duration {
		start := time.Now()
		idle.SetDeadline(start.Add(deadline))
		_, err := idle.Write([]byte("e"))
		require.NoError(t, err)
		require.Equal(t, "e", read(t, idle, 1), "the loop answers while the tasks block")
		return time.Since(start)
	}
	var blocked, answering time.Duration
	for range echoes {
		blocked = max(blocked, echo())
	}
	close(gate)
	for len(answers) == 0 {
		answering = max(answering, echo())
	}
	assert.Equal(t, string(bytes.Repeat(answerDone, tasks)), <-answers, "every task answered, none shed")
	t.Logf("worst echo round trip while %d tasks blocked: %v of %d; while they answered: %v",
		tasks, blocked, echoes, answering)
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

// jitter is how long a worker takes over request b: long enough, and
// different enough from one request to the next, that workers finish out
// of order.
func jitter(b byte) time.Duration { return time.Duration(b%7) * 200 * time.Microsecond }

// oneAtATime answers each byte with itself from a worker, one request of a
// connection at a time, as the package documentation's first way to keep
// replies in order has it.
type oneAtATime struct {
	sluice.BuiltinEventEngine
	pool *pool.Pool
}

func (h *oneAtATime) OnTraffic(c sluice.Conn) sluice.Action {
	if c.Context() != nil {
		return sluice.None // a request is out: the next waits unread
	}
	req, err := c.Next(1)
	if err != nil {
		return sluice.None // nothing buffered
	}
	b := req[0]
	c.SetContext(b)
	err = h.pool.Submit(func() {
		time.Sleep(jitter(b))
		_ = c.AsyncWrite([]byte{b}, func(c sluice.Conn, _ error) {
			c.SetContext(nil)
			_ = c.Wake(nil)
		})
	})
	if err != nil {
		return sluice.Close
	}
	return sluice.None
}

// numbered answers each byte with itself from a worker, every request of a
// connection at once, and puts the replies back in order on the loop, as
// the package documentation's second way has it.
type numbered struct {
	sluice.BuiltinEventEngine
	pool *pool.Pool
}

// order is a connection's count of requests and its replies held back.
type order struct {
	issued  int      // requests handed to workers
	written int      // replies written
	held    [][]byte // replies from the next to write on, nil where not done
}

func (h *numbered) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	c.SetContext(new(order))
	return nil, sluice.None
}

func (h *numbered) OnTraffic(c sluice.Conn) sluice.Action {
	o := c.Context().(*order)
	in, _ := c.Next(-1)
	for _, b := range in {
		seq := o.issued
		o.issued++
		err := h.pool.Submit(func() {
			time.Sleep(jitter(b))
			_ = c.Wake(func(c sluice.Conn, err error) {
				if err == nil {
					o.finish(c, seq, []byte{b})
				}
			})
		})
		if err != nil {
			return sluice.Close
		}
	}
	return sluice.None
}

// finish, on the loop, holds reply to request seq until the replies before
// it are written, and writes those that are next.
func (o *order) finish(c sluice.Conn, seq int, reply []byte) {
	for len(o.held) <= seq-o.written {
		o.held = append(o.held, nil)
	}
	o.held[seq-o.written] = reply
	for len(o.held) > 0 && o.held[0] != nil {
		_, _ = c.Write(o.held[0])
		o.held = o.held[1:]
		o.written++
	}
}

// TestPipelinedRepliesInOrder checks both ways the package documentation
// gives to keep the replies to a pipelining client in order, although the
// workers that answer them finish in any order.
func TestPipelinedRepliesInOrder(t *testing.T) {
	const requests = 500
	tests := []struct {
		name    string
		handler func(p *pool.Pool) sluice.EventHandler
	}{
		{"one at a time", func(p *pool.Pool) sluice.EventHandler { return &oneAtATime{pool: p} }},
		{"numbered", func(p *pool.Pool) sluice.EventHandler { return &numbered{pool: p} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := enginetest.Dial(t, serveOne(t, tc.handler(newPool(t, pool.WithSize(requests)))))
			sent := make([]byte, requests)
			for i := range sent {
				sent[i] = byte(i)
			}
			_, err := c.Write(sent)
			require.NoError(t, err)
			require.Equal(t, string(sent), read(t, c, requests))
		})
	}
}
