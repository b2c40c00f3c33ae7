//go:build unix

package sluice

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests in this file hold the engine to finishing a transfer that a
// peer keeps reading, however small the buffers, whatever the handler's
// way of bounding its output: a client that writes a stream while it
// reads the answers, slower than it writes, must always get them all.

// stallStream is what each client sends and expects back: frames of a
// 4-byte length and about 1,000 bytes, each byte telling where it stands,
// 8.4 MB in all (a quarter under the race detector), well past every
// buffer on the way, so that each bound is reached many times over.
var stallStream = func() []byte {
	size := 8_400_000
	if raceEnabled {
		size /= 4
	}
	var s []byte
	for i := 0; len(s) < size; i++ {
		n := 1000 + i%97
		s = binary.BigEndian.AppendUint32(s, uint32(n))
		for j := range n {
			s = append(s, byte(i+j))
		}
	}
	return s
}()

// streamSlowly writes stallStream to c from one goroutine while it reads
// it back from another, chunk bytes a read with a pause every 64 reads,
// and fails the test, saying where each side stood, if no byte arrives
// for a few seconds, or as soon as check, if given, fails. With
// closeWrite it shuts its write side down once it has written all.
func streamSlowly(t *testing.T, c net.Conn, eng Engine, chunk int, closeWrite bool, check func() error) {
	t.Helper()
	total := len(stallStream)
	var wrote, read atomic.Int64
	werr := make(chan error, 1)
	go func() {
		for off := 0; off < total; {
			n, err := c.Write(stallStream[off:min(off+32<<10, total)])
			off += n
			wrote.Store(int64(off))
			if err != nil {
				werr <- err
				return
			}
		}
		if closeWrite {
			werr <- c.(*net.TCPConn).CloseWrite()
			return
		}
		werr <- nil
	}()
	rerr := make(chan error, 1)
	go func() {
		buf := make([]byte, chunk)
		for off, reads := 0, 0; off < total; reads++ {
			n, err := c.Read(buf)
			if !bytes.Equal(buf[:n], stallStream[off:off+n]) {
				rerr <- fmt.Errorf("bytes at %d differ from what was sent", off+firstDiff(buf[:n], stallStream[off:off+n]))
				return
			}
			off += n
			read.Store(int64(off))
			if err != nil {
				rerr <- err
				return
			}
			if reads%64 == 63 {
				time.Sleep(time.Millisecond)
			}
		}
		rerr <- nil
	}()
	const stuck = 5 * time.Second
	last, at := int64(-1), time.Now()
	for {
		select {
		case err := <-rerr:
			if err != nil {
				t.Fatalf("reading after %d of %d bytes: %v", read.Load(), total, err)
			}
			if err := <-werr; err != nil {
				t.Fatalf("writing: %v", err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if check != nil {
			if err := check(); err != nil {
				c.Close()
				t.Fatalf("after %d of %d bytes: %v", read.Load(), total, err)
			}
		}
		if r := read.Load(); r != last {
			last, at = r, time.Now()
			continue
		}
		if time.Since(at) > stuck {
			ss := sockets(c)
			c.Close()
			t.Fatalf("stalled: wrote %d, read %d of %d bytes, no progress for %v\nstats %+v\n%s",
				wrote.Load(), read.Load(), total, stuck, eng.Stats(), ss)
		}
	}
}

// sockets describes the kernel's view of the client's connection and
// its server end (ss -tmi), for a stall's report.
func sockets(c net.Conn) string {
	port := c.LocalAddr().(*net.TCPAddr).Port
	out, err := exec.Command("ss", "-tmin", fmt.Sprintf("( sport = :%d or dport = :%d )", port, port)).CombinedOutput()
	if err != nil {
		return "ss: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

// Handlers with the ways a handler bounds, or does not bound, its output.

// boundedEcho echoes at most step bytes a step, and stops once its
// unsent output reaches bound, leaving the rest unread until it is
// called again.
type boundedEcho struct {
	BuiltinEventEngine
	step, bound int
}

func (h boundedEcho) OnTraffic(c Conn) Action {
	for c.InboundBuffered() > 0 && c.OutboundBuffered() < h.bound {
		b, _ := c.Next(min(h.step, c.InboundBuffered()))
		c.Write(b)
	}
	return None
}

// writableEcho echoes up to 4 KiB a call while Conn.Writable says the
// output is not past the high-water mark (as the loop last saw it: not
// counting what the call itself writes).
type writableEcho struct{ BuiltinEventEngine }

func (writableEcho) OnTraffic(c Conn) Action {
	if c.Writable() {
		b, _ := c.Next(min(4<<10, c.InboundBuffered()))
		c.Write(b)
	}
	return None
}

// peekEcho echoes part of what it is offered, with Peek and Discard.
type peekEcho struct{ BuiltinEventEngine }

func (peekEcho) OnTraffic(c Conn) Action {
	b, _ := c.Peek(-1)
	n := min(len(b), 1000)
	c.Write(b[:n])
	c.Discard(n)
	return None
}

// asyncEcho echoes with AsyncWrite, as a handler that answers from
// another goroutine does.
type asyncEcho struct{ BuiltinEventEngine }

func (asyncEcho) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	p := append([]byte(nil), b...)
	if err := c.AsyncWrite(p, nil); err != nil {
		return Close
	}
	return None
}

// pausingEcho echoes everything and pauses reading while its output is
// past mark, the high-water mark, resuming on OnDrain, as a proxy does.
// With mark zero it pauses when Conn.Writable says the output is past it.
type pausingEcho struct {
	BuiltinEventEngine
	mark int
}

func (h pausingEcho) OnTraffic(c Conn) Action {
	b, _ := c.Next(-1)
	c.Write(b)
	if h.mark > 0 && c.OutboundBuffered() > h.mark || h.mark == 0 && !c.Writable() {
		c.PauseRead()
	}
	return None
}

func (pausingEcho) OnDrain(c Conn) Action {
	c.ResumeRead()
	return None
}

// refusedEcho echoes as much as WithMaxOutbound lets it, a step at a
// time, and leaves the rest unread when a write is refused.
type refusedEcho struct{ BuiltinEventEngine }

func (refusedEcho) OnTraffic(c Conn) Action {
	for c.InboundBuffered() > 0 {
		b, _ := c.Peek(min(16<<10, c.InboundBuffered()))
		if _, err := c.Write(b); err != nil {
			return None
		}
		c.Discard(len(b))
	}
	return None
}

// stallHandlers are the handlers each case runs with; those marked
// bounded keep their output within stallMaxOutbound or cope with a
// refused write, and only they run where WithMaxOutbound refuses.
var stallHandlers = []struct {
	name    string
	h       func(high int) EventHandler
	bounded bool
}{
	{"echo", func(high int) EventHandler { return echoHandler{} }, false},
	{"bounded", func(high int) EventHandler { return boundedEcho{step: 1 << 10, bound: 2 << 10} }, true},
	{"writable", func(high int) EventHandler { return writableEcho{} }, true},
	{"peek", func(high int) EventHandler { return peekEcho{} }, false},
	{"async", func(high int) EventHandler { return asyncEcho{} }, false},
	{"pausing", func(high int) EventHandler { return pausingEcho{mark: high} }, true},
	{"pausing-writable", func(high int) EventHandler { return pausingEcho{} }, true},
	{"refused", func(high int) EventHandler { return refusedEcho{} }, true},
}

// stallMaxOutbound is the bound on queued output where one is set.
const stallMaxOutbound = 256 << 10

// stallBuffers are the sizes of the engine's and the kernel's buffers
// each handler runs with.
var stallBuffers = []struct {
	name    string
	opts    []Option
	high    int // WithWriteBufferCap's
	refuses bool
}{
	{"small", []Option{WithReadBufferCap(4 << 10), WithWriteBufferCap(2 << 10), WithSocketSendBuffer(64 << 10)}, 2 << 10, false},
	{"small-mark", []Option{WithReadBufferCap(4 << 10), WithWriteBufferCap(2 << 10), WithBackpressureMark(8 << 10), WithSocketSendBuffer(64 << 10)}, 2 << 10, false},
	{"small-max", []Option{WithReadBufferCap(4 << 10), WithWriteBufferCap(2 << 10), WithMaxOutbound(stallMaxOutbound), WithSocketSendBuffer(64 << 10)}, 2 << 10, true},
	{"tiny-socket", []Option{WithReadBufferCap(4 << 10), WithWriteBufferCap(2 << 10), WithSocketSendBuffer(4 << 10), WithSocketRecvBuffer(4 << 10)}, 2 << 10, false},
	{"default", nil, 64 << 10, false},
}

// A client that writes a long stream from one goroutine while it reads
// the answers slowly from another gets them all, whatever the buffers'
// sizes and the handler's way of bounding its output; and with its write
// side shut down once it has written all (with the small buffers).
func TestStreamWhileReadingSlowly(t *testing.T) {
	for _, b := range stallBuffers {
		for _, end := range []string{"open", "closewrite"} {
			if end == "closewrite" && b.name != "small" {
				continue
			}
			for _, h := range stallHandlers {
				if b.refuses && !h.bounded {
					continue
				}
				t.Run(b.name+"/"+end+"/"+h.name, func(t *testing.T) {
					onEachPoller(t, func(t *testing.T, p Option) outcome {
						opts := append([]Option{p, WithNumEventLoop(1)}, b.opts...)
						eng, addr := serve(t, h.h(b.high), opts...)
						streamSlowly(t, dial(t, addr), eng, 1<<10, end == "closewrite", nil)
						return outcome{}
					})
				})
			}
		}
	}
}

// countingEcho is a boundedEcho that counts its calls.
type countingEcho struct {
	boundedEcho
	calls *atomic.Int64
}

func (h countingEcho) OnTraffic(c Conn) Action {
	h.calls.Add(1)
	return h.boundedEcho.OnTraffic(c)
}

// A handler that answers a little each time its output drains, while its
// peer writes far ahead, is offered what the engine holds for it once
// per resume, not again a read buffer's worth at a time: that copied
// every held byte at each resume and called the handler for each part,
// quadratic in what the peer wrote ahead (on io_uring, where a send in
// flight queues the next callback's output, it ran 8 MB at 100 KB/s).
// The count of calls bounds the work without timing it.
func TestResumeOffersHeldBytesOnce(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		var calls atomic.Int64
		h := countingEcho{boundedEcho{step: 1 << 10, bound: 2 << 10}, &calls}
		eng, addr := serve(t, h, p, WithNumEventLoop(1),
			WithReadBufferCap(4<<10), WithWriteBufferCap(2<<10), WithSocketSendBuffer(64<<10))
		// Each call answers up to 2 KiB; a few calls per resume find the
		// output over the bound and answer nothing.
		most := int64(8 * len(stallStream) / (2 << 10))
		streamSlowly(t, dial(t, addr), eng, 1<<10, false, func() error {
			if n := calls.Load(); n > most {
				return fmt.Errorf("OnTraffic called %d times, more than %d", n, most)
			}
			return nil
		})
		t.Logf("OnTraffic called %d times for %d bytes", calls.Load(), len(stallStream))
		return outcome{}
	})
}

// pauser answers each byte b it reads with AsyncWrites of the sizes
// plan(b) gives, and pauses reading while Conn.Writable says its output is
// past the high-water mark, resuming on OnDrain.
type pauser struct {
	BuiltinEventEngine
	plan func(b byte) []int
}

func (h pauser) OnTraffic(c Conn) Action {
	in, _ := c.Next(-1)
	for _, b := range in {
		for _, n := range h.plan(b) {
			if err := c.AsyncWrite(make([]byte, n), nil); err != nil {
				return Close
			}
		}
	}
	if !c.Writable() {
		c.PauseRead()
	}
	return None
}

func (pauser) OnDrain(c Conn) Action {
	c.ResumeRead()
	return None
}

// checkPauserAnswers serves a pauser with plan on one loop whose
// high-water mark is mark, sends it the requests one byte at a time, and
// reads each whole answer before the next request.
func checkPauserAnswers(t *testing.T, mark int, plan func(b byte) []int, requests []byte) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, pauser{plan: plan}, p, WithNumEventLoop(1), WithWriteBufferCap(mark))
		c := dial(t, addr)
		for i, b := range requests {
			_, err := c.Write([]byte{b})
			require.NoError(t, err)
			want := 0
			for _, n := range plan(b) {
				want += n
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.ReadFull(c, make([]byte, want))
			require.NoError(t, err, "the answer to request %d, of %d bytes", i, want)
		}
		return outcome{}
	})
}

