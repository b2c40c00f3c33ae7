//go:build linux

package sluice

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/socket"
)

// unreadBytes returns how many bytes c's peer has sent that the handler
// has not been offered: those the kernel holds in c's socket, and those
// the engine holds for c (on io_uring, a receive may bring some before a
// pause takes effect). It asks on c's loop.
func unreadBytes(t testing.TB, c Conn) (kernel, engine int) {
	t.Helper()
	needsKernelSockets(t, "asks the kernel how many bytes wait in the socket")
	var err error
	onConnLoop(t, c, func() {
		kernel, err = unix.IoctlGetInt(c.Fd(), unix.SIOCINQ)
		engine = c.InboundBuffered()
	})
	require.NoError(t, err)
	return kernel, engine
}

// outbound returns c's unsent output, asking on c's loop.
func outbound(t testing.TB, c Conn) int {
	t.Helper()
	var n int
	onConnLoop(t, c, func() { n = c.OutboundBuffered() })
	return n
}

// readBuffer is the size of a loop's read buffer, WithReadBufferCap's
// default: what one read takes.
const readBuffer = 64 << 10

// pausedFor is how long a paused connection must stay unread.
const pausedFor = 100 * time.Millisecond

// stream is a handler's record of the bytes OnTraffic is offered: how
// many, in how many calls, and whether they came in the order sent.
type stream struct {
	want  []byte
	calls atomic.Int64
	got   atomic.Int64
	wrong atomic.Int64 // 1 + the offset of the first byte out of order; zero: none
}

// take consumes what c holds and checks it against what was sent.
func (s *stream) take(c Conn) {
	s.calls.Add(1)
	b, _ := c.Next(-1)
	off := int(s.got.Add(int64(len(b)))) - len(b)
	if s.want != nil && s.wrong.Load() == 0 {
		if off+len(b) > len(s.want) || !bytes.Equal(b, s.want[off:off+len(b)]) {
			s.wrong.Store(int64(off + 1))
		}
	}
}

// A connection paused in OnOpen is not read: OnTraffic never runs, what
// the client sends waits in the kernel, which stops the client once its
// buffers fill, and the engine holds at most a read buffer or two of it.
// Resumed, every byte arrives, in order.
func TestPauseRead(t *testing.T) {
	payload := randomBytes(rand.New(rand.NewPCG(14, 15)), 4<<20)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		s := &stream{want: payload}
		var pauseErr atomic.Value
		h.onOpen = func(c Conn) { pauseErr.Store(errBox{c.PauseRead()}) }
		h.traffic = func(c Conn) Action { s.take(c); return None }
		// Buffers of fixed sizes, which the kernel does not grow, hold a
		// few hundred KiB between them: far from all of the payload.
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithSocketRecvBuffer(64<<10))
		c := dial(t, addr)
		require.NoError(t, c.(*net.TCPConn).SetWriteBuffer(64<<10))
		id := h.next(t)
		require.NoError(t, pauseErr.Load().(errBox).err)
		sc := h.conn(id)
		sent := make(chan error, 1)
		go func() {
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, err := c.Write(payload)
			sent <- err
		}()

		waitFor(t, 10*time.Second, func() bool {
			k, e := unreadBytes(t, sc)
			return k+e >= 32<<10
		}, func() string {
			return fmt.Sprintf("the server holds too little unread; OnTraffic ran %d times", s.calls.Load())
		})
		require.True(t, holdsFor(pausedFor, func() bool { return s.calls.Load() == 0 }), "OnTraffic ran while paused")
		_, held := unreadBytes(t, sc)
		assert.LessOrEqual(t, held, 2*readBuffer, "the engine read ahead of a paused connection")
		select {
		case err := <-sent:
			t.Fatalf("the client sent all %d bytes to a paused connection: %v", len(payload), err)
		default:
		}

		var resumeErr error
		onConnLoop(t, sc, func() { resumeErr = sc.ResumeRead() })
		require.NoError(t, resumeErr)
		require.NoError(t, <-sent)
		waitFor(t, 10*time.Second, func() bool { return s.got.Load() == int64(len(payload)) },
			func() string { return fmt.Sprintf("%d of %d bytes arrived", s.got.Load(), len(payload)) })
		require.Zero(t, s.wrong.Load(), "a byte out of order (1 + its offset)")
		c.Close()
		return outcome{Delivered: []int{int(s.got.Load())}, Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
	})
}

