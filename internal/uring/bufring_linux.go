package uring

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A BufRing is a group of equal-sized buffers registered with a Ring
// (IORING_REGISTER_PBUF_RING): the kernel takes one when data arrives for a
// multishot receive, not when the receive is armed, so an idle connection
// holds no buffer. The caller gives each buffer back with Recycle once it
// is done with the bytes.
//
// The buffers are one anonymous memory mapping, out of the garbage
// collector's reach, and are touched (and so resident) only once used.
type BufRing struct {
	ring    *Ring
	group   uint16
	size    int
	mask    uint16
	tail    uint16     // buffers put in the ring, ever (wrapping)
	shown   uint16     // the tail as the kernel last saw it
	slots   []bufEntry // the ring the kernel takes buffers from
	slotMem []byte     // the mapping of slots
	mem     []byte     // the buffers
}

// NewBufRing registers count buffers of size bytes with r as buffer group
// group and hands them all to the kernel. count must be a power of two no
// larger than 32768. The BufRing lives as long as r: Close releases it.
func NewBufRing(r *Ring, group uint16, count, size int) (*BufRing, error) {
	if count < 1 || count > 1<<15 || count&(count-1) != 0 || size < 1 || size > math.MaxInt32/count {
		return nil, fmt.Errorf("uring: buffer ring of %d buffers of %d bytes: %w", count, size, os.ErrInvalid)
	}
	b := &BufRing{ring: r, group: group, size: size, mask: uint16(count - 1)}
	var err error
	if b.slotMem, err = mapAnon(count * int(unsafe.Sizeof(bufEntry{}))); err != nil {
		return nil, err
	}
	if b.mem, err = mapAnon(count * size); err != nil {
		b.unmap()
		return nil, err
	}
	b.slots = unsafe.Slice((*bufEntry)(unsafe.Pointer(&b.slotMem[0])), count)
	reg := bufReg{
		ringAddr:    uint64(uintptr(unsafe.Pointer(&b.slotMem[0]))),
		ringEntries: uint32(count),
		bgid:        group,
	}
	if err := r.register(registerPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		b.unmap()
		return nil, fmt.Errorf("uring: registering buffer group %d: %w", group, err)
	}
	for id := range count {
		b.put(uint16(id))
	}
	b.publish()
	r.bufRings = append(r.bufRings, b)
	return b, nil
}

func mapAnon(size int) ([]byte, error) {
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("uring: %w", os.NewSyscallError("mmap", err))
	}
	return m, nil
}

// Buf returns buffer id, all size bytes of it; a completion's Res says how
// many hold data. It aliases memory the kernel writes once the buffer is
// recycled.
func (b *BufRing) Buf(id uint16) []byte {
	off := int(id) * b.size
	return b.mem[off : off+b.size : off+b.size]
}

// Recycle gives buffer id back to the kernel, which sees it from the
// ring's next Submit or SubmitAndWait: a loop that recycles many buffers a
// turn publishes them with one store. Call it once per completion that
// named the buffer, when its bytes are no longer needed, including by a
// send still in flight.
func (b *BufRing) Recycle(id uint16) { b.put(id) }

// Release gives the memory of every buffer back to the system, so that
// buffers a burst of traffic touched do not stay resident while it is
// idle. The buffers stay registered, and fill from zeroed pages as the
// kernel next uses them. Call it only while no completion's buffer is
// held, and only on a ring whose receives run inside its own
// io_uring_enter (SetupDeferTaskrun): a receive running elsewhere could
// write to a page as it is dropped.
func (b *BufRing) Release() error {
	if err := unix.Madvise(b.mem, unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("uring: releasing buffer group %d: %w", b.group, os.NewSyscallError("madvise", err))
	}
	return nil
}

// Resident reports how many pages of the buffers' memory are in memory
// (mincore), for tests and diagnostics of Release.
func (b *BufRing) Resident() (int, error) {
	page := os.Getpagesize()
	vec := make([]byte, (len(b.mem)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b.mem[0])), uintptr(len(b.mem)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, fmt.Errorf("uring: %w", os.NewSyscallError("mincore", errno))
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, nil
}

// put writes buffer id into the next free slot, which the kernel does not
// read until publish moves the tail past it.
func (b *BufRing) put(id uint16) {
	s := &b.slots[b.tail&b.mask]
	s.addr = uint64(uintptr(unsafe.Pointer(&b.Buf(id)[0])))
	s.len = uint32(b.size)
	s.bid = id
	b.tail++
}

// publish stores the tail, a 16-bit word that overlays resv of the first
// slot. sync/atomic has no 16-bit store, so it stores the aligned 32-bit
// word that holds the tail and the first slot's bid, rewriting that bid
// unchanged. The store is a release: the kernel loads the tail with
// acquire before it reads a slot, so it sees every slot put before.
func (b *BufRing) publish() {
	if b.shown == b.tail {
		return
	}
	b.shown = b.tail
	var word uint32
	halves := (*[2]uint16)(unsafe.Pointer(&word)) // in memory order, whatever the byte order
	halves[0] = b.slots[0].bid
	halves[1] = b.tail
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.slots[0].bid)), word)
}

// release unregisters the group and unmaps its memory. If the kernel will
// not unregister it, the memory stays mapped: the kernel might still write
// to it.
func (b *BufRing) release() error {
	reg := bufReg{bgid: b.group}
	if err := b.ring.register(unregisterPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		return fmt.Errorf("unregistering buffer group %d: %w", b.group, err)
	}
	return b.unmap()
}

func (b *BufRing) unmap() error {
	var errs []error
	for _, m := range [][]byte{b.mem, b.slotMem} {
		if m != nil {
			errs = append(errs, os.NewSyscallError("munmap", unix.Munmap(m)))
		}
	}
	b.mem, b.slotMem, b.slots = nil, nil, nil
	return errors.Join(errs...)
}
