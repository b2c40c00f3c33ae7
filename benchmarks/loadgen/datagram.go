package loadgen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// A DatagramSession drives a UDP echo server: each peer is a UDP socket of
// its own, connected to the server, and every datagram carries its peer's
// sequence number, so that an echo is matched to the datagram it answers
// whatever came between. A datagram not echoed within LossTimeout is lost
// (Result.Lost), not an error: the network may drop datagrams, and
// counting how many a server dropped is the point. An echo that comes
// after its datagram was counted lost is late (Result.Late). Bytes that
// differ from what was sent are a mismatch (Errors.Mismatch).
//
// Its methods mirror Session's: Run keeps one datagram in flight per peer
// (a peer whose datagram is lost sends the next); Exchange does so for a
// fixed number of round trips; Pace sends at a fixed total rate whether or
// not echoes came back, so that a server that falls behind drops
// datagrams (or delays them) for all to see. A DatagramSession is not for
// concurrent use.
//
// With Config.InFlight above 1, Run and Exchange keep that many in
// flight per peer and move them in batches: a peer's first ones go out
// with one sendmmsg(2), each readiness of a peer takes what waits with
// recvmmsg(2) calls of up to 64, and the datagrams that replace the
// echoes go out with one sendmmsg, so that the generator spends a few
// system calls per batch rather than two per datagram, and saturation is
// the server's. Every echo is still matched and checked, and loss counted.
// With Config.Segmented each batch goes with one sendmsg(2) and
// UDP_SEGMENT instead.
type DatagramSession struct {
	workers []*dgramWorker
}

// LossTimeout is how long a datagram may go unechoed before it counts as
// lost.
var LossTimeout = 500 * time.Millisecond

// dgramWindow is how many datagrams a peer keeps track of in flight: one
// sent while its window is full of unechoed ones counts the oldest lost.
const dgramWindow = 1024

// A dgramWorker is one epoll loop over its peers, like a worker.
type dgramWorker struct {
	epfd   int
	peers  []peer
	buf    []byte
	events []unix.EpollEvent
	ts     unix.Timespec
	res    Result
	// Batched (Config.InFlight above 1): how many each peer keeps in
	// flight, and the worker's recvmmsg and sendmmsg vectors.
	inFlight  int
	in, out   *mmsgs
	segmented bool // send each batch with one sendmsg and UDP_SEGMENT
}

// A peer is one UDP socket and what it has in flight.
type peer struct {
	fd     int
	msg    []byte // the datagram, its first 8 bytes the sequence number
	next   int64  // the sequence number of the next datagram
	oldest int64  // the oldest that may still be in flight
	out    int    // in flight
	sent   [dgramWindow]int64
}

// DialDatagrams opens cfg.Conns UDP peers connected to cfg.Addr, each with
// datagrams of cfg.Size bytes (at least 8, for the sequence number), over
// cfg.Workers epoll loops. TLS is not for datagrams.
func DialDatagrams(cfg Config) (*DatagramSession, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Size < 8 || cfg.TLS != nil || cfg.InFlight > dgramWindow {
		return nil, fmt.Errorf("%w: datagrams of at least 8 bytes, without TLS, at most %d in flight: %+v", ErrConfig, dgramWindow, cfg)
	}
	s := new(DatagramSession)
	for i := range cfg.Workers {
		w, err := newDgramWorker()
		if err != nil {
			s.Close()
			return nil, err
		}
		if cfg.InFlight > 1 {
			w.inFlight, w.segmented = cfg.InFlight, cfg.Segmented
			w.in, w.out = newMmsgs(mmsgBatch, cfg.Size), newMmsgs(min(cfg.InFlight, mmsgBatch), cfg.Size)
		}
		s.workers = append(s.workers, w)
		from, to := share(cfg.Conns, cfg.Workers, i)
		for id := from; id < to; id++ {
			if err := w.open(cfg.Addr, id, cfg.Size); err != nil {
				s.Close()
				return nil, fmt.Errorf("%w: %v", ErrDial, err)
			}
		}
	}
	return s, nil
}

func newDgramWorker() (*dgramWorker, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &dgramWorker{epfd: epfd, buf: make([]byte, readBufSize), events: make([]unix.EpollEvent, 1024)}, nil
}

// open opens peer id, connected to addr.
func (w *dgramWorker) open(addr netip.AddrPort, id, size int) error {
	family, sa := unix.AF_INET, unix.Sockaddr(nil)
	if addr.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	w.peers = append(w.peers, peer{fd: fd, msg: newMsg(size, id)})
	if err := unix.Connect(fd, sa); err != nil {
		return err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(len(w.peers) - 1)}
	return unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
}