// Bytes a handler leaves unread when it pauses are offered again once it
// resumes, though the client sends nothing more: the engine, not the
// socket, holds them, and no readiness of the socket would bring them.
func TestResumeReadOffersUnreadBytes(t *testing.T) {
	msg := randomBytes(rand.New(rand.NewPCG(28, 29)), 10<<10)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		s := &stream{want: msg}
		var whole atomic.Int64 // calls that found the whole message buffered
		h.traffic = func(c Conn) Action {
			if c.InboundBuffered() < len(msg) {
				return None // wait for the whole message
			}
			if whole.Add(1) == 1 {
				c.PauseRead() // and leave it
				return None
			}
			s.take(c)
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1))
		c := dial(t, addr)
		id := h.next(t)
		sc := h.conn(id)
		_, err := c.Write(msg)
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { return whole.Load() > 0 },
			func() string { return "the message was not offered" })
		require.True(t, holdsFor(pausedFor, func() bool { return whole.Load() == 1 }), "offered again while paused")

		var held int
		onConnLoop(t, sc, func() { held = sc.InboundBuffered(); sc.ResumeRead() })
		assert.Equal(t, len(msg), held, "bytes kept while paused")
		waitFor(t, 5*time.Second, func() bool { return s.got.Load() == int64(len(msg)) },
			func() string {
				return fmt.Sprintf("offered whole %d times; %d bytes taken", whole.Load(), s.got.Load())
			})
		assert.Zero(t, s.wrong.Load(), "a byte out of order (1 + its offset)")
		c.Close()
		closed := h.closedErrs(t, id)
		assert.EqualValues(t, 2, whole.Load(), "calls that found the whole message")
		return outcome{Delivered: []int{int(s.got.Load())}, Closed: closed, Stats: closedStats(t, eng)}
	})
}

// A handler that takes part of what is buffered and pauses is not called
// again until it resumes, though the engine calls a handler that leaves
// bytes unread again while it consumes some and is still read: each
// ResumeRead brings exactly one call, offering what is left, in order, and
// so does a Wake, which leaves the connection paused.
func TestPauseReadInOnTrafficStopsTheCalls(t *testing.T) {
	const total, take = 10_000, 100
	msg := randomBytes(rand.New(rand.NewPCG(30, 31)), total)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		s := &stream{want: msg}
		var failed atomic.Int64 // Next or PauseRead calls that failed
		h.traffic = func(c Conn) Action {
			if s.calls.Load() == 0 && c.InboundBuffered() < total {
				return None // the first call that counts is offered all of it
			}
			s.calls.Add(1)
			b, err := c.Next(take)
			if err != nil || c.PauseRead() != nil {
				failed.Add(1)
			}
			off := int(s.got.Add(int64(len(b)))) - len(b)
			if !bytes.Equal(b, msg[off:off+len(b)]) && s.wrong.Load() == 0 {
				s.wrong.Store(int64(off + 1))
			}
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1))
		c := dial(t, addr)
		id := h.next(t)
		sc := h.conn(id)
		_, err := c.Write(msg)
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { return s.calls.Load() > 0 },
			func() string { return "the bytes were not offered" })
		require.True(t, holdsFor(pausedFor, func() bool { return s.calls.Load() == 1 }),
			"called %d times after pausing in the first call", s.calls.Load())

		for calls := int64(1); calls < total/take; calls++ {
			var held int
			var before int64
			onConnLoop(t, sc, func() {
				held, before = sc.InboundBuffered(), s.calls.Load()
				if calls == total/take/2 {
					// Wake asks for a call, paused or not, and leaves the
					// connection paused.
					sc.Wake(nil)
				} else if sc.ResumeRead() != nil {
					failed.Add(1)
				}
			})
			require.Equal(t, calls, before, "calls before ResumeRead")
			require.Equal(t, total-int(calls)*take, held, "bytes held while paused")
			waitFor(t, 5*time.Second, func() bool { return s.calls.Load() > calls },
				func() string { return fmt.Sprintf("not called again after ResumeRead %d", calls) })
		}
		assert.EqualValues(t, total, s.got.Load(), "bytes offered")
		assert.Zero(t, s.wrong.Load(), "a byte out of order (1 + its offset)")
		assert.Zero(t, failed.Load(), "Next or PauseRead failed")
		c.Close()
		onConnLoop(t, sc, func() { sc.ResumeRead() }) // to read the end of the stream
		closed := h.closedErrs(t, id)
		assert.EqualValues(t, total/take, s.calls.Load(), "calls")
		return outcome{Delivered: []int{int(s.got.Load())}, Closed: closed, Stats: closedStats(t, eng)}
	})
}

// One connection's callback pauses and resumes another connection of the
// same loop, as a relay pauses the side that feeds a full one.
func TestPauseReadOfAnotherConnection(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		var conns []Conn // the loop's, in the order they opened; on the loop only
		var failed atomic.Int64
		b := &stream{}
		h.onOpen = func(c Conn) { conns = append(conns, c) }
		h.traffic = func(c Conn) Action {
			if c != conns[0] {
				b.take(c)
				return None
			}
			var err error
			switch cmd, _ := c.Next(-1); string(cmd) {
			case "pause":
				err = conns[1].PauseRead()
			case "resume":
				err = conns[1].ResumeRead()
			}
			if err != nil {
				failed.Add(1)
			}
			c.Write([]byte("ok"))
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1))
		ca := dial(t, addr)
		aID := h.next(t)
		cb := dial(t, addr)
		bID := h.next(t)
		send := func(cmd string) {
			require.NoError(t, echoOnceAs(ca, []byte(cmd), []byte("ok")))
		}

		_, err := cb.Write([]byte("read"))
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { return b.got.Load() == 4 },
			func() string { return "B was not read before the pause" })
		send("pause")
		_, err = cb.Write(make([]byte, 1000))
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { k, e := unreadBytes(t, h.conn(bID)); return k+e == 1000 },
			func() string { return "B's bytes did not arrive" })
		require.True(t, holdsFor(pausedFor, func() bool { return b.got.Load() == 4 }), "B was read while paused")
		send("resume")
		waitFor(t, 5*time.Second, func() bool { return b.got.Load() == 1004 },
			func() string { return fmt.Sprintf("B got %d of 1004 bytes once resumed", b.got.Load()) })
		assert.Zero(t, failed.Load(), "PauseRead or ResumeRead failed")
		ca.Close()
		cb.Close()
		return outcome{Delivered: []int{int(b.got.Load())}, Closed: h.closedErrs(t, aID, bID), Stats: closedStats(t, eng)}
	})
}