// Conn.Writable reports false only once the output is past the high-water
// mark, as WithWriteBufferCap says, which is when OnDrain is owed: output
// of exactly the mark had it report false with no OnDrain to follow, and
// a handler that paused on it waited for ever.
func TestWritableUntilPastMark(t *testing.T) {
	const mark = 2 << 10
	// One write of mark+b bytes for each byte b.
	plan := func(b byte) []int { return []int{mark + int(b)} }
	checkPauserAnswers(t, mark, plan, []byte{0, 1, 0, 0, 1, 1})
}

// A reply posted with AsyncWrite before the connection closes is sent
// before it closes: a client that sends its request and its end of stream
// together gets the answer its server posted from OnTraffic. On io_uring
// the end of stream may come in the same turn as the request, before the
// posted write has run, and the close did not wait for it.
func TestAsyncWritePostedBeforeEndOfStream(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, asyncEcho{}, p, WithNumEventLoop(1))
		req := bytes.Repeat([]byte("request "), 128)
		for i := range 50 {
			c := dial(t, addr)
			_, err := c.Write(req)
			require.NoError(t, err)
			require.NoError(t, c.(*net.TCPConn).CloseWrite())
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			require.Equal(t, len(req), len(got), "the answer to client %d", i)
			c.Close()
		}
		return outcome{}
	})
}

