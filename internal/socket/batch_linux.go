//go:build !sluice_std

package socket

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// mmsghdr is struct mmsghdr: a msghdr and the length received into it.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// A Batch receives several datagrams with one recvmmsg(2), each into a
// buffer of its own. It belongs to one goroutine.
type Batch struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	bufs  [][]byte
}

// NewBatch makes a Batch of n buffers of size bytes.
func NewBatch(n, size int) *Batch {
	b := &Batch{
		hdrs:  make([]mmsghdr, n),
		iovs:  make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n),
		bufs:  make([][]byte, n),
	}
	mem := make([]byte, n*size)
	for i := range n {
		b.bufs[i] = mem[i*size : (i+1)*size : (i+1)*size]
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.hdrs[i].hdr.Iov = &b.iovs[i]
		b.hdrs[i].hdr.SetIovlen(1)
		b.hdrs[i].hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
	}
	return b
}

// Len returns how many datagrams one Recv takes at most.
func (b *Batch) Len() int { return len(b.hdrs) }

// Recv receives up to Len datagrams waiting on fd, without waiting, and
// returns how many; fewer than Len means none is left. It returns
// unix.EAGAIN when none waits, and on a connected socket the error an
// ICMP message reported.
func (b *Batch) Recv(fd int) (int, error) {
	syscount.Inc()
	for i := range b.hdrs {
		b.hdrs[i].hdr.Namelen = unix.SizeofSockaddrInet6
		b.hdrs[i].hdr.Flags = 0
	}
	for {
		n, _, e := syscall.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)),
			unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, e
	}
}

// At returns the i-th datagram the last Recv took: the part its buffer
// holds, its sender, and whether it was longer.
func (b *Batch) At(i int) (p []byte, from netip.AddrPort, truncated bool) {
	h := &b.hdrs[i]
	n := int(h.n)
	truncated = h.hdr.Flags&unix.MSG_TRUNC != 0 || n > len(b.bufs[i])
	return b.bufs[i][:min(n, len(b.bufs[i]))], inetAddrPort(&b.names[i]), truncated
}

// inetAddrPort reads the IPv4 or IPv6 address (with its zone) and port
// sa holds, as the kernel laid it out in room for an IPv6 one.
func inetAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), portOf(sa4.Port))
	case unix.AF_INET6:
		return netip.AddrPortFrom(addrZone(netip.AddrFrom16(sa.Addr), sa.Scope_id), portOf(sa.Port))
	}
	return netip.AddrPort{}
}