// echoOnceAs sends msg and checks that want comes back.
func echoOnceAs(c net.Conn, msg, want []byte) error {
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(want))
	for n := 0; n < len(got); {
		m, err := c.Read(got[n:])
		if err != nil {
			return err
		}
		n += m
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

// The handler's pause and the engine's own, for output the client does not
// read, compose: the connection is read again only once both let go,
// whichever lets go first.
func TestPauseReadComposesWithBackpressure(t *testing.T) {
	const (
		mark  = 64 << 10
		reply = 1 << 20
		more  = 1000
	)
	for _, first := range []string{"handler", "engine"} {
		t.Run(first+" lets go first", func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				// Past the mark the engine pauses, and so does the handler.
				m := serveOverMark(t, p, mark, reply, true)
				h, s, eng, id, c, sc := m.h, m.s, m.eng, m.id, m.client, m.server
				_, err := c.Write(make([]byte, more))
				require.NoError(t, err)
				waitFor(t, 5*time.Second, func() bool { k, e := unreadBytes(t, sc); return k+e == more },
					func() string { return "the bytes sent while paused did not arrive" })

				readReply := func() {
					c.SetReadDeadline(time.Now().Add(10 * time.Second))
					got, err := readN(c, reply)
					require.NoError(t, err, "after %d of %d bytes", got, reply)
				}
				if first == "handler" {
					var resumeErr error
					onConnLoop(t, sc, func() { resumeErr = sc.ResumeRead() })
					require.NoError(t, resumeErr)
					assert.Greater(t, outbound(t, sc), mark/2, "the output drained: the engine no longer holds it")
					require.True(t, holdsFor(pausedFor, func() bool { return s.calls.Load() == 1 }),
						"read again while the engine still held it for its output")
					readReply()
				} else {
					readReply()
					waitFor(t, 5*time.Second, func() bool { return outbound(t, sc) == 0 },
						func() string { return "the output did not drain" })
					require.True(t, holdsFor(pausedFor, func() bool { return s.calls.Load() == 1 }),
						"read again while the handler still held it")
					var resumeErr error
					onConnLoop(t, sc, func() { resumeErr = sc.ResumeRead() })
					require.NoError(t, resumeErr)
				}
				waitFor(t, 5*time.Second, func() bool { return s.got.Load() == 1+more },
					func() string { return fmt.Sprintf("%d of %d bytes once both let go", s.got.Load(), 1+more) })
				c.Close()
				return outcome{Delivered: []int{int(s.got.Load())}, Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
			})
		})
	}
}

// overMark is a connection whose handler answered the client's first
// byte, "B", with more output than the high-water mark, which the client
// has yet to read.
type overMark struct {
	h      *lifetimes
	s      *stream // what the handler was offered
	eng    Engine
	id     uint64
	client *net.TCPConn
	server Conn
}

// serveOverMark serves, on one loop with mark as both the high-water
// and the backpressure mark, a handler that answers a first byte "B" with
// reply bytes, and pauses reading too when pause is true; it has a client
// with a small window send "B", and waits for the output to pass mark.
func serveOverMark(t *testing.T, p Option, mark, reply int, pause bool, opts ...Option) *overMark {
	t.Helper()
	m := &overMark{h: newLifetimes(), s: &stream{}}
	m.h.traffic = func(c Conn) Action {
		if b, _ := c.Peek(-1); m.s.calls.Load() == 0 && string(b) == "B" {
			c.Write(make([]byte, reply))
			if pause {
				c.PauseRead()
			}
		}
		m.s.take(c)
		return None
	}
	opts = append([]Option{p, WithNumEventLoop(1), WithWriteBufferCap(mark), WithBackpressureMark(mark),
		WithSocketSendBuffer(32 << 10)}, opts...)
	eng, addr := serve(t, m.h, opts...)
	m.eng, m.client = eng, dialSmall(t, addr)
	m.id = m.h.next(t)
	m.server = m.h.conn(m.id)
	_, err := m.client.Write([]byte("B"))
	require.NoError(t, err)
	waitFor(t, 5*time.Second, func() bool { return m.s.got.Load() == 1 },
		func() string { return "the request was not read" })
	waitForOutput(t, m.server, mark)
	return m
}

