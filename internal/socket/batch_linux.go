//go:build !sluice_std

package socket

import (
	"net/netip"
	"os"
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
//
// With buffers of GROBuffer bytes or more it reads the segment size the
// kernel reports (a UDP_GRO control message) where a socket has
// ReceiveCoalesced on and one buffer brought several datagrams of one
// sender, coalesced: Recv counts and At returns each of them on its own.
type Batch struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	bufs  [][]byte
	ctrl  []byte // each header's room for control messages (ctrlRoom), when gro
	gro   bool
	used  int       // headers the last Recv filled, whose name and control lengths the kernel rewrote
	segs  []segment // the last Recv's datagrams, when one buffer held several
	most  int       // the most datagrams one buffer of the last Recv held
}

// A segment is one datagram of a buffer that held several: which one,
// where in it, and its length as sent.
type segment struct {
	msg, off, n int32
}

// GROBuffer is the buffer size that holds whatever the kernel coalesces
// into one receive: UDP carries 65,535 bytes at most, headers included.
const GROBuffer = 64 << 10

// ctrlRoom is each buffer's room for control messages: UDP_GRO's (an
// int, 24 bytes) and those the kernel writes ahead of it for a socket
// whose own options ask for them, as an enrolled one's may (receive
// timestamps of each kind, a count of drops, a mark, a priority: 192
// bytes at most), which would otherwise take the room and leave the
// segment size out.
const ctrlRoom = 256

// NewBatch makes a Batch of n buffers of size bytes.
func NewBatch(n, size int) *Batch {
	b := &Batch{
		hdrs:  make([]mmsghdr, n),
		iovs:  make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n),
		bufs:  make([][]byte, n),
		gro:   size >= GROBuffer,
	}
	if b.gro {
		b.ctrl = make([]byte, n*ctrlRoom)
	}
	mem := make([]byte, n*size)
	for i := range n {
		b.bufs[i] = mem[i*size : (i+1)*size : (i+1)*size]
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.hdrs[i].hdr.Iov = &b.iovs[i]
		b.hdrs[i].hdr.SetIovlen(1)
		b.hdrs[i].hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		b.hdrs[i].hdr.Namelen = unix.SizeofSockaddrInet6
		if b.gro {
			b.hdrs[i].hdr.Control = &b.ctrl[i*ctrlRoom]
			b.hdrs[i].hdr.SetControllen(ctrlRoom)
		}
	}
	return b
}

// Len returns how many datagrams one Recv takes at most.
func (b *Batch) Len() int { return len(b.hdrs) }

// Recv receives up to max buffers' worth of datagrams waiting on fd
// (Len at most), without waiting, and returns how many datagrams came
// (more than max when the kernel coalesced some) and whether it filled
// fewer buffers than it asked for, which means none is left. It returns
// unix.EAGAIN when none waits, and on a connected socket the error an
// ICMP message reported.
func (b *Batch) Recv(fd, max int) (n int, drained bool, err error) {
	syscount.Inc()
	// The kernel writes a header's name length (the room for the
	// sender's address, read as well as written: an IPv4 socket's 16
	// would cut an IPv6 one's 28 short) and control length only for a
	// datagram it received into it, and the flags every time, so only the
	// last Recv's lengths need setting again: one or two under a light
	// load, not the whole batch.
	for i := range b.used {
		b.hdrs[i].hdr.Namelen = unix.SizeofSockaddrInet6
		if b.gro {
			b.hdrs[i].hdr.SetControllen(ctrlRoom)
		}
	}
	b.used = 0
	b.segs = b.segs[:0]
	hdrs := b.hdrs[:min(max, len(b.hdrs))]
	for {
		got, _, e := syscall.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)),
			unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
		switch e {
		case 0:
			b.used = int(got)
			return b.split(), b.used < len(hdrs), nil
		case unix.EINTR:
			continue
		}
		return 0, false, e
	}
}

