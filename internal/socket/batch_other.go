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
// Linux version.
func (b *Batch) Recv(fd int) (int, error) {
	var err error
	b.n, b.from, b.truncated, err = RecvFrom(fd, b.buf)
	if err != nil {
		return 0, err
	}
	return 1, nil
}

// At returns the datagram the last Recv took.
func (b *Batch) At(int) (p []byte, from netip.AddrPort, truncated bool) {
	return b.buf[:b.n], b.from, b.truncated
}