// readN reads exactly n bytes from r and returns how many it read.
func readN(r io.Reader, n int) (int, error) {
	buf := make([]byte, 64<<10)
	got := 0
	for got < n {
		m, err := r.Read(buf[:min(len(buf), n-got)])
		got += m
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// waitForOutput waits for c's unsent output to pass mark. On io_uring a
// callback's output counts as sent until its send comes back short, in
// the loop's next turn, and only then is the rest queued.
func waitForOutput(t testing.TB, c Conn, mark int) {
	t.Helper()
	var n int
	waitFor(t, 5*time.Second, func() bool { n = outbound(t, c); return n > mark },
		func() string { return fmt.Sprintf("the output, %d bytes, is not past the mark, %d", n, mark) })
}

// tcpState returns the TCP state of c's socket, asking on its loop.
func tcpState(t testing.TB, c Conn) uint8 {
	t.Helper()
	var info *unix.TCPInfo
	var err error
	onConnLoop(t, c, func() { info, err = unix.GetsockoptTCPInfo(c.Fd(), unix.IPPROTO_TCP, unix.TCP_INFO) })
	require.NoError(t, err)
	return info.State
}

// A client that sends and then finishes while its connection is paused is
// acted on only once the handler resumes: the connection stays open, and
// on ResumeRead its bytes are offered and then it closes cleanly. The
// handler pauses before anything arrives, or on the client's bytes with
// the client's FIN right behind them, which a receive on io_uring may
// bring before the pause takes effect.
func TestEndOfStreamWhileReadPaused(t *testing.T) {
	msg := randomBytes(rand.New(rand.NewPCG(16, 17)), 10<<10)
	tests := []struct {
		name       string
		onTraffic  bool // pause in OnTraffic, once all of msg is in, rather than in OnOpen
		closeWrite bool // the client shuts down its write side rather than closing
	}{
		{"paused in OnOpen, client closes", false, false},
		{"paused in OnOpen, client shuts down writing", false, true},
		{"paused with the FIN in flight", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newLifetimes()
				s := &stream{want: msg}
				sent := make(chan struct{})
				h.onOpen = func(c Conn) {
					if !tt.onTraffic {
						c.PauseRead()
						return
					}
					// The first receive then finds the bytes and the FIN.
					<-sent
				}
				h.traffic = func(c Conn) Action {
					s.take(c)
					if tt.onTraffic && s.got.Load() == int64(len(msg)) {
						c.PauseRead()
					}
					return None
				}
				eng, addr := serve(t, h, p, WithNumEventLoop(1))
				// Released before the engine stops, should the test fail
				// before it releases OnOpen itself.
				var once sync.Once
				release := func() { once.Do(func() { close(sent) }) }
				t.Cleanup(release)
				c := dial(t, addr).(*net.TCPConn)
				var id uint64
				if !tt.onTraffic {
					id = h.next(t) // paused before the client sends
				}
				_, err := c.Write(msg)
				require.NoError(t, err)
				if tt.closeWrite {
					require.NoError(t, c.CloseWrite())
				} else {
					require.NoError(t, c.Close())
				}
				release()
				if tt.onTraffic {
					id = h.next(t)
				}
				sc := h.conn(id)
				if !stdBackend { // whose Fd has no TCP state to ask
					waitFor(t, 5*time.Second, func() bool { return tcpState(t, sc) == unix.BPF_TCP_CLOSE_WAIT },
						func() string { return "the client's FIN did not arrive" })
				}
				if tt.onTraffic {
					// The FIN may reach the socket before the loop has
					// handled the bytes before it, and paused.
					waitFor(t, 5*time.Second, func() bool { return s.got.Load() == int64(len(msg)) },
						func() string { return fmt.Sprintf("%d of %d bytes offered", s.got.Load(), len(msg)) })
				}
				calls := s.calls.Load()
				isOpen := func() bool { _, closed := h.closing(id); return !closed }
				require.True(t, holdsFor(pausedFor, func() bool { return s.calls.Load() == calls && isOpen() }),
					"while paused: OnTraffic ran %d times, the connection is open: %v", s.calls.Load()-calls, isOpen())
				if !tt.onTraffic {
					assert.Zero(t, calls, "OnTraffic ran while paused")
				}

				onConnLoop(t, sc, func() { sc.ResumeRead() })
				closed := h.closedErrs(t, id)
				assert.Equal(t, []string{"nil"}, closed)
				assert.EqualValues(t, len(msg), s.got.Load(), "bytes offered before the close")
				assert.Zero(t, s.wrong.Load(), "a byte out of order (1 + its offset)")
				return outcome{Delivered: []int{int(s.got.Load())}, Closed: closed, Stats: closedStats(t, eng)}
			})
		})
	}
}

// drainer is a handler that hears OnDrain.
type drainer struct {
	*lifetimes
	drain func(c Conn) Action
}

func (h *drainer) OnDrain(c Conn) Action { return h.drain(c) }