// streamer answers a first byte with an endless stream, each AsyncWrite
// posting the next from its callback, as a handler streams a file or a
// feed, and a second byte with Close.
type streamer struct {
	BuiltinEventEngine
	ended *atomic.Int32 // callbacks told ErrConnClosed
}

func (h streamer) OnTraffic(c Conn) Action {
	in, _ := c.Next(-1)
	for _, b := range in {
		if b == 'q' {
			return Close
		}
		var next AsyncCallback
		chunk := make([]byte, 1<<10)
		next = func(c Conn, err error) {
			if err != nil {
				h.ended.Add(1)
				return
			}
			if c.AsyncWrite(chunk, next) != nil {
				h.ended.Add(1)
			}
		}
		if err := c.AsyncWrite(chunk, next); err != nil {
			return Close
		}
	}
	return None
}

// A graceful close waits for the writes posted before it, not for every
// write posted while it is under way: a stream whose callbacks post the
// next write kept the connection from ever closing while its peer read.
func TestCloseEndsAsyncWriteChain(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		var ended atomic.Int32
		_, addr := serve(t, streamer{ended: &ended}, p, WithNumEventLoop(1))
		c := dial(t, addr)
		_, err := c.Write([]byte("s"))
		require.NoError(t, err)
		_, err = io.ReadFull(c, make([]byte, 64<<10))
		require.NoError(t, err, "the stream")
		_, err = c.Write([]byte("q"))
		require.NoError(t, err)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.Copy(io.Discard, c)
		require.NoError(t, err, "the close after the stream's writes in flight")
		waitFor(t, 5*time.Second, func() bool { return ended.Load() == 1 },
			func() string { return "the stream's last callback told it closed" })
		return outcome{}
	})
}

// Conn.Writable false means OnDrain follows, also when the output past the
// mark was posted in parts that each went to the socket whole.
func TestWritableFalseOwesDrain(t *testing.T) {
	const mark = 2 << 10
	// b+2 writes for each byte b, of just over half the mark each: none
	// past the mark alone.
	plan := func(b byte) []int { return slices.Repeat([]int{mark/2 + 1}, int(b)+2) }
	checkPauserAnswers(t, mark, plan, []byte{0, 1, 0, 2})
}
