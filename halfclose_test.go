//go:build unix

package sluice

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onConnLoop runs fn on c's loop, as c's own callbacks run, and waits for
// it: how a test reaches the methods that are for the loop only
// (PauseRead, CloseWrite, InboundBuffered, the socket's options) from its
// own goroutine.
func onConnLoop(t testing.TB, c Conn, fn func()) {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, c.Loop().Execute(func() {
		defer close(done)
		fn()
	}))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not run the function")
	}
}

// readAllFrom reads c to the end of its stream, failing on any error.
func readAllFrom(t testing.TB, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "after %d bytes", len(got))
	return got
}

// A client that sends its request and shuts down its write side, as
// HTTP/1.0 clients and shell pipes do, still gets the whole answer, and
// then the end of the stream: the connection closes on the client's FIN
// only once its output is sent, even when that output is paused behind
// a slow reader and the FIN arrives with the request's last bytes.
func TestPeerHalfCloseGetsWholeReply(t *testing.T) {
	tests := []struct {
		name           string
		request, reply int
	}{
		{"small request, large reply", 2, 2 << 20},
		{"large request, large reply", 1 << 20, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(tt.request)))
			request, reply := randomBytes(r, tt.request), randomBytes(r, tt.reply)
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newLifetimes()
				var got atomic.Int64 // on the loop; read by the test once closed
				h.traffic = func(c Conn) Action {
					n, _ := c.Discard(-1)
					// Answered once the whole request is in.
					if got.Add(int64(n)) == int64(len(request)) {
						c.Write(reply)
					}
					return None
				}
				eng, addr := serve(t, h, p, WithNumEventLoop(1))
				c := dialSmall(t, addr)
				id := h.next(t)
				back, err := sendThenReadSlowly(c, request)
				require.NoError(t, err, "after %d of %d bytes", len(back), len(reply))
				require.Equal(t, len(reply), len(back))
				require.True(t, bytes.Equal(reply, back), "reply differs at byte %d", firstDiff(back, reply))
				closed := h.closedErrs(t, id)
				assert.Equal(t, []string{"nil"}, closed)
				assert.EqualValues(t, len(request), got.Load())
				return outcome{Delivered: []int{len(back)}, Closed: closed, Stats: closedStats(t, eng)}
			})
		})
	}
}

// writeClosed is what a handler saw of its writes after Conn.CloseWrite.
type writeClosed struct {
	closeWrite atomic.Value // CloseWrite's error, boxed so that nil can be stored
	after      atomic.Int64 // writes after CloseWrite, each of which must fail
	wrong      atomic.Int64 // of those, the ones that did not fail with ErrConnClosed
}

func (w *writeClosed) tryWrite(c Conn, p []byte) {
	w.after.Add(1)
	if n, err := c.Write(p); n != 0 || err != ErrConnClosed {
		w.wrong.Add(1)
	}
}