// Close closes every peer.
func (s *DatagramSession) Close() {
	for _, w := range s.workers {
		for _, p := range w.peers {
			unix.Close(p.fd)
		}
		unix.Close(w.epfd)
	}
}

// Negotiated is empty: datagrams carry no TLS.
func (s *DatagramSession) Negotiated() string { return "" }

// Run keeps one datagram in flight per peer for d.
func (s *DatagramSession) Run(d time.Duration) Result { return s.runPlans(closedFor(d)) }

// Exchange keeps one datagram in flight per peer for n round trips in
// all (those lost included).
func (s *DatagramSession) Exchange(n int64) Result {
	return s.runPlans(exactly(n, len(s.workers)))
}

// Pace sends rate datagrams a second in all for d, the peers taking turns
// at even intervals, each sending on time whether or not its earlier
// datagrams were echoed; latency counts from when each was due.
func (s *DatagramSession) Pace(rate int, d time.Duration) Result {
	return s.runPlans(pacedAt(rate, d, len(s.workers)))
}

// runPlans runs plans(i) on worker i, all at once, and merges what they
// measured; Elapsed runs to the last echo.
func (s *DatagramSession) runPlans(plans func(i int) plan) Result {
	onThreads(s.workers, func(i int, w *dgramWorker) { w.run(plans(i)) })
	res := Result{}
	for _, w := range s.workers {
		res.merge(&w.res)
		res.Elapsed = max(res.Elapsed, w.res.Elapsed)
	}
	return res
}

// dgramRun is one run in progress on a dgramWorker.
type dgramRun struct {
	plan
	t0, last int64 // the start, and the last echo
	started  int64
	inflight int
	slot     int64 // paced: the next global send slot
	checkBy  int64 // when to look for lost datagrams next
}

// run runs plan p on the worker's peers and leaves its figures in w.res.
// It returns once it has stopped sending and every datagram in flight was
// echoed or lost.
func (w *dgramWorker) run(p plan) {
	preciseTimers()
	w.res = Result{}
	t0 := now()
	s := dgramRun{plan: p.start(t0), t0: t0}
	s.last, s.checkBy = s.t0, s.t0+int64(LossTimeout)/4
	for i := range w.peers {
		switch {
		case s.gap > 0:
		case w.inFlight > 1:
			for n := w.inFlight; n > 0; n -= mmsgBatch {
				w.sendMany(&s, i, min(n, mmsgBatch), s.t0)
			}
		case s.canStart(s.t0):
			w.send(&s, i, s.t0)
		}
	}
	for {
		t := now()
		if s.gap > 0 {
			w.sendDue(&s, t)
		}
		if t >= s.checkBy {
			w.expire(&s, t)
			s.checkBy = t + int64(LossTimeout)/4
		}
		if !s.canStart(t) && s.inflight == 0 {
			break
		}
		for _, ev := range epollWait(w.epfd, w.events, &w.ts, s.timeout(t)) {
			if w.inFlight > 1 && s.gap == 0 {
				w.receiveMany(&s, int(ev.Fd))
			} else {
				w.receive(&s, int(ev.Fd))
			}
		}
	}
	w.res.Elapsed = time.Duration(s.last - s.t0)
}

// timeout returns how long the loop may wait at time t: until the next
// paced slot, the end of the run, or the next look for lost datagrams.
func (s *dgramRun) timeout(t int64) int64 {
	next := s.checkBy
	if s.gap > 0 && s.canStart(t) {
		next = min(next, s.t0+s.slot*s.gap)
	}
	if s.until > 0 && t < s.until {
		next = min(next, s.until)
	}
	return max(next-t, 0)
}

// sendDue sends the paced datagrams whose slots have come by t, every one
// due before the run's end even if t is past it.
func (w *dgramWorker) sendDue(s *dgramRun, t int64) {
	n := int64(len(w.peers))
	for ; s.t0+s.slot*s.gap <= t && s.canStart(s.t0+s.slot*s.gap); s.slot++ {
		w.send(s, int(s.slot%n), s.t0+s.slot*s.gap)
	}
}

// send sends peer i's next datagram, due at at. A full window counts its
// oldest datagram lost first.
func (w *dgramWorker) send(s *dgramRun, i int, at int64) {
	p := &w.peers[i]
	if p.next-p.oldest == dgramWindow {
		w.lose(s, p)
	}
	stamp(p.msg, p.next)
	p.sent[p.next%dgramWindow] = at
	p.next++
	p.out++
	s.started++
	s.inflight++
	if _, err := unix.Write(p.fd, p.msg); err != nil {
		// A full socket buffer, or the server's port closed: the datagram
		// is lost, as the network would lose it.
		w.lose(s, p)
	}
}

