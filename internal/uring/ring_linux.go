package uring

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/syscount"
)

// SetupFlags are IORING_SETUP_* flags: how the kernel set up a ring.
type SetupFlags uint32

// The setup flags New asks for.
const (
	SetupCQSize       SetupFlags = 1 << 3  // the completion queue has a size of its own
	SetupClamp        SetupFlags = 1 << 4  // oversized queues are clamped, not refused
	SetupSubmitAll    SetupFlags = 1 << 7  // an entry that fails does not stop the rest of a submission
	SetupCoopTaskrun  SetupFlags = 1 << 8  // completion work runs when the thread enters the kernel, without interrupting it
	SetupTaskrunFlag  SetupFlags = 1 << 9  // the kernel flags pending completion work in the submission ring
	SetupSingleIssuer SetupFlags = 1 << 12 // one thread submits, so the kernel takes fewer locks
	SetupDeferTaskrun SetupFlags = 1 << 13 // completion work runs only when the thread waits for completions
)

var setupNames = []struct {
	flag SetupFlags
	name string
}{
	{SetupCQSize, "CQSIZE"},
	{SetupClamp, "CLAMP"},
	{SetupSubmitAll, "SUBMIT_ALL"},
	{SetupCoopTaskrun, "COOP_TASKRUN"},
	{SetupTaskrunFlag, "TASKRUN_FLAG"},
	{SetupSingleIssuer, "SINGLE_ISSUER"},
	{SetupDeferTaskrun, "DEFER_TASKRUN"},
}

// String names the flags as the kernel does, without their IORING_SETUP_
// prefix, joined by "|".
func (f SetupFlags) String() string {
	var b strings.Builder
	for _, n := range setupNames {
		if f&n.flag == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(n.name)
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

// setupTiers are the task-running modes New tries, best first: deferred
// task work (Linux 6.1) runs completions only inside the loop's own
// io_uring_enter, cooperative task work (5.19) runs them at the thread's
// next system call without a signal, and the plain mode interrupts the
// thread.
var setupTiers = []SetupFlags{
	SetupSingleIssuer | SetupDeferTaskrun | SetupTaskrunFlag,
	SetupCoopTaskrun | SetupTaskrunFlag,
	0,
}

// A Ring is an io_uring instance: a submission queue the loop fills and the
// kernel drains, and a completion queue the kernel fills and the loop
// drains, both in memory shared with the kernel.
//
// A Ring is used by one goroutine, locked to its OS thread, from New to
// Close.
type Ring struct {
	fd       int
	setup    SetupFlags
	features uint32
	ringMem  []byte // the submission and completion rings, one mapping
	sqeMem   []byte // the submission entries

	// The submission queue. The kernel writes sqHead and reads sqTail;
	// tail counts the entries prepared, which the kernel sees only once
	// publish stores it in sqTail.
	sqHead  *uint32
	sqTail  *uint32
	sqFlags *uint32
	sqMask  uint32
	sqes    []SQE
	tail    uint32

	// The completion queue. The kernel writes cqTail and reads cqHead.
	cqHead *uint32
	cqTail *uint32
	cqMask uint32
	cqes   []CQE

	bufRings []*BufRing

	// The wait timeout of SubmitAndWait, kept here so the kernel reads it
	// from memory that neither moves nor needs allocating per call.
	arg getEventsArg
	ts  kernelTimespec
	// held: the waits are held ones (SetHeld).
	held bool

	// The durations of timeouts, by submission slot: the kernel reads one
	// when it takes the entry in.
	timeouts []kernelTimespec

	lastAddr unsafe.Pointer // see prep
	lastName unsafe.Pointer // see PrepSendTo

	// err is the error of a submission forced by a full queue; see next.
	err   error
	spare SQE
}

// New creates a ring with room for entries submissions and cqEntries
// completions (0 asks for the kernel's default, twice entries; otherwise
// it must be at least entries). The kernel rounds both up to powers of two
// and clamps them to its limits.
//
// It asks for IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN, then
// for IORING_SETUP_COOP_TASKRUN, then for neither, and Setup reports which
// the kernel took. With the first, the ring is bound to the calling OS
// thread: call New from the goroutine that will use the ring, after
// runtime.LockOSThread.
//
// The error wraps ErrUnsupported when the kernel has no usable io_uring.
func New(entries, cqEntries uint32) (*Ring, error) {
	if entries == 0 || cqEntries != 0 && cqEntries < entries {
		return nil, fmt.Errorf("uring: ring of %d submissions and %d completions: %w", entries, cqEntries, os.ErrInvalid)
	}
	base := SetupSubmitAll | SetupClamp
	if cqEntries > 0 {
		base |= SetupCQSize
	}
	var err error
	for _, tier := range setupTiers {
		p := params{flags: uint32(base | tier), cqEntries: cqEntries}
		var fd int
		if fd, err = setup(entries, &p); err == nil {
			return newRing(fd, &p)
		}
		if !errors.Is(err, unix.EINVAL) {
			break
		}
	}
	err = os.NewSyscallError("io_uring_setup", err)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return nil, fmt.Errorf("uring: %w", err)
}

func setup(entries uint32, p *params) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// newRing maps the rings of the io_uring instance fd, which it owns from
// then on.
func newRing(fd int, p *params) (*Ring, error) {
	r := &Ring{fd: fd, setup: SetupFlags(p.flags), features: p.features}
	if err := r.mapRings(p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	if p.features&featSingleMmap == 0 {
		return fmt.Errorf("%w: kernel lacks IORING_FEAT_SINGLE_MMAP", ErrUnsupported)
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*uint32(unsafe.Sizeof(CQE{})))
	var err error
	if r.ringMem, err = mapRing(r.fd, offSQRing, int(size)); err != nil {
		return err
	}
	if r.sqeMem, err = mapRing(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{}))); err != nil {
		return err
	}
	r.sqHead = r.word(p.sqOff.head)
	r.sqTail = r.word(p.sqOff.tail)
	r.sqFlags = r.word(p.sqOff.flags)
	r.sqMask = *r.word(p.sqOff.ringMask)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	// The kernel finds the n-th submission at sqes[array[n&mask]]. Entries
	// are used in ring order here, so the indirection is set to the
	// identity once and never touched again.
	array := unsafe.Slice(r.word(p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.cqHead = r.word(p.cqOff.head)
	r.cqTail = r.word(p.cqOff.tail)
	r.cqMask = *r.word(p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(r.word(p.cqOff.cqes))), p.cqEntries)
	r.arg.ts = uint64(uintptr(unsafe.Pointer(&r.ts)))
	return nil
}

func mapRing(fd int, offset int64, size int) ([]byte, error) {
	b, err := unix.Mmap(fd, offset, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("uring: %w", os.NewSyscallError("mmap", err))
	}
	return b, nil
}

// word returns the 32-bit word at offset off of the ring mapping.
func (r *Ring) word(off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.ringMem[off]))
}

