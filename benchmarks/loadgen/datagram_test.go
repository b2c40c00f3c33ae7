package loadgen

import (
	"bytes"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveUDP starts a UDP server on a free port that answers the k-th
// datagram it receives (from 0) with reply(k, datagram), sending nothing
// when that returns nil, and the k-th lateBy later than the others; it
// returns the address.
func serveUDP(t *testing.T, reply func(k int, in []byte) []byte) netip.AddrPort {
	return serveUDPLate(t, reply, -1, 0)
}

func serveUDPLate(t *testing.T, reply func(k int, in []byte) []byte, late int, lateBy time.Duration) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 64<<10)
		for k := 0; ; k++ {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			out := reply(k, buf[:n])
			switch {
			case out == nil:
			case k == late:
				out = bytes.Clone(out)
				time.AfterFunc(lateBy, func() { pc.WriteToUDPAddrPort(out, from) })
			default:
				pc.WriteToUDPAddrPort(out, from)
			}
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).AddrPort()
}

func udpEcho(_ int, in []byte) []byte { return in }

func dialDatagrams(t *testing.T, addr netip.AddrPort, peers, workers int) *DatagramSession {
	t.Helper()
	s, err := DialDatagrams(Config{Addr: addr, Conns: peers, Size: 64, Workers: workers})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// shortLoss makes datagrams count lost after d for the test.
func shortLoss(t *testing.T, d time.Duration) {
	old := LossTimeout
	LossTimeout = d
	t.Cleanup(func() { LossTimeout = old })
}

func TestDatagramsClosedLoop(t *testing.T) {
	addr := serveUDP(t, udpEcho)
	for _, workers := range []int{1, 2} {
		s := dialDatagrams(t, addr, 20, workers)
		res := s.Run(100 * time.Millisecond)
		assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
		assert.Zero(t, res.Lost)
		assert.Positive(t, res.RoundTrips)
		assert.Equal(t, uint64(res.RoundTrips), res.Latency.Count())
		assert.Positive(t, res.Rate())

		res = s.Exchange(500)
		assert.Equal(t, int64(500), res.RoundTrips, "exactly the round trips asked for")
	}
}

func TestDatagramsPaced(t *testing.T) {
	addr := serveUDP(t, udpEcho)
	s := dialDatagrams(t, addr, 10, 1)
	res := s.Pace(2000, 200*time.Millisecond)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.InDelta(t, 400, res.RoundTrips, 40, "2,000 a second for 0.2 s")
}

// A server that drops datagrams shows as loss, not as errors, and the
// closed loop goes on past each lost one; an echo that comes after its
// datagram counted lost is late.
func TestDatagramsLoss(t *testing.T) {
	shortLoss(t, 50*time.Millisecond)
	addr := serveUDPLate(t, func(k int, in []byte) []byte {
		if k%10 == 3 {
			return nil // dropped
		}
		return in
	}, 5, 200*time.Millisecond) // past the loss timeout: late
	s := dialDatagrams(t, addr, 1, 1)
	res := s.Exchange(100)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Equal(t, int64(100), res.RoundTrips+res.Lost, "each datagram echoed or lost")
	assert.Equal(t, int64(11), res.Lost, "a tenth dropped, and the late one")
	assert.Equal(t, int64(1), res.Late)
}

// Paced, a server that answers nothing loses every datagram, and the run
// still ends.
func TestDatagramsPacedAllLost(t *testing.T) {
	shortLoss(t, 30*time.Millisecond)
	addr := serveUDP(t, func(int, []byte) []byte { return nil })
	s := dialDatagrams(t, addr, 5, 1)
	start := time.Now()
	res := s.Pace(1000, 100*time.Millisecond)
	assert.Less(t, time.Since(start), time.Second)
	assert.Zero(t, res.RoundTrips)
	assert.InDelta(t, 100, res.Lost, 10)
}

// An echo whose bytes differ is a mismatch, which a run counts as an error.
func TestDatagramsMismatch(t *testing.T) {
	shortLoss(t, 30*time.Millisecond)
	addr := serveUDP(t, func(k int, in []byte) []byte {
		if k == 2 {
			in[20]++
		}
		return in
	})
	s := dialDatagrams(t, addr, 1, 1)
	res := s.Exchange(10)
	assert.Equal(t, int64(1), res.Errors.Mismatch)
	assert.Equal(t, int64(1), res.Lost, "its datagram was never echoed right")
}

func TestDialDatagramsRefusesSmallDatagrams(t *testing.T) {
	_, err := DialDatagrams(Config{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Conns: 1, Size: 4, Workers: 1})
	assert.ErrorIs(t, err, ErrConfig)
}

// Batched, each peer keeps Config.InFlight datagrams in flight: a server
// that echoes a peer's datagrams only once it holds 16 of them answers
// every one, and the run still counts exactly the round trips asked for.
func TestDatagramsInFlight(t *testing.T) {
	const inFlight = 16
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		held := map[netip.AddrPort][][]byte{}
		buf := make([]byte, 64<<10)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			held[from] = append(held[from], bytes.Clone(buf[:n]))
			if len(held[from]) == inFlight {
				for _, d := range held[from] {
					pc.WriteToUDPAddrPort(d, from)
				}
				held[from] = held[from][:0]
			}
		}
	}()
	for _, workers := range []int{1, 2} {
		s, err := DialDatagrams(Config{Addr: pc.LocalAddr().(*net.UDPAddr).AddrPort(), Conns: 4, Size: 64, Workers: workers, InFlight: inFlight})
		require.NoError(t, err)
		res := s.Exchange(4 * inFlight * 20)
		s.Close()
		assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
		assert.Zero(t, res.Lost)
		assert.Equal(t, int64(4*inFlight*20), res.RoundTrips)
		assert.Equal(t, uint64(res.RoundTrips), res.Latency.Count())
	}
}

