package loadgen

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsgBatch is how many datagrams one recvmmsg or sendmmsg of a batched
// DatagramSession moves at most.
const mmsgBatch = 64

// mmsghdr is struct mmsghdr: a msghdr and the length it moved.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// mmsgs are the vectors of one recvmmsg or sendmmsg on a connected
// socket: n datagrams of up to size bytes each, in one buffer.
type mmsgs struct {
	hdrs []mmsghdr
	iovs []unix.Iovec
	mem  []byte
	size int
}

func newMmsgs(n, size int) *mmsgs {
	m := &mmsgs{hdrs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n), mem: make([]byte, n*size), size: size}
	for i := range n {
		m.iovs[i].Base = &m.mem[i*size]
		m.iovs[i].SetLen(size)
		m.hdrs[i].hdr.Iov = &m.iovs[i]
		m.hdrs[i].hdr.SetIovlen(1)
	}
	return m
}

// slot returns datagram i's room.
func (m *mmsgs) slot(i int) []byte { return m.mem[i*m.size : (i+1)*m.size] }

// setLen says datagram i to send is n bytes.
func (m *mmsgs) setLen(i, n int) { m.iovs[i].SetLen(n) }

// at returns what the last recv took into slot i, and the datagram's
// whole length, which is larger when it did not fit.
func (m *mmsgs) at(i int) (got []byte, n int) {
	n = int(m.hdrs[i].n)
	return m.slot(i)[:min(n, m.size)], n
}

// recv takes up to len(m.hdrs) datagrams waiting on fd, without waiting.
func (m *mmsgs) recv(fd int) (int, error) {
	for i := range m.hdrs {
		m.iovs[i].SetLen(m.size)
	}
	for {
		n, _, e := syscall.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(len(m.hdrs)),
			unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// send sends the first n datagrams with one sendmmsg and returns how many
// the socket took.
func (m *mmsgs) send(fd, n int) (int, error) {
	for {
		sent, _, e := syscall.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(n),
			unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(sent), nil
	}
}

// sendSegmented sends the first n datagrams, each of size bytes, with one
// sendmsg and UDP_SEGMENT: they lie back to back in mem. It returns n
// or, when the socket refused them, 0.
func (m *mmsgs) sendSegmented(fd, n, size int) (int, error) {
	var oob [unix.SizeofCmsghdr + 8]byte // CmsgSpace(2)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = uint16(size)
	iov := unix.Iovec{Base: &m.mem[0]}
	iov.SetLen(n * size)
	msg := unix.Msghdr{Iov: &iov, Control: &oob[0]}
	msg.SetIovlen(1)
	msg.SetControllen(unix.CmsgSpace(2))
	for {
		_, _, e := syscall.RawSyscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return n, nil
	}
}