// Setup reports the flags the kernel set the ring up with.
func (r *Ring) Setup() SetupFlags { return r.setup }

// Close releases the ring and the buffer rings registered with it; call it
// once, on the ring's thread. Operations still in flight end with the ring;
// their memory must stay valid until Close returns. Called on another
// thread, Close cannot unregister the buffer rings and leaves their memory
// mapped, since the kernel might still write to it.
func (r *Ring) Close() error {
	var errs []error
	for _, b := range r.bufRings {
		errs = append(errs, b.release())
	}
	for _, m := range [][]byte{r.sqeMem, r.ringMem} {
		if m != nil {
			errs = append(errs, os.NewSyscallError("munmap", unix.Munmap(m)))
		}
	}
	errs = append(errs, os.NewSyscallError("close", unix.Close(r.fd)))
	// Drop every pointer into the unmapped memory: were the runtime to map
	// its heap there later, the collector would take them for bad pointers.
	*r = Ring{fd: -1}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("uring: closing ring: %w", err)
	}
	return nil
}

// next returns a zeroed submission entry for the caller to fill in. When
// the queue is full it submits what it holds first, so no operation is
// ever dropped. If that submission fails, the ring can take nothing more:
// next records the error for Submit and SubmitAndWait to return, and hands
// out a spare entry that goes nowhere.
func (r *Ring) next() *SQE {
	if r.err == nil && r.full() {
		if err := r.makeRoom(); err != nil {
			r.err = fmt.Errorf("uring: submitting a full queue: %w", err)
		}
	}
	if r.err != nil {
		r.spare = SQE{}
		return &r.spare
	}
	s := &r.sqes[r.tail&r.sqMask]
	*s = SQE{}
	r.tail++
	return s
}