// split finds the buffers the last Recv filled with several datagrams,
// and if one did, lists every datagram in segs; it returns how many
// datagrams came. Without one, the usual case, segs stays empty and the
// i-th datagram is the i-th buffer's.
func (b *Batch) split() int {
	b.most = 1
	if !b.gro {
		return b.used
	}
	for i := range b.used {
		if b.segSize(i) > 0 {
			return b.splitFrom(i)
		}
	}
	return b.used
}

// splitFrom lists in segs the datagrams of the buffers the last Recv
// filled, knowing those before the i-th held one each.
func (b *Batch) splitFrom(i int) int {
	for j := range i {
		b.segs = append(b.segs, segment{msg: int32(j), n: int32(b.hdrs[j].n)})
	}
	for ; i < b.used; i++ {
		n, seg := int(b.hdrs[i].n), b.segSize(i)
		if seg <= 0 || seg >= n {
			b.segs = append(b.segs, segment{msg: int32(i), n: int32(n)})
			continue
		}
		for off := 0; off < n; off += seg {
			b.segs = append(b.segs, segment{msg: int32(i), off: int32(off), n: int32(min(seg, n-off))})
		}
		b.most = max(b.most, (n+seg-1)/seg)
	}
	return len(b.segs)
}

// PerBuffer returns the most datagrams one buffer of the last Recv held:
// 1 where the kernel coalesced none.
func (b *Batch) PerBuffer() int { return b.most }

// segSize returns the size of the datagrams the kernel coalesced into
// the i-th buffer, as its UDP_GRO message says, or 0 when it holds one.
func (b *Batch) segSize(i int) int {
	ctrl := b.ctrl[i*ctrlRoom:][:min(int(b.hdrs[i].hdr.Controllen), ctrlRoom)]
	for len(ctrl) >= unix.CmsgLen(0) {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		l := int(c.Len)
		if l < unix.CmsgLen(0) || l > len(ctrl) {
			return 0 // cut short: the room ran out
		}
		if c.Level == unix.SOL_UDP && c.Type == unix.UDP_GRO && l >= unix.CmsgLen(4) {
			return int(*(*int32)(unsafe.Pointer(&ctrl[unix.CmsgLen(0)])))
		}
		ctrl = ctrl[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(ctrl)):]
	}
	return 0
}

// At returns the i-th datagram the last Recv took: the part its buffer
// holds, its sender, and whether it was longer.
func (b *Batch) At(i int) (p []byte, from netip.AddrPort, truncated bool) {
	if len(b.segs) > 0 {
		return b.segment(i)
	}
	h := &b.hdrs[i]
	n := int(h.n)
	truncated = h.hdr.Flags&unix.MSG_TRUNC != 0 || n > len(b.bufs[i])
	return b.bufs[i][:min(n, len(b.bufs[i]))], inetAddrPort(&b.names[i]), truncated
}

// segment returns the i-th datagram of the last Recv, which coalesced
// some: a buffer cut short (which a GROBuffer's never is) cuts its last
// datagrams short, or leaves them empty, each reported truncated. Its
// capacity ends with it, so that appending to it, as a handler may to
// what Next gives, leaves the datagrams after it in the buffer whole.
func (b *Batch) segment(i int) (p []byte, from netip.AddrPort, truncated bool) {
	s := b.segs[i]
	buf := b.bufs[s.msg]
	end := int(s.off + s.n)
	kept := min(end, len(buf))
	return buf[min(int(s.off), len(buf)):kept:kept], inetAddrPort(&b.names[s.msg]), end > len(buf)
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

// A SendBatch gathers datagrams for one socket and sends them with one
// sendmmsg(2): the bytes of each are copied in, so that the caller may
// reuse its own at once. It holds at most n datagrams and size bytes of
// them. It belongs to one goroutine.
type SendBatch struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	buf   []byte // it never grows: the iovecs point into it
	n     int    // datagrams gathered
	next  int    // the first not yet sent
}

