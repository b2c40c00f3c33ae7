//go:build !linux || sluice_std

package socket

import "net/netip"

// A Batch receives datagrams one RecvFrom at a time, where recvmmsg(2) is
// not to be had. It belongs to one goroutine.
type Batch struct {
	buf       []byte
	n         int
	from      netip.AddrPort
	truncated bool
}

// NewBatch makes a Batch of one buffer of size bytes.
func NewBatch(n, size int) *Batch { return &Batch{buf: make([]byte, size)} }

// Len returns how many datagrams one Recv takes at most: one.
func (b *Batch) Len() int { return 1 }

// Recv receives the datagram waiting on fd, without waiting; see the
// Linux version (max is at least one, and one is all it takes, which
// tells nothing of what is left).
func (b *Batch) Recv(fd, max int) (n int, drained bool, err error) {
	b.n, b.from, b.truncated, err = RecvFrom(fd, b.buf)
	if err != nil {
		return 0, false, err
	}
	return 1, false, nil
}

// At returns the datagram the last Recv took.
func (b *Batch) At(int) (p []byte, from netip.AddrPort, truncated bool) {
	return b.buf[:b.n], b.from, b.truncated
}

// PerBuffer returns 1: a buffer holds one datagram here.
func (b *Batch) PerBuffer() int { return 1 }

// GROBuffer is the buffer size a Batch would need to split coalesced
// receives, which it never gets here.
const GROBuffer = 64 << 10

// A SendBatch gathers nothing where sendmmsg(2) is not to be had: Add
// reports false, and the caller sends each datagram at once.
type SendBatch struct{}

// NewSendBatch makes a SendBatch that gathers nothing.
func NewSendBatch(n, size int) *SendBatch { return &SendBatch{} }

// Add gathers nothing: it reports false.
func (b *SendBatch) Add(p []byte, to netip.AddrPort, v6 bool) bool { return false }

// Pending returns 0: nothing is ever gathered.
func (b *SendBatch) Pending() int { return 0 }

// Reset has nothing to empty.
func (b *SendBatch) Reset(wipe bool) {}

// Send has nothing to send.
func (b *SendBatch) Send(fd int) (lost int, err error) { return 0, nil }
