package uring

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SQE is a submission queue entry, laid out as the kernel's struct
// io_uring_sqe. The Prep methods fill one in and return it, so the caller
// can add flags; the pointer is good only until the next Prep or Submit
// call.
//
// The kernel may use the memory an operation points to (a send's bytes, a
// read's buffer, a sendmsg's header) until the operation completes, which
// for a multishot operation is its last completion. The caller keeps that
// memory referenced and unchanged until then; the Prep methods make it
// escape to the heap, so it never moves with a goroutine's stack, but the
// kernel's hold on it is invisible to the garbage collector. A send or
// sendmsg with MSG_DONTWAIT never waits for its socket: the kernel has
// finished with it by the time Submit or SubmitAndWait returns.
type SQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32 // msg_flags, accept_flags, cancel_flags: one per operation
	userData    uint64
	bufGroup    uint16
	personality uint16
	fileIndex   uint32
	addr3       uint64
	pad         uint64
}

// SQEFlags change how the kernel runs one submission (IOSQE_* flags).
type SQEFlags uint8

// SkipSuccess makes an operation post no completion when it succeeds
// (IOSQE_CQE_SKIP_SUCCESS): only a failure is reported. For a send, a
// short count is a success unless the send has MSG_WAITALL.
const SkipSuccess SQEFlags = 1 << 6

// SetFlags adds flags to the entry.
func (s *SQE) SetFlags(f SQEFlags) { s.flags |= uint8(f) }

// prep takes the next submission entry and fills in what every operation
// has.
func (r *Ring) prep(op uint8, fd int, addr unsafe.Pointer, n int, userData uint64) *SQE {
	// Storing addr in the Ring makes it escape, so the compiler never puts
	// the memory the kernel will use on a goroutine stack, which moves when
	// it grows.
	r.lastAddr = addr
	s := r.next()
	s.opcode = op
	s.fd = int32(fd)
	s.addr = uint64(uintptr(addr))
	s.len = uint32(n)
	s.userData = userData
	return s
}

// PrepAcceptMultishot queues an accept that stays armed on the listening
// socket fd: each connection posts a completion whose Res is the new
// socket, non-blocking and close-on-exec, while More stays true.
func (r *Ring) PrepAcceptMultishot(fd int, userData uint64) *SQE {
	s := r.prep(opAccept, fd, nil, 0, userData)
	s.ioprio = acceptMultishot
	s.opFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
	return s
}

// PrepRecvMultishot queues a receive that stays armed on the socket fd:
// each arrival of data posts a completion naming the buffer of b it was
// received into (see CQE.Buffer) and its length in Res. Res 0 is the end
// of the stream. A connection holds a buffer only while data waits for the
// caller; when b runs dry the receive ends with ENOBUFS and must be
// prepared again after buffers are recycled.
func (r *Ring) PrepRecvMultishot(fd int, b *BufRing, userData uint64) *SQE {
	s := r.PrepRecv(fd, b, userData)
	s.ioprio = recvMultishot
	return s
}

// PrepRecv queues one receive on the socket fd into a buffer of b: it
// completes once, as a multishot receive's first completion would, and
// so never brings more than one buffer's worth.
func (r *Ring) PrepRecv(fd int, b *BufRing, userData uint64) *SQE {
	s := r.prep(opRecv, fd, nil, 0, userData)
	s.flags = sqeBufferSelect
	s.bufGroup = b.group
	return s
}

// PrepSend queues a send(2) of p on the socket fd with the MSG_* flags
// msgFlags. With MSG_DONTWAIT the kernel sends what the socket takes at
// once and completes; with MSG_DONTWAIT|MSG_WAITALL a send that could not
// take everything reports a failure (see SkipSuccess) whose Res is the
// count sent, or -EAGAIN.
func (r *Ring) PrepSend(fd int, p []byte, msgFlags int, userData uint64) *SQE {
	s := r.prep(opSend, fd, unsafe.Pointer(unsafe.SliceData(p)), len(p), userData)
	s.opFlags = uint32(msgFlags)
	return s
}

// PrepSendTo queues a send of p on the socket fd to the address name of
// n bytes (a sockaddr), as sendto(2) sends, with the MSG_* flags
// msgFlags: one datagram, with no msghdr or iovec for the kernel to read.
// name, like p, must stay in place until the send completes. Before
// Linux 6.1 a send takes no address and fails with EINVAL (SendsTo); with
// name nil it is PrepSend's.
func (r *Ring) PrepSendTo(fd int, p []byte, name unsafe.Pointer, n uint32, msgFlags int, userData uint64) *SQE {
	s := r.PrepSend(fd, p, msgFlags, userData)
	r.lastName = name             // escapes, as prep's addr does
	s.off = uint64(uintptr(name)) // addr2
	s.fileIndex = n               // addr_len, its low 16 bits
	return s
}