// NewSendBatch makes a SendBatch of n datagrams and size bytes.
func NewSendBatch(n, size int) *SendBatch {
	return &SendBatch{
		hdrs:  make([]mmsghdr, n),
		iovs:  make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n),
		buf:   make([]byte, 0, size),
	}
}

// Add gathers p, copied, as a datagram to to, or to the socket's peer when
// to is not valid; v6 says the socket is IPv6. It reports false, gathering
// nothing, when the batch has no room left for p.
func (b *SendBatch) Add(p []byte, to netip.AddrPort, v6 bool) bool {
	if b.n == len(b.hdrs) || len(b.buf)+len(p) > cap(b.buf) {
		return false
	}
	i := b.n
	b.n++
	off := len(b.buf)
	b.buf = append(b.buf, p...)
	iov := &b.iovs[i]
	iov.Base = nil
	if len(p) > 0 {
		iov.Base = &b.buf[off]
	}
	iov.SetLen(len(p))
	h := &b.hdrs[i].hdr
	*h = unix.Msghdr{Iov: iov}
	h.SetIovlen(1)
	if to.IsValid() {
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Namelen = PutSockaddr(&b.names[i], to, v6)
	}
	return true
}

// Pending returns how many gathered datagrams are not yet sent.
func (b *SendBatch) Pending() int { return b.n - b.next }

// Reset empties the batch, sent or not, wiping its bytes first if wipe
// is set.
func (b *SendBatch) Reset(wipe bool) {
	if wipe {
		clear(b.buf)
	}
	b.buf, b.n, b.next = b.buf[:0], 0, 0
}

// Send sends what is pending on fd with one sendmmsg, and when a datagram
// fails, gives up on that one and returns its error and its length (lost):
// call it again while any is pending, then Reset. One datagram alone goes
// with sendto(2), which the kernel serves without reading a msghdr and an
// iovec from memory and writing the length back: the usual case under a
// light load, where a readiness brings one datagram.
func (b *SendBatch) Send(fd int) (lost int, err error) {
	for b.next < b.n {
		syscount.Inc()
		var (
			sent uintptr
			e    syscall.Errno
		)
		if h := &b.hdrs[b.next].hdr; b.n-b.next == 1 {
			_, _, e = syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(h.Iov.Base)), uintptr(h.Iov.Len),
				unix.MSG_NOSIGNAL, uintptr(unsafe.Pointer(h.Name)), uintptr(h.Namelen))
			sent = 1
		} else {
			sent, _, e = syscall.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(h)),
				uintptr(b.n-b.next), unix.MSG_NOSIGNAL, 0, 0)
		}
		switch e {
		case 0:
			b.next += int(sent)
		case unix.EINTR:
		default:
			lost := int(b.iovs[b.next].Len)
			b.next++ // the first pending one failed
			return lost, e
		}
	}
	return 0, nil
}

// ReceiveCoalesced has the kernel coalesce datagrams of one sender that
// arrive together into one receive (UDP_GRO), or not, for a Batch of
// GROBuffer-sized buffers to split: fewer, larger buffers through the
// stack. Off, it undoes what a socket handed over or enrolled may have
// brought on. A kernel without it refuses, which changes nothing.
func ReceiveCoalesced(fd int, on bool) error {
	v := 0
	if on {
		v = 1
	}
	return os.NewSyscallError("setsockopt", unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, v))
}

// PutSockaddr lays to out in sa as the kernel reads it for a socket of
// IPv6 (v6) or IPv4, and returns its length.
func PutSockaddr(sa *unix.RawSockaddrInet6, to netip.AddrPort, v6 bool) uint32 {
	*sa = unix.RawSockaddrInet6{}
	ip := to.Addr()
	if !v6 {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		putPort(&sa4.Port, int(to.Port()))
		sa4.Addr = ip.Unmap().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family = unix.AF_INET6
	putPort(&sa.Port, int(to.Port()))
	sa.Addr = ip.As16()
	sa.Scope_id = ZoneIndex(ip.Zone())
	return unix.SizeofSockaddrInet6
}
