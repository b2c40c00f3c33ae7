package socket

import "golang.org/x/sys/unix"

// tcpDelivery reads what TCP_INFO says of a TCP socket's output: the bytes
// its peer has acknowledged; offered, those and the window the peer
// offers, which its kernel may yet take without the peer reading a byte
// (TCP sends the last piece of a window smaller than a segment only with
// its next window probe); and whether TCP still waits on the peer to
// make room, having found it silent or its window closed at most once in
// a row. That holds while the socket has output left to send or to see
// acknowledged and its backoff is below two: each window probe answered
// with a closed window, and each retransmission unanswered, raises the
// backoff, and the peer's acknowledging data or opening its window clears
// it. TCP's timers run at least 200 ms on Linux and double with each
// step, so a backoff of two comes three such timeouts after the peer fell
// silent or closed its window. A kernel too old to report the window
// (tcpi_snd_wnd) leaves offered at what was acknowledged.
func tcpDelivery(ti *unix.TCPInfo) (acked, offered uint64, waiting bool) {
	holds := ti.Unacked > 0 || ti.Notsent_bytes > 0
	return ti.Bytes_acked, ti.Bytes_acked + uint64(ti.Snd_wnd), holds && ti.Backoff < 2
}