// OnDrain tells a handler that writes past the high-water mark when its
// output has fallen to half the mark, so that it can produce more then: it
// runs with at most half the mark unsent, once each time the output passed
// the mark, and never for a connection whose output stayed under it.
func TestOnDrain(t *testing.T) {
	const (
		mark  = 64 << 10
		total = 1 << 20
	)
	payload := randomBytes(rand.New(rand.NewPCG(18, 19)), total)
	tests := []struct {
		name string
		// produce writes to c, which has been sent the first sent bytes of
		// payload, and returns how many it has been sent now.
		produce func(c Conn, sent int) int
		drains  int // OnDrain calls for the connection, or, if negative, at least -drains
	}{
		{"one write", func(c Conn, sent int) int {
			if sent == 0 {
				c.Write(payload)
			}
			return total
		}, 1},
		// A quarter is more than the socket and the client take at once,
		// so each passes the mark and drains once; the last OnDrain finds
		// nothing more to write.
		{"a quarter on each drain", func(c Conn, sent int) int {
			if sent < total {
				c.Write(payload[sent : sent+total/4])
				sent += total / 4
			}
			return sent
		}, 4},
		// Writes of 16 KiB until OutboundBuffered passes the mark: the
		// socket may take all of a callback's output as it returns, and
		// the handler, which saw it past the mark, waits for OnDrain.
		{"up to the mark on each drain", func(c Conn, sent int) int {
			for sent < total && c.OutboundBuffered() <= mark {
				c.Write(payload[sent : sent+16<<10])
				sent += 16 << 10
			}
			return sent
		}, -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				var mu sync.Mutex
				drains := map[uint64]int{} // by connection
				worst := 0                 // the most output unsent in OnDrain
				sent := 0                  // to the slow reader; on the loop only
				h := &drainer{lifetimes: newLifetimes()}
				h.traffic = func(c Conn) Action {
					switch b, _ := c.Next(-1); string(b) {
					case "big":
						sent = tt.produce(c, sent)
					case "small":
						c.Write(payload[:1024])
					}
					return None
				}
				h.drain = func(c Conn) Action {
					mu.Lock()
					drains[c.ID()]++
					worst = max(worst, c.OutboundBuffered())
					mu.Unlock()
					sent = tt.produce(c, sent)
					return None
				}
				eng, addr := serve(t, h, p, WithNumEventLoop(1), WithWriteBufferCap(mark), WithBackpressureMark(mark), WithSocketSendBuffer(32<<10))
				slow := dialSmall(t, addr)
				slowID := h.next(t)
				quick := dial(t, addr)
				quickID := h.next(t)

				require.NoError(t, echoOnceAs(quick, []byte("small"), payload[:1024]))
				_, err := slow.Write([]byte("big"))
				require.NoError(t, err)
				slow.SetReadDeadline(time.Now().Add(10 * time.Second))
				got := make([]byte, 0, total)
				buf := make([]byte, 16<<10)
				for len(got) < total {
					n, err := slow.Read(buf)
					require.NoError(t, err, "after %d of %d bytes", len(got), total)
					got = append(got, buf[:n]...)
					time.Sleep(200 * time.Microsecond)
				}
				require.True(t, bytes.Equal(payload, got), "differs at byte %d", firstDiff(got, payload))
				require.NoError(t, echoOnceAs(quick, []byte("small"), payload[:1024]))
				slow.Close()
				quick.Close()
				closed := h.closedErrs(t, slowID, quickID)

				mu.Lock()
				defer mu.Unlock()
				if tt.drains >= 0 {
					assert.Equal(t, tt.drains, drains[slowID], "OnDrain calls for the slow reader")
				} else {
					assert.GreaterOrEqual(t, drains[slowID], -tt.drains, "OnDrain calls for the slow reader")
				}
				assert.LessOrEqual(t, worst, mark/2, "output unsent when OnDrain ran")
				assert.Zero(t, drains[quickID], "OnDrain for a connection whose output stayed under the mark")
				return outcome{Delivered: []int{len(got)}, Closed: closed, Stats: closedStats(t, eng)}
			})
		})
	}
}

// With the engine's backpressure on, the default, a connection whose
// output is past the high-water mark is not read until it drains; with it
// off, the handler is offered what the client sends whatever its output,
// as a relay that pauses by the other side's output needs.
func TestBackpressure(t *testing.T) {
	const (
		mark  = 64 << 10
		reply = 1 << 20
		more  = 32 << 10
	)
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("on=%v", on), func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				m := serveOverMark(t, p, mark, reply, false, WithBackpressure(on))
				h, s, eng, id, c, sc := m.h, m.s, m.eng, m.id, m.client, m.server

				// The client sends more and reads nothing.
				_, err := c.Write(make([]byte, more))
				require.NoError(t, err)
				if on {
					waitFor(t, 5*time.Second, func() bool { k, e := unreadBytes(t, sc); return k+e == more },
						func() string { return "the bytes sent did not arrive" })
					require.True(t, holdsFor(pausedFor, func() bool { return s.got.Load() == 1 }),
						"read while its output was past the mark")
				} else {
					waitFor(t, 5*time.Second, func() bool { return s.got.Load() == 1+more },
						func() string { return fmt.Sprintf("%d of %d bytes offered", s.got.Load()-1, more) })
					assert.Greater(t, outbound(t, sc), mark, "the output drained: the test proves nothing")
				}

				// Once the client reads, the output drains, and all is read.
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := readN(c, reply)
				require.NoError(t, err, "after %d of %d bytes", n, reply)
				waitFor(t, 5*time.Second, func() bool { return s.got.Load() == 1+more },
					func() string { return fmt.Sprintf("%d of %d bytes offered", s.got.Load()-1, more) })
				c.Close()
				return outcome{Delivered: []int{n, int(s.got.Load())}, Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
			})
		})
	}
}

