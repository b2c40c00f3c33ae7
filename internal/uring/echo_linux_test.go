package uring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// What a completion of the echo server is for: the top 32 bits of its
// user data. The low 32 bits are the descriptor.
const (
	kindAccept = iota + 1
	kindRecv
	kindSend
	kindClose
	kindWake
)

func userData(kind, fd int) uint64 { return uint64(kind)<<32 | uint64(uint32(fd)) }

// echoServer is an echo event loop built on the package alone, the shape
// the engine's io_uring poller takes: multishot accept, multishot receive
// into a buffer ring, each buffer sent back as it came, and an eventfd
// read that wakes the loop to stop it.
type echoServer struct {
	ring    *Ring
	bufs    *BufRing
	lfd     int
	efd     int
	wakeBuf [8]byte
	conns   map[int]bool
	echoed  []uint16 // buffers whose sends the next submission issues
	stopped bool
	err     error
}

// startEcho runs an echo server on a loopback port until the test ends and
// returns its address.
func startEcho(tb testing.TB, bufCount, bufSize int) string {
	tb.Helper()
	requireUring(tb)
	lfd, addr := listenTCP(tb)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC) // blocking, so the read waits
	require.NoError(tb, err)
	s := &echoServer{lfd: lfd, efd: efd, conns: map[int]bool{}}
	ready, done := make(chan error), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- s.run(ready, bufCount, bufSize)
	}()
	require.NoError(tb, <-ready)
	tb.Cleanup(func() {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		_, err := unix.Write(efd, one[:])
		assert.NoError(tb, err)
		assert.NoError(tb, <-done)
		unix.Close(efd)
	})
	return fmt.Sprintf("127.0.0.1:%d", addr.Port)
}

func (s *echoServer) run(ready chan<- error, bufCount, bufSize int) (err error) {
	if s.ring, err = New(256, 1024); err == nil {
		s.bufs, err = NewBufRing(s.ring, 0, bufCount, bufSize)
	}
	ready <- err
	if err != nil {
		return err
	}
	defer s.close()
	s.ring.PrepAcceptMultishot(s.lfd, userData(kindAccept, s.lfd))
	s.ring.PrepRead(s.efd, s.wakeBuf[:], userData(kindWake, s.efd))
	for !s.stopped && s.err == nil {
		if err := s.ring.SubmitAndWait(1, -1); err != nil {
			return err
		}
		// The sends queued last turn were issued with MSG_DONTWAIT by the
		// submission above: their buffers are free again.
		for _, id := range s.echoed {
			s.bufs.Recycle(id)
		}
		s.echoed = s.echoed[:0]
		s.ring.ForEachCQE(s.handle)
	}
	return s.err
}

func (s *echoServer) handle(c CQE) {
	fd := int(int32(c.UserData))
	switch c.UserData >> 32 {
	case kindAccept:
		if c.Res < 0 {
			s.err = fmt.Errorf("accept: %w", c.Err())
			return
		}
		s.conns[int(c.Res)] = true
		s.ring.PrepRecvMultishot(int(c.Res), s.bufs, userData(kindRecv, int(c.Res)))
		if !c.More() {
			s.ring.PrepAcceptMultishot(s.lfd, userData(kindAccept, s.lfd))
		}
	case kindRecv:
		s.received(fd, c)
	case kindSend, kindClose: // these post completions only when they fail
		s.err = fmt.Errorf("operation %#x: %w", c.UserData, c.Err())
	case kindWake:
		s.stopped = true
	}
}

func (s *echoServer) received(fd int, c CQE) {
	if id, ok := c.Buffer(); ok {
		s.ring.PrepSend(fd, s.bufs.Buf(id)[:c.Res], unix.MSG_DONTWAIT|unix.MSG_WAITALL, userData(kindSend, fd)).SetFlags(SkipSuccess)
		s.echoed = append(s.echoed, id)
	}
	switch {
	case c.More():
	case c.Res > 0, errors.Is(c.Err(), unix.ENOBUFS):
		s.ring.PrepRecvMultishot(fd, s.bufs, userData(kindRecv, fd))
	default: // end of stream, or an error: the receive has ended
		delete(s.conns, fd)
		s.ring.PrepClose(fd, userData(kindClose, fd)).SetFlags(SkipSuccess)
	}
}

// close cancels what is in flight and closes every descriptor the loop
// holds, then the ring.
func (s *echoServer) close() {
	s.ring.PrepCancelFd(s.lfd, 0).SetFlags(SkipSuccess)
	s.ring.PrepClose(s.lfd, 0).SetFlags(SkipSuccess)
	for fd := range s.conns {
		s.ring.PrepCancelFd(fd, 0).SetFlags(SkipSuccess)
		s.ring.PrepClose(fd, 0).SetFlags(SkipSuccess)
	}
	if err := s.ring.Submit(); err != nil && s.err == nil {
		s.err = err
	}
	if err := s.ring.Close(); err != nil && s.err == nil {
		s.err = err
	}
}

// A hundred connections each send messages of random sizes, most larger
// than a buffer, through a buffer ring small enough to run dry, and get
// every byte back in order.
func TestEchoManyConnections(t *testing.T) {
	const conns, messages = 100, 5
	addr := startEcho(t, 32, 1024)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			c, err := net.Dial("tcp", addr)
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			for range messages {
				msg := make([]byte, 1+rng.IntN(8<<10))
				for j := range msg {
					msg[j] = byte(rng.Uint32())
				}
				_, err := c.Write(msg)
				if !assert.NoError(t, err) {
					return
				}
				got := make([]byte, len(msg))
				_, err = io.ReadFull(c, got)
				if !assert.NoError(t, err) || !assert.True(t, bytes.Equal(msg, got), "echo differs") {
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkEchoRoundTrip measures one 64-byte round trip on one connection
// and reports the server's io_uring_enter calls per round trip.
func BenchmarkEchoRoundTrip(b *testing.B) {
	syscount.Enabled = true // before the loop starts; the loop has stopped when the cleanup that clears it runs
	b.Cleanup(func() { syscount.Enabled = false })
	addr := startEcho(b, 64, 4096)
	c, err := net.Dial("tcp", addr)
	require.NoError(b, err)
	defer c.Close()
	msg, got := make([]byte, 64), make([]byte, 64)
	b.ReportAllocs()
	start := syscount.Load()
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(syscount.Load()-start)/float64(b.N), "enters/op")
}
