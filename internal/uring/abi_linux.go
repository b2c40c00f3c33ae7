package uring

// The kernel's io_uring ABI, as declared in include/uapi/linux/io_uring.h:
// the structures shared with the kernel, laid out byte for byte as it
// expects them, and the constants this package uses.

// params is struct io_uring_params, filled in by io_uring_setup.
type params struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFD         uint32
	resv         [3]uint32
	sqOff        sqringOffsets
	cqOff        cqringOffsets
}

// sqringOffsets is struct io_sqring_offsets: where each field of the
// submission ring lies in its mapping.
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// cqringOffsets is struct io_cqring_offsets: where each field of the
// completion ring lies in its mapping.
type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// getEventsArg is struct io_uring_getevents_arg, passed to io_uring_enter
// with IORING_ENTER_EXT_ARG to bound a wait. minWaitUsec was padding
// before Linux 6.12 (IORING_FEAT_MIN_TIMEOUT), which must be zero there.
type getEventsArg struct {
	sigmask     uint64
	sigmaskSz   uint32
	minWaitUsec uint32
	ts          uint64 // address of a struct __kernel_timespec
}

// bufReg is struct io_uring_buf_reg, the argument of
// IORING_REGISTER_PBUF_RING and IORING_UNREGISTER_PBUF_RING.
type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	pad         uint16
	resv        [3]uint64
}

// bufEntry is struct io_uring_buf, one slot of a provided-buffer ring. The
// ring's tail overlays resv of the first slot.
type bufEntry struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// probeOp is struct io_uring_probe_op.
type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

// probeOps is struct io_uring_probe followed by room for every opcode.
type probeOps struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
	ops    [256]probeOp
}

// Features the kernel reports in params.features (IORING_FEAT_*).
const (
	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1
	featFastPoll   = 1 << 5
	featExtArg     = 1 << 8
	featCQESkip    = 1 << 11
	featMinTimeout = 1 << 15
)

// Offsets that select what io_uring's mmap maps (IORING_OFF_*).
const (
	offSQRing = 0
	offSQEs   = 0x10000000
)

// Flags of the submission ring's flags word (IORING_SQ_*).
const (
	sqCQOverflow = 1 << 1
	sqTaskrun    = 1 << 2
)

// io_uring_enter flags (IORING_ENTER_*).
const (
	enterGetEvents = 1 << 0
	enterExtArg    = 1 << 3
)

// io_uring_register opcodes (IORING_REGISTER_*).
const (
	registerProbe      = 8
	registerPbufRing   = 22
	unregisterPbufRing = 23
	probeOpSupported   = 1 << 0 // IO_URING_OP_SUPPORTED in probeOp.flags
)

// Operations (IORING_OP_*).
const (
	opPollAdd     = 6
	opSendmsg     = 9
	opRecvmsg     = 10
	opTimeout     = 11
	opAccept      = 13
	opAsyncCancel = 14
	opConnect     = 16
	opClose       = 19
	opRead        = 22
	opSend        = 26
	opRecv        = 27
	opSendZC      = 47
)

// Per-operation flags.
const (
	sqeBufferSelect = 1 << 5 // IOSQE_BUFFER_SELECT
	acceptMultishot = 1 << 0 // IORING_ACCEPT_MULTISHOT, in ioprio
	recvMultishot   = 1 << 1 // IORING_RECV_MULTISHOT, in ioprio
	cancelAll       = 1 << 0 // IORING_ASYNC_CANCEL_ALL
	cancelFD        = 1 << 1 // IORING_ASYNC_CANCEL_FD
	pollMultishot   = 1 << 0 // IORING_POLL_ADD_MULTI, in len
)

// Completion flags (IORING_CQE_F_*).
const (
	cqeFBuffer     = 1 << 0
	cqeFMore       = 1 << 1
	cqeBufferShift = 16 // IORING_CQE_BUFFER_SHIFT: the buffer ID is flags>>16
)

// kernelTimespec is struct __kernel_timespec: 64-bit fields on every
// architecture, unlike unix.Timespec on 32-bit ones.
type kernelTimespec struct {
	sec  int64
	nsec int64
}