// PrepSendmsg queues a sendmsg(2) of msg on the socket fd with the MSG_*
// flags msgFlags: one send of several slices, each an iovec of msg.
func (r *Ring) PrepSendmsg(fd int, msg *unix.Msghdr, msgFlags int, userData uint64) *SQE {
	s := r.prep(opSendmsg, fd, unsafe.Pointer(msg), 1, userData)
	s.opFlags = uint32(msgFlags)
	return s
}

// PrepRead queues a read(2) of fd into p at the file's current position. A
// read of an eventfd completes when another goroutine writes to it, which
// wakes a loop waiting in SubmitAndWait. Open the eventfd blocking: some
// kernels complete a read of a non-blocking one at once with EAGAIN.
func (r *Ring) PrepRead(fd int, p []byte, userData uint64) *SQE {
	s := r.prep(opRead, fd, unsafe.Pointer(unsafe.SliceData(p)), len(p), userData)
	s.off = ^uint64(0) // -1: the current position
	return s
}

// PrepConnect queues a connect(2) of the socket fd to the address sa
// points at, n bytes long, which must stay in place until the completion
// arrives. Res is 0 once connected, or the negated error. A non-blocking
// socket is fine: the kernel waits for the handshake itself.
func (r *Ring) PrepConnect(fd int, sa unsafe.Pointer, n uint32, userData uint64) *SQE {
	s := r.prep(opConnect, fd, sa, 0, userData)
	s.off = uint64(n) // the address's length goes where a read's offset would
	return s
}

// PrepCancel queues the cancellation of every operation in flight that
// was prepared with the user data target. Each cancelled operation posts a
// final completion with -ECANCELED; the cancellation's own completion has
// the number cancelled in Res.
func (r *Ring) PrepCancel(target, userData uint64) *SQE {
	s := r.prep(opAsyncCancel, -1, nil, 0, userData)
	s.addr = target
	s.opFlags = cancelAll
	return s
}

// PrepCancelFd is PrepCancel for every operation in flight on fd.
// Closing a socket does not end the operations armed on it, since they
// hold a reference to it: cancel them first.
func (r *Ring) PrepCancelFd(fd int, userData uint64) *SQE {
	s := r.prep(opAsyncCancel, fd, nil, 0, userData)
	s.opFlags = cancelFD | cancelAll
	return s
}

// PrepClose queues a close(2) of fd.
func (r *Ring) PrepClose(fd int, userData uint64) *SQE {
	return r.prep(opClose, fd, nil, 0, userData)
}

// PrepTimeout queues a timer: one completion, with ETIME, after d. It
// lets a loop that waits without a limit be woken for work that falls due
// only now and then, rather than cap every wait.
func (r *Ring) PrepTimeout(d time.Duration, userData uint64) *SQE {
	if r.timeouts == nil {
		r.timeouts = make([]kernelTimespec, len(r.sqes))
	}
	s := r.prep(opTimeout, -1, nil, 1, userData)
	if s == &r.spare {
		return s // it goes nowhere (see next)
	}
	// The slot the entry went into, whose duration the kernel reads when
	// it takes the entry.
	ts := &r.timeouts[(r.tail-1)&r.sqMask]
	*ts = kernelTimespec{sec: int64(d / time.Second), nsec: int64(d % time.Second)}
	s.addr = uint64(uintptr(unsafe.Pointer(ts)))
	return s
}

// PrepPollAdd queues a wait for fd to be ready for events (POLLIN,
// POLLOUT, as unix.POLL* values): one completion, whose Res holds the
// events that are ready, once any is.
func (r *Ring) PrepPollAdd(fd int, events uint32, userData uint64) *SQE {
	s := r.prep(opPollAdd, fd, nil, 0, userData)
	s.opFlags = events // poll32_events; the kernel's layout on little-endian machines
	return s
}

// PrepPollMultishot is PrepPollAdd that stays armed: each wake-up of fd
// that finds events ready posts a completion while More stays true. Like
// an edge-triggered epoll, it reports each new readiness without the
// caller consuming it, so an eventfd written to wake a loop is never read.
func (r *Ring) PrepPollMultishot(fd int, events uint32, userData uint64) *SQE {
	s := r.PrepPollAdd(fd, events, userData)
	s.len = pollMultishot
	return s
}

// SetRecvLimit caps the bytes a multishot receive takes, over all its
// completions: once it has received n, its last completion has More
// false, and it must be prepared again for more. Without a cap, a
// multishot receive on a socket with a backlog fills every free buffer of
// its ring before the caller sees its first completion. Kernels that
// predate the cap fail such a receive with EINVAL (see RecvLimitWorks).
func (s *SQE) SetRecvLimit(n uint32) { s.fileIndex = n }