// Conn.CloseWrite sends the connection's end of stream and keeps reading:
// the peer reads the reply and then EOF while it goes on sending, every
// byte it sends still reaches OnTraffic, writes fail with ErrConnClosed,
// and the peer's own FIN then closes the connection cleanly. It is called
// in OnTraffic and in OnOpen, where the output of the callback goes first,
// and from Loop.Execute, outside any callback.
func TestCloseWrite(t *testing.T) {
	const more = 256 << 10 // what the peer sends after the server's FIN
	reply := []byte("bye")
	for _, where := range []string{"in OnTraffic", "in OnOpen", "from Loop.Execute"} {
		t.Run(where, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newLifetimes()
				var w writeClosed
				var got, shut atomic.Int64 // got: bytes offered; shut: set once CloseWrite was called
				// shutDown writes the reply and shuts c's write side down.
				shutDown := func(c Conn) {
					c.Write(reply)
					w.closeWrite.Store(errBox{c.CloseWrite()})
					shut.Store(1)
					w.tryWrite(c, []byte("too late"))
				}
				h.traffic = func(c Conn) Action {
					b, _ := c.Next(-1)
					total := got.Add(int64(len(b)))
					switch {
					case shut.Load() != 0:
						w.tryWrite(c, b)
					case where == "in OnTraffic" && total == 2: // the whole request
						shutDown(c)
					}
					return None
				}
				if where == "in OnOpen" {
					h.onOpen = shutDown
				}
				eng, addr := serve(t, h, p, WithNumEventLoop(1))
				c := dial(t, addr).(*net.TCPConn)
				id := h.next(t)
				_, err := c.Write([]byte("hi"))
				require.NoError(t, err)
				if where == "from Loop.Execute" {
					waitFor(t, 5*time.Second, func() bool { return got.Load() == 2 },
						func() string { return "the request was not read" })
					sc := h.conn(id)
					onConnLoop(t, sc, func() { shutDown(sc) })
				}
				assert.Equal(t, reply, readAllFrom(t, c), "the reply, then the end of the stream")
				require.NoError(t, w.closeWrite.Load().(errBox).err)

				// The server's write side is shut; its read side is not.
				payload := randomBytes(rand.New(rand.NewPCG(6, 7)), more)
				_, err = c.Write(payload)
				require.NoError(t, err)
				waitFor(t, 10*time.Second, func() bool { return got.Load() == 2+more },
					func() string { return "the server read " + strconv.Itoa(int(got.Load())) + " bytes" })
				_, closed := h.closing(id)
				assert.False(t, closed, "the connection closed before its peer finished")

				require.NoError(t, c.CloseWrite())
				cl := h.closedErrs(t, id)
				assert.Equal(t, []string{"nil"}, cl)
				assert.Positive(t, w.after.Load())
				assert.Zero(t, w.wrong.Load(), "writes after CloseWrite that did not fail with ErrConnClosed")
				return outcome{Delivered: []int{int(got.Load())}, Closed: cl, Stats: closedStats(t, eng)}
			})
		})
	}
}

// errBox holds an error, nil included, in an atomic.Value.
type errBox struct{ err error }

// CloseWrite with a megabyte queued for a slow reader sends all of it
// before the end of the stream.
func TestCloseWriteSendsQueuedOutputFirst(t *testing.T) {
	reply := randomBytes(rand.New(rand.NewPCG(8, 9)), 1<<20)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newLifetimes()
		h.traffic = func(c Conn) Action {
			c.Discard(-1)
			c.Write(reply)
			c.CloseWrite()
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithSocketSendBuffer(32<<10))
		c := dialSmall(t, addr)
		id := h.next(t)
		_, err := c.Write([]byte("go"))
		require.NoError(t, err)
		got, err := readSlowly(c, 16<<10, 200*time.Microsecond)
		require.NoError(t, err)
		require.Equal(t, len(reply), len(got))
		require.True(t, bytes.Equal(reply, got), "differs at byte %d", firstDiff(got, reply))
		c.Close()
		return outcome{Delivered: []int{len(got)}, Closed: h.closedErrs(t, id), Stats: closedStats(t, eng)}
	})
}

// halfCloser is a handler for connections in half-close mode: it counts
// what OnTraffic is offered, and answers in OnHalfClose.
type halfCloser struct {
	*lifetimes
	answer func(c Conn, got int) Action // what OnHalfClose does

	got        atomic.Int64 // bytes OnTraffic was offered
	halfCloses atomic.Int64 // OnHalfClose calls
	gotAtHalf  atomic.Int64 // got, when OnHalfClose ran
	late       atomic.Int64 // OnTraffic calls after OnHalfClose
}

func newHalfCloser(answer func(c Conn, got int) Action) *halfCloser {
	h := &halfCloser{lifetimes: newLifetimes(), answer: answer}
	h.traffic = func(c Conn) Action {
		if h.halfCloses.Load() > 0 {
			h.late.Add(1)
		}
		n, _ := c.Discard(-1)
		h.got.Add(int64(n))
		return None
	}
	return h
}

func (h *halfCloser) OnHalfClose(c Conn) Action {
	h.gotAtHalf.Store(h.got.Load())
	h.halfCloses.Add(1)
	return h.answer(c, int(h.gotAtHalf.Load()))
}