// Batched, a server that drops datagrams or garbles one shows it as
// batched peers see it: each datagram echoed or lost, the garbled one a
// mismatch.
func TestDatagramsInFlightLossAndMismatch(t *testing.T) {
	shortLoss(t, 50*time.Millisecond)
	addr := serveUDP(t, func(k int, in []byte) []byte {
		switch {
		case k%10 == 3:
			return nil
		case k == 7:
			in[20]++
		}
		return in
	})
	s, err := DialDatagrams(Config{Addr: addr, Conns: 2, Size: 64, Workers: 1, InFlight: 8})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	res := s.Exchange(300)
	assert.Equal(t, int64(1), res.Errors.Mismatch)
	assert.Equal(t, int64(300), res.RoundTrips+res.Lost, "each datagram echoed or lost")
	assert.Equal(t, int64(31), res.Lost, "a tenth dropped, and the garbled one")
	run := s.Run(100 * time.Millisecond)
	assert.Positive(t, run.RoundTrips)
}

// A peer that sends far more than its window of 1,024 between two looks
// for lost datagrams counts none lost while every echo comes back: the
// window holds what is still in flight, not what was sent since.
func TestDatagramsInFlightPastTheWindow(t *testing.T) {
	addr := serveUDP(t, udpEcho)
	s, err := DialDatagrams(Config{Addr: addr, Conns: 1, Size: 64, Workers: 1, InFlight: 32})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	res := s.Exchange(8 * dgramWindow)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Zero(t, res.Lost)
	assert.Zero(t, res.Late)
	assert.Equal(t, int64(8*dgramWindow), res.RoundTrips)
}

// Segmented, each batch goes with one send the kernel cuts into the
// datagrams it holds: the server gets each on its own, of the size asked
// for, and echoes every one.
func TestDatagramsInFlightSegmented(t *testing.T) {
	var odd atomic.Int64
	addr := serveUDP(t, func(_ int, in []byte) []byte {
		if len(in) != 64 {
			odd.Add(1)
		}
		return in
	})
	s, err := DialDatagrams(Config{Addr: addr, Conns: 2, Size: 64, Workers: 1, InFlight: 16, Segmented: true})
	require.NoError(t, err)
	res := s.Exchange(2 * 16 * 20)
	s.Close()
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Zero(t, res.Lost)
	assert.Equal(t, int64(2*16*20), res.RoundTrips)
	assert.Zero(t, odd.Load(), "datagrams not of 64 bytes reached the server")
}