// lose counts p's oldest datagram in flight lost.
func (w *dgramWorker) lose(s *dgramRun, p *peer) {
	for ; p.oldest < p.next; p.oldest++ {
		if at := &p.sent[p.oldest%dgramWindow]; *at != 0 {
			*at = 0
			p.oldest++
			p.out--
			s.inflight--
			w.res.Lost++
			return
		}
	}
}

// expire counts lost every datagram in flight for longer than LossTimeout
// at t; in the closed loop its peer sends the next.
func (w *dgramWorker) expire(s *dgramRun, t int64) {
	for i := range w.peers {
		p := &w.peers[i]
		for p.oldest < p.next {
			at := p.sent[p.oldest%dgramWindow]
			if at == 0 {
				p.oldest++
				continue
			}
			if t-at < int64(LossTimeout) {
				break
			}
			w.lose(s, p)
			if s.gap == 0 && s.canStart(t) {
				w.send(s, i, t)
			}
		}
	}
}

// receive reads an echo waiting on peer i, if one is, and matches it to
// its datagram. It reads once: epoll reports the socket again while more
// wait, and one is all a peer has in flight but when paced.
func (w *dgramWorker) receive(s *dgramRun, i int) {
	p := &w.peers[i]
	n, err := unix.Read(p.fd, w.buf)
	if err != nil {
		return // EAGAIN; or an ICMP error, whose datagram will count lost
	}
	t := now()
	if w.match(s, p, w.buf[:n], n, t) && s.gap == 0 && s.canStart(t) {
		w.send(s, i, t)
	}
}

// match matches got, an echo of n bytes (got holds what fit of it) that
// came to p at t, to its datagram, and reports whether it was one in
// flight, now echoed.
func (w *dgramWorker) match(s *dgramRun, p *peer, got []byte, n int, t int64) bool {
	if n != len(p.msg) || len(got) != n || !bytes.Equal(got[8:], p.msg[8:]) {
		w.res.Errors.Mismatch++
		return false
	}
	seq := int64(binary.LittleEndian.Uint64(got))
	switch {
	case seq < 0 || seq >= p.next:
		w.res.Errors.Mismatch++
		return false
	case seq < p.oldest || p.sent[seq%dgramWindow] == 0:
		w.res.Late++
		return false
	}
	at := &p.sent[seq%dgramWindow]
	w.res.Latency.Record(time.Duration(t - *at))
	*at = 0
	for p.oldest < p.next && p.sent[p.oldest%dgramWindow] == 0 {
		p.oldest++ // echoed: the window is what is still in flight
	}
	p.out--
	s.inflight--
	s.last = t
	w.res.RoundTrips++
	return true
}

// receiveMany takes the echoes waiting on peer i, up to mmsgBatch a
// recvmmsg, until one takes fewer (the socket is empty), and after each
// call sends as many datagrams as came back echoed with one sendmmsg.
func (w *dgramWorker) receiveMany(s *dgramRun, i int) {
	p := &w.peers[i]
	for {
		n, err := w.in.recv(p.fd)
		if err != nil {
			return // EAGAIN; or an ICMP error, whose datagrams will count lost
		}
		t := now()
		echoed := 0
		for j := range n {
			got, size := w.in.at(j)
			if w.match(s, p, got, size, t) {
				echoed++
			}
		}
		if s.canStart(t) {
			w.sendMany(s, i, echoed, t)
		}
		if n < len(w.in.hdrs) {
			return
		}
	}
}

// sendMany sends up to n (at most mmsgBatch) of peer i's next datagrams,
// due at at, with one sendmmsg, as many as the run may still start. What
// the socket does not take counts lost, as the network would lose it.
func (w *dgramWorker) sendMany(s *dgramRun, i, n int, at int64) {
	p := &w.peers[i]
	n = min(n, len(w.out.hdrs))
	k := 0
	for ; k < n && s.canStart(at); k++ {
		if p.next-p.oldest == dgramWindow {
			w.lose(s, p)
		}
		msg := w.out.slot(k)
		copy(msg, p.msg)
		stamp(msg, p.next)
		w.out.setLen(k, len(msg))
		p.sent[p.next%dgramWindow] = at
		p.next++
		p.out++
		s.started++
		s.inflight++
	}
	if k == 0 {
		return
	}
	var sent int
	if w.segmented && k > 1 {
		sent, _ = w.out.sendSegmented(p.fd, k, len(p.msg))
	} else {
		sent, _ = w.out.send(p.fd, k)
	}
	for seq := p.next - int64(k-sent); seq < p.next; seq++ {
		p.sent[seq%dgramWindow] = 0 // never sent: lost
		p.out--
		s.inflight--
		w.res.Lost++
	}
}

func (s *dgramRun) canStart(t int64) bool { return s.allows(s.started, t) }