// In half-close mode a client's FIN leaves the connection open for the
// answer: OnTraffic is offered every byte the client sent, then
// OnHalfClose runs once, and what the handler writes from then on, in
// that callback or later from another goroutine, reaches the client
// before the end of the stream, however the handler ends the connection.
// The mode comes from the engine's option or from SetHalfClose in OnOpen.
func TestHalfCloseMode(t *testing.T) {
	const request = 256 << 10
	big := randomBytes(rand.New(rand.NewPCG(10, 11)), 1<<20)
	count := func(got int) []byte { return []byte(strconv.Itoa(got)) }
	tests := []struct {
		name    string
		perConn bool // SetHalfClose in OnOpen rather than WithHalfClose
		want    []byte
		answer  func(c Conn, got int) Action
	}{
		{"WithHalfClose, answer and Close action", false, count(request), func(c Conn, got int) Action {
			c.Write(count(got))
			return Close
		}},
		{"SetHalfClose, answer and Close action", true, count(request), func(c Conn, got int) Action {
			c.Write(count(got))
			return Close
		}},
		{"a megabyte, then CloseWrite", false, big, func(c Conn, got int) Action {
			c.Write(big)
			c.CloseWrite()
			return None
		}},
		{"later: AsyncWrite, then Close", true, big, func(c Conn, got int) Action {
			go func() {
				c.AsyncWrite(big, nil)
				c.Close()
			}()
			return None
		}},
		{"later: AsyncWrite, then CloseWrite in its callback", false, big, func(c Conn, got int) Action {
			go c.AsyncWrite(big, func(c Conn, err error) {
				if err == nil {
					c.CloseWrite()
				}
			})
			return None
		}},
	}
	payload := randomBytes(rand.New(rand.NewPCG(12, 13)), request)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newHalfCloser(tt.answer)
				opts := []Option{p, WithNumEventLoop(1)}
				if tt.perConn {
					h.onOpen = func(c Conn) { c.SetHalfClose(true) }
				} else {
					opts = append(opts, WithHalfClose(true))
				}
				eng, addr := serve(t, h, opts...)
				c := dialSmall(t, addr)
				id := h.next(t)
				go func() {
					c.Write(payload)
					c.CloseWrite()
				}()
				got, err := readSlowly(c, 16<<10, 100*time.Microsecond)
				require.NoError(t, err, "after %d of %d bytes", len(got), len(tt.want))
				require.True(t, bytes.Equal(tt.want, got), "got %d bytes, want %d; differs at byte %d",
					len(got), len(tt.want), firstDiff(got, tt.want))
				closed := h.closedErrs(t, id)
				assert.Equal(t, []string{"nil"}, closed)
				assert.EqualValues(t, 1, h.halfCloses.Load(), "OnHalfClose calls")
				assert.EqualValues(t, request, h.gotAtHalf.Load(), "bytes offered before OnHalfClose")
				assert.Zero(t, h.late.Load(), "OnTraffic calls after OnHalfClose")
				return outcome{Delivered: []int{len(got)}, Closed: closed, Stats: closedStats(t, eng)}
			})
		})
	}
}

// Without half-close mode the same handler never hears OnHalfClose: the
// client's FIN closes the connection once its output is sent. That is the
// engine's default, and SetHalfClose(false) restores it for a connection
// of an engine started WithHalfClose(true).
func TestHalfCloseModeOff(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
	}{
		{"by default", nil},
		{"SetHalfClose(false) overrides WithHalfClose(true)", []Option{WithHalfClose(true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newHalfCloser(func(c Conn, got int) Action { return None })
				h.onOpen = func(c Conn) {
					if tt.opts != nil {
						c.SetHalfClose(false)
					}
				}
				eng, addr := serve(t, h, append([]Option{p, WithNumEventLoop(1)}, tt.opts...)...)
				c := dial(t, addr).(*net.TCPConn)
				id := h.next(t)
				_, err := c.Write([]byte("request"))
				require.NoError(t, err)
				require.NoError(t, c.CloseWrite())
				assert.Empty(t, readAllFrom(t, c))
				closed := h.closedErrs(t, id)
				assert.Zero(t, h.halfCloses.Load())
				assert.EqualValues(t, len("request"), h.got.Load())
				return outcome{Closed: closed, Stats: closedStats(t, eng)}
			})
		})
	}
}

