package uring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// PrepRecvmsgMultishot queues a recvmsg(2) that stays armed on the
// datagram socket fd: each datagram posts a completion naming the buffer
// of b it landed in, laid out as RecvmsgOut reads it (a header, the
// sender's address in msg.Namelen bytes, then the payload), while More
// stays true. msg sets only how much room the address takes (Namelen); it
// must stay in place until the last completion. msgFlags are recvmsg's:
// with MSG_TRUNC a datagram's whole length is reported even when the
// buffer took only part of it. An empty datagram ends the operation, as
// does a buffer ring run dry (ENOBUFS); either way it must be prepared
// again.
func (r *Ring) PrepRecvmsgMultishot(fd int, msg *unix.Msghdr, b *BufRing, msgFlags int, userData uint64) *SQE {
	s := r.prep(opRecvmsg, fd, unsafe.Pointer(msg), 1, userData)
	s.ioprio = recvMultishot
	s.flags = sqeBufferSelect
	s.bufGroup = b.group
	s.opFlags = uint32(msgFlags)
	return s
}

// recvmsgOut is struct io_uring_recvmsg_out, at the head of each buffer a
// multishot recvmsg fills.
type recvmsgOut struct {
	namelen    uint32
	controllen uint32
	payloadlen uint32
	flags      uint32
}

// RecvmsgHeader is the room the header takes at the head of a buffer a
// multishot recvmsg fills.
const RecvmsgHeader = int(unsafe.Sizeof(recvmsgOut{}))

// RecvmsgOut reads buf, filled by a multishot recvmsg whose msghdr gave
// the address nameRoom bytes and no control data, n bytes long (the
// completion's Res): the sender's address as the kernel laid it out, the
// payload that fit, and whether the datagram was longer than that.
func RecvmsgOut(buf []byte, n, nameRoom int) (name, payload []byte, truncated bool) {
	if n < RecvmsgHeader+nameRoom || len(buf) < n {
		return nil, nil, false
	}
	h := (*recvmsgOut)(unsafe.Pointer(&buf[0]))
	nl := min(int(h.namelen), nameRoom)
	name = buf[RecvmsgHeader : RecvmsgHeader+nl]
	payload = buf[RecvmsgHeader+nameRoom : n : n]
	truncated = h.flags&unix.MSG_TRUNC != 0 || int(h.payloadlen) > len(payload)
	return name, payload, truncated
}