// relay forwards what its first connection, upstream, sends to its
// second, downstream, as a proxy does: it pauses upstream while
// downstream's output is past the mark, and resumes it in downstream's
// OnDrain, so that a slow downstream holds back a fast upstream rather
// than growing the server's memory.
type relay struct {
	*lifetimes
	mark       int
	up, down   Conn         // on the loop only
	pauses     atomic.Int64 // upstream paused
	peak       atomic.Int64 // downstream's most output unsent after a write
	wrongDrain atomic.Int64 // OnDrain calls for upstream, whose output is nothing
	failed     atomic.Int64 // PauseRead and ResumeRead that failed
}

func newRelay(mark int) *relay {
	h := &relay{lifetimes: newLifetimes(), mark: mark}
	h.onOpen = func(c Conn) {
		if h.up == nil {
			h.up = c
		} else {
			h.down = c
		}
	}
	h.traffic = func(c Conn) Action {
		b, _ := c.Next(-1)
		if c != h.up {
			return None
		}
		h.down.Write(b)
		n := h.down.OutboundBuffered()
		storeMax(&h.peak, n)
		if n > h.mark {
			h.pauses.Add(1)
			if c.PauseRead() != nil {
				h.failed.Add(1)
			}
		}
		return None
	}
	return h
}

func (h *relay) OnDrain(c Conn) Action {
	if c != h.down {
		h.wrongDrain.Add(1)
		return None
	}
	if h.up.ResumeRead() != nil {
		h.failed.Add(1)
	}
	return None
}

// A relay built of PauseRead, OnDrain and WithBackpressure(false) moves
// every byte, in order, from a fast upstream to a slow downstream, and
// holds no more than the mark and a read's worth for it on the way.
func TestRelayPausesUpstreamUntilDrained(t *testing.T) {
	const mark = 64 << 10
	payload := randomBytes(rand.New(rand.NewPCG(24, 25)), 4<<20)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newRelay(mark)
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithWriteBufferCap(mark), WithBackpressureMark(mark),
			WithBackpressure(false), WithSocketSendBuffer(32<<10))
		up := dial(t, addr)
		upID := h.next(t)
		down := dialSmall(t, addr)
		downID := h.next(t)
		sent := make(chan error, 1)
		go func() {
			up.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, err := up.Write(payload)
			sent <- err
		}()
		down.SetReadDeadline(time.Now().Add(30 * time.Second))
		got := make([]byte, 0, len(payload))
		buf := make([]byte, 32<<10)
		for len(got) < len(payload) {
			n, err := down.Read(buf)
			require.NoError(t, err, "after %d of %d bytes", len(got), len(payload))
			got = append(got, buf[:n]...)
			time.Sleep(100 * time.Microsecond)
		}
		require.NoError(t, <-sent)
		require.True(t, bytes.Equal(payload, got), "differs at byte %d", firstDiff(got, payload))
		up.Close()
		down.Close()
		closed := h.closedErrs(t, upID, downID)
		assert.Positive(t, h.pauses.Load(), "the slow downstream never held upstream back")
		assert.LessOrEqual(t, h.peak.Load(), int64(mark+2*readBuffer), "output held for downstream")
		assert.Zero(t, h.wrongDrain.Load(), "OnDrain for upstream")
		assert.Zero(t, h.failed.Load(), "PauseRead or ResumeRead failed")
		return outcome{Delivered: []int{len(got)}, Closed: closed, Stats: closedStats(t, eng)}
	})
}

// forwarder writes what each of two connections sends to the other, as a
// relay does, and flushes it, recording how much the other still held
// unsent right after the Flush, and any error Flush returned.
type forwarder struct {
	BuiltinEventEngine
	mu    sync.Mutex
	conns []Conn
	held  []int
	errs  []error
}

func (h *forwarder) OnOpen(c Conn) ([]byte, Action) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conns = append(h.conns, c)
	return nil, None
}

func (h *forwarder) OnTraffic(c Conn) Action {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.conns) < 2 {
		return None // leaves the bytes for when the other has opened
	}
	peer := h.conns[0]
	if peer == c {
		peer = h.conns[1]
	}
	b, _ := c.Next(-1)
	peer.Write(b)
	if err := peer.Flush(); err != nil {
		h.errs = append(h.errs, err)
	}
	// What the socket did not take: on the development backend its writer
	// holds the bytes a moment, which OutboundBuffered counts too.
	h.held = append(h.held, peer.OutboundBuffered()-socket.Unsent(peer.Fd()))
	return None
}