// Bytes the handler leaves unread are still buffered when OnHalfClose
// runs, for it to take then: a handler that answers only a whole request
// may see its end only with the client's FIN.
func TestHalfCloseKeepsUnreadBytes(t *testing.T) {
	request := randomBytes(rand.New(rand.NewPCG(20, 21)), 100<<10)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newHalfCloser(func(c Conn, got int) Action {
			b, _ := c.Next(-1)
			c.Write(b) // the whole request, echoed
			return Close
		})
		h.traffic = func(c Conn) Action { return None } // leaves it all
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithHalfClose(true))
		c := dial(t, addr).(*net.TCPConn)
		id := h.next(t)
		go func() {
			c.Write(request)
			c.CloseWrite()
		}()
		got := readAllFrom(t, c)
		require.True(t, bytes.Equal(request, got), "got %d of %d bytes; differs at byte %d",
			len(got), len(request), firstDiff(got, request))
		closed := h.closedErrs(t, id)
		assert.Equal(t, []string{"nil"}, closed)
		assert.EqualValues(t, 1, h.halfCloses.Load())
		return outcome{Delivered: []int{len(got)}, Closed: closed, Stats: closedStats(t, eng)}
	})
}

// An echo in half-close mode to a client that uploads more than the
// socket buffers hold, shuts down writing, and reads slowly: reading is
// paused for the echo's output when the FIN arrives, so the engine holds
// the end of the stream until the bytes before it have been echoed, then
// calls OnHalfClose, whose last word follows the whole echo.
func TestHalfCloseEchoWhilePaused(t *testing.T) {
	payload := randomBytes(rand.New(rand.NewPCG(22, 23)), 4<<20)
	farewell := []byte("that was all")
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newHalfCloser(func(c Conn, got int) Action {
			c.Write(farewell)
			return Close
		})
		h.traffic = func(c Conn) Action {
			if h.halfCloses.Load() > 0 {
				h.late.Add(1)
			}
			b, _ := c.Next(-1)
			h.got.Add(int64(len(b)))
			c.Write(b)
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithHalfClose(true))
		c := dialSmall(t, addr)
		id := h.next(t)
		got, err := sendThenReadSlowly(c, payload)
		require.NoError(t, err, "after %d bytes", len(got))
		want := append(append([]byte(nil), payload...), farewell...)
		require.True(t, bytes.Equal(want, got), "got %d of %d bytes; differs at byte %d",
			len(got), len(want), firstDiff(got, want))
		closed := h.closedErrs(t, id)
		assert.Equal(t, []string{"nil"}, closed)
		assert.EqualValues(t, 1, h.halfCloses.Load(), "OnHalfClose calls")
		assert.EqualValues(t, len(payload), h.gotAtHalf.Load(), "bytes offered before OnHalfClose")
		assert.Zero(t, h.late.Load(), "OnTraffic calls after OnHalfClose")
		return outcome{Delivered: []int{len(got)}, Closed: closed, Stats: closedStats(t, eng)}
	})
}

// In half-close mode, a server that shut its write side down first closes
// the connection when the client's FIN follows, once OnHalfClose has run:
// both ends are done.
func TestHalfCloseAfterCloseWrite(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newHalfCloser(func(c Conn, got int) Action { return None })
		h.traffic = func(c Conn) Action {
			n, _ := c.Discard(-1)
			if h.got.Add(int64(n)) == 2 { // the request; later bytes are only counted
				c.Write([]byte("bye"))
				c.CloseWrite()
			}
			return None
		}
		eng, addr := serve(t, h, p, WithNumEventLoop(1), WithHalfClose(true))
		c := dial(t, addr).(*net.TCPConn)
		id := h.next(t)
		_, err := c.Write([]byte("hi"))
		require.NoError(t, err)
		assert.Equal(t, []byte("bye"), readAllFrom(t, c))
		_, err = c.Write([]byte("after"))
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { return h.got.Load() == int64(len("hi")+len("after")) },
			func() string { return "the bytes sent after the server's FIN were not read" })
		_, closed := h.closing(id)
		require.False(t, closed, "closed before the client finished")
		require.NoError(t, c.CloseWrite())
		cl := h.closedErrs(t, id)
		assert.Equal(t, []string{"nil"}, cl)
		assert.EqualValues(t, 1, h.halfCloses.Load(), "OnHalfClose calls")
		return outcome{Delivered: []int{int(h.got.Load())}, Closed: cl, Stats: closedStats(t, eng)}
	})
}