// full reports whether every submission slot holds an entry the kernel has
// not consumed. The load of the kernel's head is an acquire: the kernel
// stores it (with release) after it has read the entries before it, so
// the slots it frees may be overwritten once the new head is seen.
func (r *Ring) full() bool {
	return r.tail-atomic.LoadUint32(r.sqHead) == uint32(len(r.sqes))
}

func (r *Ring) makeRoom() error {
	for r.full() {
		head := atomic.LoadUint32(r.sqHead)
		if err := r.Submit(); err != nil {
			return err
		}
		if atomic.LoadUint32(r.sqHead) == head {
			return os.NewSyscallError("io_uring_enter", unix.EAGAIN)
		}
	}
	return nil
}

// publish makes the prepared entries, and the buffers recycled since the
// last time, visible to the kernel and returns how many entries it has yet
// to consume. The store of the tail is a release: the kernel loads the
// tail with acquire before it reads the entries, so it sees each entry
// complete.
func (r *Ring) publish() uint32 {
	for _, b := range r.bufRings {
		b.publish()
	}
	atomic.StoreUint32(r.sqTail, r.tail)
	return r.tail - atomic.LoadUint32(r.sqHead)
}

// Submit hands the prepared operations to the kernel without waiting. It
// also collects completions the kernel is holding back (deferred completion
// work, or completions that overflowed a full completion queue) when the
// kernel flags any; with nothing to submit and nothing flagged it makes no
// system call.
func (r *Ring) Submit() error {
	if r.err != nil {
		return r.err
	}
	pending := r.publish()
	var flags uint32
	if atomic.LoadUint32(r.sqFlags)&(sqCQOverflow|sqTaskrun) != 0 {
		flags = enterGetEvents
	}
	if pending == 0 && flags == 0 {
		return nil
	}
	return r.enter(pending, 0, flags, nil, 0)
}

// SubmitAndWait hands the prepared operations to the kernel and waits, in
// the same system call, until at least n completions are ready or timeout
// passes (a negative timeout waits without limit; zero does not wait). It
// returns nil when the wait ends early because of a timeout or a signal;
// the caller reads what is ready with ForEachCQE either way.
func (r *Ring) SubmitAndWait(n uint32, timeout time.Duration) error {
	if r.err != nil {
		return r.err
	}
	pending := r.publish()
	if timeout < 0 {
		return r.enter(pending, n, enterGetEvents, nil, 0)
	}
	r.ts = kernelTimespec{sec: int64(timeout / time.Second), nsec: int64(timeout % time.Second)}
	r.arg.minWaitUsec = 0
	return r.enter(pending, n, enterGetEvents|enterExtArg, unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg))
}

// MinWait reports whether the kernel can bound a wait in two steps, as
// SubmitAndGather does (IORING_FEAT_MIN_TIMEOUT, Linux 6.12).
func (r *Ring) MinWait() bool { return r.features&featMinTimeout != 0 }

// gatherForever stands for "no timeout" in SubmitAndGather: the kernel
// ends a two-step wait that has no timeout when its first step does.
const gatherForever = 24 * time.Hour

// SubmitAndGather is SubmitAndWait for a caller that would rather handle
// completions in batches: where the kernel can (MinWait), the wait lets
// them gather for gather from its start, returning sooner only once n are
// ready; then it returns if any is ready, or else as soon as one is.
// timeout still bounds the whole wait (negative: no bound), and so the
// gathering too when it is the shorter. gather is
// taken in whole microseconds, at least one. Where the kernel cannot, it
// is SubmitAndWait(1, timeout).
func (r *Ring) SubmitAndGather(n uint32, timeout, gather time.Duration) error {
	if r.err != nil {
		return r.err
	}
	if !r.MinWait() {
		return r.SubmitAndWait(1, timeout)
	}
	pending := r.publish()
	if timeout < 0 {
		timeout = gatherForever
	}
	// The kernel looks at the timeout only once the gathering time is
	// over: gathering for longer would overrun it.
	gather = min(gather, timeout)
	r.ts = kernelTimespec{sec: int64(timeout / time.Second), nsec: int64(timeout % time.Second)}
	r.arg.minWaitUsec = uint32(min(max(gather/time.Microsecond, 1), math.MaxUint32))
	return r.enter(pending, n, enterGetEvents|enterExtArg, unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg))
}