// Output written to one connection from another's callback goes out when
// Flush is called, not a writable event later: a relay forwards each
// message with one write, and no epoll_ctl to hear that the socket it has
// not filled can take more.
func TestFlushWritesWhatAnotherConnectionQueued(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &forwarder{}
		_, addr := serve(t, h, p, WithNumEventLoop(1))
		a := dial(t, addr)
		waitFor(t, 5*time.Second, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(h.conns) == 1 },
			func() string { return "the first client did not open" })
		b := dial(t, addr)
		waitFor(t, 5*time.Second, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(h.conns) == 2 },
			func() string { return "the second client did not open" })
		for range 3 {
			_, err := a.Write([]byte("ping"))
			require.NoError(t, err)
			got := make([]byte, 4)
			b.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.ReadFull(b, got)
			require.NoError(t, err)
			require.Equal(t, "ping", string(got))
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		assert.Empty(t, h.errs)
		assert.Equal(t, []int{0, 0, 0}, h.held, "bytes left unsent after each Flush")
		return outcome{Delivered: h.held}
	})
}

// pausedInOnOpen pauses every connection as it opens and counts the calls
// of OnTraffic.
type pausedInOnOpen struct {
	BuiltinEventEngine
	conns   chan Conn
	traffic atomic.Int64
	got     chan string
}

func (h *pausedInOnOpen) OnOpen(c Conn) ([]byte, Action) {
	c.PauseRead()
	h.conns <- c
	return nil, None
}

func (h *pausedInOnOpen) OnTraffic(c Conn) Action {
	h.traffic.Add(1)
	b, _ := c.Next(-1)
	h.got <- string(b)
	return None
}

// A connection paused in OnOpen is offered nothing until ResumeRead, also
// the bytes that came in the same read as its PROXY header.
func TestPauseInOnOpenHoldsBytesAfterTheHeader(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &pausedInOnOpen{conns: make(chan Conn, 1), got: make(chan string, 4)}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithProxyProtocol(ProxyRequired, 0))
		c := dial(t, addr)
		_, err := c.Write([]byte("PROXY TCP4 192.0.2.1 192.0.2.2 1000 2000\r\nhello"))
		require.NoError(t, err)
		var sc Conn
		select {
		case sc = <-h.conns:
		case <-time.After(5 * time.Second):
			t.Fatal("no connection opened")
		}
		var held int
		onConnLoop(t, sc, func() { held = sc.InboundBuffered() })
		assert.Zero(t, h.traffic.Load(), "OnTraffic ran while paused")
		assert.Equal(t, len("hello"), held)
		onConnLoop(t, sc, func() { sc.ResumeRead() })
		select {
		case s := <-h.got:
			assert.Equal(t, "hello", s)
		case <-time.After(5 * time.Second):
			t.Fatal("nothing offered after ResumeRead")
		}
		return outcome{Delivered: []int{held}}
	})
}

// WithMaxOutbound alone lowers the backpressure mark below it: an echo to
// a client that writes far more than the bound before it reads anything
// is paused, not refused, and every byte comes back.
func TestMaxOutboundLowersTheMark(t *testing.T) {
	const bound, sent = 256 << 10, 4 << 20
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		eng, addr := serve(t, echoOrClose{}, p, WithNumEventLoop(1), WithMaxOutbound(bound), WithSocketSendBuffer(32<<10))
		c := dialSmall(t, addr)
		payload := bytes.Repeat([]byte("0123456789abcdef"), sent/16)
		wrote := make(chan error, 1)
		go func() { _, err := c.Write(payload); wrote <- err }()
		waitFor(t, 5*time.Second, func() bool { s := eng.Stats(); return s.BackpressurePauses+s.OutboundRefused > 0 },
			func() string { return "the echo neither paused nor was refused" })
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got := make([]byte, sent)
		n, err := io.ReadFull(c, got)
		require.NoError(t, err, "after %d of %d bytes", n, sent)
		require.NoError(t, <-wrote)
		require.True(t, bytes.Equal(payload, got), "differs at byte %d", firstDiff(got, payload))
		s := eng.Stats()
		assert.Zero(t, s.OutboundRefused, "writes refused")
		assert.Positive(t, s.BackpressurePauses, "never paused")
		c.Close()
		return outcome{Delivered: []int{n}}
	})
}

// echoOrClose echoes what it reads, and closes the connection when a
// write is refused.
type echoOrClose struct{ BuiltinEventEngine }

func (echoOrClose) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	if _, err := c.Write(b); err != nil {
		return Close
	}
	return None
}

