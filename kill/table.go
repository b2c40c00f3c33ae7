// Package kill implements the kill slot table: a fixed-capacity registry of
// live connections in which any goroutine can mark a connection for a forced
// reset, and which its owning event loop then acts on.
//
// Each connection claims a slot when it is accepted and releases it when it
// closes. Its ConnID packs the slot's index with the slot's generation, which
// changes on every release, so an ID kept after its connection closed can
// never reach the next connection in that slot. Kill marks a slot with one
// compare-and-swap and returns the owner and handle recorded at Claim: the
// engine wakes that owner (an event loop) with the ConnID, and the loop finds
// the connection by the handle (its descriptor, say), checks the ID, and
// resets it. The table knows nothing of loops or connections beyond those
// two numbers.
//
// Claim, Release and Kill take no locks. Free slots form a lock-free stack
// shared by every loop, its head tagged against ABA, so that capacity is
// global however connections spread over loops; the one contended word costs
// a compare-and-swap per accept and per close, small beside the system calls
// around them. The slots hold no pointers, so the garbage collector does not
// scan them.
//
// The table is also the engine's registry: Len counts live connections and
// Range visits them without stopping anyone. Sources counts connections per
// client address for per-source limits.
package kill

import (
	"errors"
	"math"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// ErrFull is returned by Claim when every slot is in use.
var ErrFull = errors.New("kill: table full")

// ConnID names a connection for its whole life: its slot's index in the low
// 32 bits and the slot's generation in the high 32. Generations start at 1,
// so the zero ConnID is never valid, and a slot must be reused 2^32-1 times
// before an old ID could name a new connection.
type ConnID uint64

// Slot returns the index of the slot id names, in [0, Cap), for callers
// that keep per-connection state in a slice indexed by slot.
func (id ConnID) Slot() int { return int(uint32(id)) }

// The state word of a slot: its generation in the high 32 bits, as in a
// ConnID, and flags in the low ones. A live slot whose state equals
// gen<<32|live is claimed and not yet killed.
const (
	live    = 1 << 0
	killed  = 1 << 1
	genMask = math.MaxUint32 << 32
	genOne  = 1 << 32
)

// slot is one entry of the table. Its fields are atomic because Kill and
// Range read them while Claim and Release write them.
type slot struct {
	state  atomic.Uint64
	handle atomic.Uint64
	owner  atomic.Int32
	next   atomic.Uint32 // while free: index+1 of the next free slot, 0 at the bottom
}

// Table is the kill slot table. Make one with New; its methods are safe for
// concurrent use.
type Table struct {
	slots []slot
	_     cpu.CacheLinePad // keeps the read-mostly header off the contended line below
	free  atomic.Uint64    // top of the free stack: tag<<32 | index+1, 0 when empty
	live  atomic.Int64
}

// New returns a table of capacity slots, all free. It panics unless
// 0 < capacity < 2^32.
func New(capacity int) *Table {
	if capacity <= 0 || uint64(capacity) > math.MaxUint32 {
		panic("kill: capacity out of range")
	}
	t := &Table{slots: make([]slot, capacity)}
	for i := range t.slots {
		t.slots[i].state.Store(genOne)
		if i+1 < capacity {
			t.slots[i].next.Store(uint32(i + 2))
		}
	}
	t.free.Store(1)
	return t
}

// Cap returns the number of slots.
func (t *Table) Cap() int { return len(t.slots) }

// Len returns the number of claimed slots.
func (t *Table) Len() int { return int(t.live.Load()) }

// Claim takes a free slot for a new connection and returns its ID, or
// ErrFull. Kill returns owner, a small number such as the index of the loop
// that owns the connection, and handle, which that loop finds it by.
func (t *Table) Claim(owner int, handle uint64) (ConnID, error) {
	i, ok := t.pop()
	if !ok {
		return 0, ErrFull
	}
	s := &t.slots[i]
	s.owner.Store(int32(owner))
	s.handle.Store(handle)
	gen := s.state.Load() // a free slot's state changes only here and in Release
	s.state.Store(gen | live)
	t.live.Add(1)
	return ConnID(gen | uint64(i)), nil
}

// Release frees the slot of id, whether killed or not, so that id and every
// copy of it go stale. It reports whether id was live: false when it was
// already released.
func (t *Table) Release(id ConnID) bool {
	s := t.slot(id)
	if s == nil {
		return false
	}
	for {
		old := s.state.Load()
		if old&^killed != liveState(id) {
			return false
		}
		gen := old&genMask + genOne
		if gen == 0 {
			gen = genOne
		}
		if s.state.CompareAndSwap(old, gen) {
			break
		}
		// A Kill set the killed bit in between: try again.
	}
	t.live.Add(-1)
	t.push(uint32(id.Slot()))
	return true
}

// Kill marks the connection id for a reset, with one compare-and-swap, and
// returns the owner and handle given to Claim so the caller can tell that
// owner. It reports false, doing nothing, when id is stale or already
// killed, so that of many concurrent Kills of one connection exactly one
// succeeds. The owner should check the ID against the connection it finds
// by handle: if the connection closed just after the mark, the slot may hold
// a newer one.
func (t *Table) Kill(id ConnID) (owner int, handle uint64, ok bool) {
	s := t.slot(id)
	if s == nil || !s.state.CompareAndSwap(liveState(id), liveState(id)|killed) {
		return 0, 0, false
	}
	return int(s.owner.Load()), s.handle.Load(), true
}

// Killed reports whether id is live and has been killed.
func (t *Table) Killed(id ConnID) bool {
	s := t.slot(id)
	return s != nil && s.state.Load() == liveState(id)|killed
}

// Range calls yield with the ID and owner of each live connection until
// yield returns false. It locks nothing and stops no one: a connection live
// throughout the call is visited once; one claimed or released meanwhile
// may or may not be. Range is an iterator, so it can also be ranged over.
func (t *Table) Range(yield func(id ConnID, owner int) bool) {
	for i := range t.slots {
		s := &t.slots[i]
		state := s.state.Load()
		if state&live == 0 {
			continue
		}
		owner := s.owner.Load()
		if s.state.Load()&genMask != state&genMask {
			continue // released meanwhile, so owner may be a newer connection's
		}
		if !yield(ConnID(state&genMask|uint64(i)), int(owner)) {
			return
		}
	}
}

// slot returns the slot id names, or nil when its index is out of range.
func (t *Table) slot(id ConnID) *slot {
	if i := id.Slot(); i < len(t.slots) {
		return &t.slots[i]
	}
	return nil
}

// liveState returns the state of id's slot while id is live and not killed.
func liveState(id ConnID) uint64 { return uint64(id)&genMask | live }

// pop takes a slot off the free stack. Each change of the top bumps its tag,
// so a pop that read the top before other goroutines popped that slot and
// pushed it back fails its compare-and-swap instead of installing a stale
// next.
func (t *Table) pop() (uint32, bool) {
	for {
		top := t.free.Load()
		i := uint32(top)
		if i == 0 {
			return 0, false
		}
		next := t.slots[i-1].next.Load()
		if t.free.CompareAndSwap(top, retop(top, next)) {
			return i - 1, true
		}
	}
}

// push puts slot i on the free stack.
func (t *Table) push(i uint32) {
	s := &t.slots[i]
	for {
		top := t.free.Load()
		s.next.Store(uint32(top))
		if t.free.CompareAndSwap(top, retop(top, i+1)) {
			return
		}
	}
}

// retop returns the top of the free stack that replaces top to make slot
// index1-1 the new top slot: the tag, in the high 32 bits, goes up by one.
func retop(top uint64, index1 uint32) uint64 {
	return (top>>32+1)<<32 | uint64(index1)
}