// SetHeld makes the waits of SubmitAndWait and SubmitAndGather held ones,
// or, with false, ordinary ones again. A held wait is made as a raw system
// call, without telling the Go runtime the thread is in one: the goroutine
// keeps its P through it, as a running goroutine would, so the runtime's
// sysmon does not retake the P in the middle of the wait (and wake another
// thread to hold it). Make only short waits held: no other goroutine runs
// on that P meanwhile, and the runtime stops it, for a collection or a
// preemption, only with a signal, which ends the wait early (it then
// returns nil, as an ordinary wait that a signal interrupts does).
func (r *Ring) SetHeld(held bool) { r.held = held }

// enter is io_uring_enter. A signal that interrupts a submission is
// retried; one that interrupts a wait ends it, like a timeout. EBUSY
// from a wait means completions overflowed and the completion queue is too
// full to take them back: the caller's next ForEachCQE makes room.
func (r *Ring) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) error {
	for {
		syscount.Inc()
		call := unix.Syscall6
		if r.held && minComplete > 0 {
			call = unix.RawSyscall6
		}
		_, _, errno := call(unix.SYS_IO_URING_ENTER, uintptr(r.fd),
			uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSize)
		switch {
		case errno == 0:
			return nil
		case errno == unix.EINTR && flags&enterGetEvents == 0:
			continue
		case errno == unix.EINTR, errno == unix.ETIME, errno == unix.EBUSY && flags&enterGetEvents != 0:
			return nil
		}
		return fmt.Errorf("uring: %w", r.syscallError("io_uring_enter", errno))
	}
}

// ForEachCQE calls fn with every ready completion, oldest first, and
// returns how many there were. Completions that arrive while it runs, such
// as those of sends fn submits, are included. fn may prepare and submit
// operations, but must not call ForEachCQE.
func (r *Ring) ForEachCQE(fn func(CQE)) int {
	n := 0
	for head := *r.cqHead; ; head++ {
		// Acquire: the kernel writes a completion, then stores the tail
		// with release, so a completion below the tail loaded here is
		// complete.
		if head == atomic.LoadUint32(r.cqTail) {
			return n
		}
		c := r.cqes[head&r.cqMask]
		// Release: the copy above is done before the kernel can see the
		// slot free and reuse it. Freeing each slot before fn runs leaves
		// the kernel room for completions that fn's submissions post.
		atomic.StoreUint32(r.cqHead, head+1)
		fn(c)
		n++
	}
}

// PeekCQEs calls fn with every completion ready now, oldest first, and
// consumes none: a ForEachCQE that follows meets them again, first and in
// the same order. It lets a caller handle one kind of completion before
// any other without copying them out. fn must not call PeekCQEs or
// ForEachCQE. Completions that arrive while it runs wait for ForEachCQE.
func (r *Ring) PeekCQEs(fn func(CQE)) int {
	head := *r.cqHead
	// Acquire, as in ForEachCQE.
	tail := atomic.LoadUint32(r.cqTail)
	for i := head; i != tail; i++ {
		fn(r.cqes[i&r.cqMask])
	}
	return int(tail - head)
}

// Overflowed reports whether the kernel holds back completions that found
// the completion queue full; Submit and SubmitAndWait move them in as room
// allows.
func (r *Ring) Overflowed() bool {
	return atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0
}

// Ready reports whether completions are ready for the next wait to
// collect at once: waiting to be consumed, or, under deferred task work,
// flagged by the kernel as work to run (IORING_SQ_TASKRUN).
func (r *Ring) Ready() bool {
	return r.Pending() || atomic.LoadUint32(r.sqFlags)&sqTaskrun != 0
}

// Pending reports whether completions wait to be consumed, in the
// completion queue or held back by the kernel.
func (r *Ring) Pending() bool {
	return *r.cqHead != atomic.LoadUint32(r.cqTail) || r.Overflowed()
}

// register is io_uring_register.
func (r *Ring) register(op uintptr, arg unsafe.Pointer, n uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), n, 0, 0)
	if errno != 0 {
		return r.syscallError("io_uring_register", errno)
	}
	return nil
}

// ErrNotOwner is wrapped by the errors of calls made on a single-issuer
// ring from a thread other than the one that created it.
var ErrNotOwner = errors.New("uring: ring used off the thread that created it")

// syscallError wraps the error of an io_uring system call, adding
// ErrNotOwner where the kernel refused a call from the wrong thread.
func (r *Ring) syscallError(name string, errno unix.Errno) error {
	err := os.NewSyscallError(name, errno)
	if errno == unix.EEXIST && r.setup&SetupSingleIssuer != 0 {
		return fmt.Errorf("%w: %w", ErrNotOwner, err)
	}
	return err
}