// Half-close works over a unix socket as over TCP: the client's shutdown
// of its write side reaches OnHalfClose after all its bytes, and the
// server's CloseWrite reaches the client as the end of the stream.
func TestHalfCloseOverUnixSocket(t *testing.T) {
	const request = 256 << 10
	payload := randomBytes(rand.New(rand.NewPCG(26, 27)), request)
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := newHalfCloser(func(c Conn, got int) Action {
			c.Write([]byte(strconv.Itoa(got)))
			c.CloseWrite()
			return None
		})
		eng, addr := serveAddr(t, "unix://"+t.TempDir()+"/half.sock", h, p, WithNumEventLoop(1), WithHalfClose(true))
		c := dial(t, addr).(*net.UnixConn)
		id := h.next(t)
		go func() {
			c.Write(payload)
			c.CloseWrite()
		}()
		got := readAllFrom(t, c)
		assert.Equal(t, strconv.Itoa(request), string(got))
		closed := h.closedErrs(t, id)
		assert.Equal(t, []string{"nil"}, closed)
		assert.EqualValues(t, 1, h.halfCloses.Load())
		return outcome{Delivered: []int{len(got)}, Closed: closed, Stats: closedStats(t, eng)}
	})
}

// In half-close mode OnHalfClose runs for the peer's end of stream also
// when the server shut its own write side down first, whether or not its
// output was still queued when the end arrived: with 8 MiB queued at
// CloseWrite, a client that finishes at once sees its end arrive while
// the output is queued, and one that reads everything first, after the
// write side is shut. Either way the connection closes cleanly once both
// sides are done.
func TestHalfCloseAfterCloseWriteWithOutputQueued(t *testing.T) {
	reply := randomBytes(rand.New(rand.NewPCG(32, 33)), 8<<20)
	for _, early := range []bool{true, false} {
		name := "the client finishes after reading all"
		if early {
			name = "the client finishes at once"
		}
		t.Run(name, func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				h := newHalfCloser(func(c Conn, got int) Action { return None })
				var shut atomic.Int64 // CloseWrite calls that failed, plus one once called
				h.traffic = func(c Conn) Action {
					n, _ := c.Discard(-1)
					if h.got.Add(int64(n)) == 2 && shut.Load() == 0 {
						c.Write(reply)
						shut.Add(1)
						if c.CloseWrite() != nil {
							shut.Add(1)
						}
					}
					return None
				}
				eng, addr := serve(t, h, p, WithNumEventLoop(1), WithHalfClose(true))
				c := dial(t, addr).(*net.TCPConn)
				id := h.next(t)
				_, err := c.Write([]byte("go"))
				require.NoError(t, err)
				if early {
					require.NoError(t, c.CloseWrite())
				}
				got := readAllFrom(t, c)
				require.True(t, bytes.Equal(reply, got), "got %d of %d bytes; differs at byte %d",
					len(got), len(reply), firstDiff(got, reply))
				if !early {
					require.NoError(t, c.CloseWrite())
				}
				closed := h.closedErrs(t, id)
				assert.Equal(t, []string{"nil"}, closed)
				assert.EqualValues(t, 1, shut.Load(), "CloseWrite failed")
				assert.EqualValues(t, 1, h.halfCloses.Load(), "OnHalfClose calls")
				assert.EqualValues(t, 2, h.gotAtHalf.Load(), "bytes offered before OnHalfClose")
				return outcome{Delivered: []int{len(got)}, Closed: closed, Stats: closedStats(t, eng)}
			})
		})
	}
}