// A goroutine that saw Conn.Writable report false is owed OnDrain, also
// when the output that made it false was partly queued on the loop and
// the loop sent that before the goroutine's own AsyncWrite ran, so that
// neither the queued output nor the posted bytes alone ever passed the
// mark on the loop. A task holds the loop while the peer drains, which
// makes that order certain. The mark is larger than what the development
// backend's writer holds with the socket full, which counts as queued.
func TestWritableFalseOwesDrainAfterQueueSent(t *testing.T) {
	const (
		mark = 256 << 10
		// Queued on the loop behind a full socket: more than the kernel
		// takes as the peer's window opens after the first refusal, which
		// at 8 KiB it once took whole before the test looked.
		queued = 64 << 10
	)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		var total atomic.Int64 // what the server wrote before the post
		drained := make(chan struct{}, 1)
		h := &drainer{lifetimes: newLifetimes()}
		h.traffic = func(c Conn) Action {
			c.Next(-1)
			// Fill the socket, then queue a little more on the loop.
			chunk := make([]byte, 1<<10)
			n := 0
			for c.(*conn).out == nil && n < 64<<20 {
				c.Write(chunk)
				c.Flush()
				n += len(chunk)
			}
			c.Write(make([]byte, queued))
			total.Store(int64(n + queued))
			return None
		}
		h.drain = func(c Conn) Action {
			select {
			case drained <- struct{}{}:
			default:
			}
			return None
		}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithWriteBufferCap(mark), WithSocketSendBuffer(16<<10))
		client := dialSmall(t, addr)
		c := h.conn(h.next(t))
		_, err := client.Write([]byte("go"))
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { return total.Load() > 0 && c.OutboundQueued() > 0 },
			func() string { return "the server never queued output" })

		running, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		require.NoError(t, c.Loop().Execute(func() { close(running); <-release }))
		<-running
		// Queued on the loop, and posted: past the mark only together.
		onLoop := c.OutboundQueued()
		require.LessOrEqual(t, onLoop, mark, "queued past the mark on the loop")
		require.NoError(t, c.AsyncWrite(make([]byte, mark-onLoop+1), nil))
		require.False(t, c.Writable(), "%d bytes queued", c.OutboundQueued())
		// The peer takes what the socket holds; released, the loop sends
		// what it queued before it runs the AsyncWrite.
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadFull(client, make([]byte, total.Load()-int64(onLoop)))
		require.NoError(t, err)
		once.Do(func() { close(release) })
		go io.Copy(io.Discard, client)
		select {
		case <-drained:
		case <-time.After(5 * time.Second):
			t.Fatalf("no OnDrain after Writable reported false (%d bytes queued now)", c.OutboundQueued())
		}
		return outcome{}
	})
}

// Goroutines that post past the mark, and hear Writable say false, are
// owed OnDrain once what OutboundQueued counts is down to half the mark:
// not while writes they posted are still to be taken, though what the
// loop has queued so far is under it; once it has run and nothing more is
// written, not again; and for a connection that closes owing it, never
// after OnClose. A task holds the loop while they post, so that the loop
// finds them all posted.
func TestWritableFalseManyPosters(t *testing.T) {
	const (
		mark    = 64 << 10
		posters = 8
		chunk   = 4 << 10
		each    = 4 // chunks a poster posts: 128 KiB in all
		total   = posters * each * chunk
	)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		var drains, late, early atomic.Int64
		h := &drainer{lifetimes: newLifetimes()}
		h.drain = func(c Conn) Action {
			if _, closed := h.closing(c.ID()); closed {
				late.Add(1)
			}
			if n := c.OutboundQueued(); n > mark/2 {
				early.Add(1)
				t.Logf("OnDrain with %d bytes queued", n)
			}
			drains.Add(1)
			return None
		}
		_, addr := serve(t, h, p, WithNumEventLoop(1), WithWriteBufferCap(mark), WithSocketSendBuffer(16<<10))
		client := dialSmall(t, addr)
		c := h.conn(h.next(t))
		post := func() {
			running, release := make(chan struct{}), make(chan struct{})
			require.NoError(t, c.Loop().Execute(func() { close(running); <-release }))
			<-running
			var wg sync.WaitGroup
			for range posters {
				wg.Go(func() {
					for range each {
						assert.NoError(t, c.AsyncWrite(make([]byte, chunk), nil))
					}
				})
			}
			wg.Wait()
			assert.False(t, c.Writable(), "%d bytes queued", c.OutboundQueued())
			close(release)
		}
		for episode := range 2 {
			post()
			// The peer reads nothing yet: the output stays past the mark.
			assert.True(t, holdsFor(300*time.Millisecond, func() bool { return drains.Load() == int64(episode) }),
				"episode %d: OnDrain before the peer read (%d bytes queued)", episode, c.OutboundQueued())
			client.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := io.ReadFull(client, make([]byte, total))
			require.NoError(t, err)
			waitFor(t, 5*time.Second, func() bool { return drains.Load() > int64(episode) },
				func() string { return fmt.Sprintf("episode %d: no OnDrain", episode) })
			assert.True(t, holdsFor(300*time.Millisecond, func() bool { return drains.Load() == int64(episode+1) }),
				"episode %d: %d OnDrain calls", episode, drains.Load())
		}
		post()
		client.SetLinger(0)
		client.Close()
		h.waitClosed(t, c.ID())
		assert.True(t, holdsFor(300*time.Millisecond, func() bool { return late.Load() == 0 }), "OnDrain after OnClose")
		assert.Zero(t, early.Load(), "OnDrain calls with more than half the mark queued")
		return outcome{}
	})
}
