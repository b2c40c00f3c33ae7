// Package wheel implements a hierarchical hashed timing wheel for one event
// loop.
//
// A Wheel holds timers, each a deadline and a small handle (a descriptor, a
// slot index, a connection ID) that the loop uses to find what timed out.
// Insert, Cancel and Extend are O(1) and allocate nothing once the wheel has
// grown to its working size; Advance costs one step per non-empty slot it
// passes plus one per timer it fires or moves. A Wheel is owned by one
// goroutine and has no locks.
//
// Time is int64 nanoseconds on a monotonic clock the caller reads, once per
// loop iteration rather than once per timer; the wheel never reads the clock
// itself. Ticks are counted from the time given to New. Advance fires a timer
// only once its deadline has passed, and no later than the first Advance
// whose time reaches the deadline rounded up to a tick: never early, and at
// most one tick late when Advance is called on time. The range is every
// int64 time: the levels of the wheel cover them all, and a timer far in the
// future moves to finer levels as its time approaches. (A deadline in the
// last partial tick before math.MaxInt64, which no Advance could reach the
// end of, counts as due at the start of that tick.)
//
// Idle timeouts are extended lazily. Moving a deadline later with Extend costs
// one store: the timer stays where it is, and when its old slot comes due,
// Advance sees the new deadline and files the timer again instead of firing
// it. A connection that sees traffic on every read therefore costs the wheel
// almost nothing until it goes quiet.
//
// Timers live in one slice indexed by int32 and hold no pointers, so the
// garbage collector does not scan them however many there are.
package wheel

import (
	"math"
	"math/bits"
	"time"
)

// DefaultTick is the resolution New uses when given none. Ten milliseconds
// suits idle and header timeouts, which are seconds long, and lets a loop
// with many timers wake at most a hundred times a second for them.
const DefaultTick = 10 * time.Millisecond

// Each level of the wheel has 1<<levelBits slots, one per digit of a tick
// number written in base 1<<levelBits; level L holds the timers whose expiry
// tick first differs from the current tick in digit L. Eleven levels of 64
// slots cover every uint64 tick, so no deadline is out of range.
const (
	levelBits  = 6
	levelSlots = 1 << levelBits
	levels     = (64 + levelBits - 1) / levelBits
	slotMask   = levelSlots - 1
)

// none marks the end of a list of timers.
const none = -1

// Timer identifies a timer in the Wheel that made it. The generation makes a
// Timer kept after its timer fired or was cancelled harmless: the wheel
// ignores it even when the timer's storage has been reused. The zero Timer
// is never valid, so it can stand for "no timer".
type Timer struct {
	index int32
	gen   uint32
}

// timer is one entry of the slab. A live timer is on the list of its slot;
// a free one is on the free list, linked through next.
type timer struct {
	deadline int64
	handle   uint64
	next     int32
	prev     int32
	slot     int32
	gen      uint32
}

// Wheel is a hierarchical hashed timing wheel. Make one with New; it is not
// safe for use by more than one goroutine at a time.
type Wheel struct {
	tick   uint64 // nanoseconds per tick
	origin int64  // the time of tick 0
	end    int64  // the time of the last tick before math.MaxInt64
	now    int64  // the latest time given to Advance
	cur    uint64 // the last tick Advance processed

	timers []timer
	free   int32 // head of the free list, linked through timer.next
	live   int

	heads    [levels * levelSlots]int32 // first timer of each slot
	occupied [levels]uint64             // bit s of occupied[L]: slot s of level L is not empty
	nonEmpty uint16                     // bit L: occupied[L] != 0
}

// New returns an empty Wheel with the given resolution whose clock starts at
// now. A tick of zero or less means DefaultTick.
func New(tick time.Duration, now int64) *Wheel {
	if tick <= 0 {
		tick = DefaultTick
	}
	w := &Wheel{tick: uint64(tick), origin: now, now: now, free: none}
	w.end = w.timeOf(w.ticks(math.MaxInt64))
	for i := range w.heads {
		w.heads[i] = none
	}
	return w
}

// Len returns the number of timers in the wheel.
func (w *Wheel) Len() int { return w.live }

// Insert adds a timer that Advance fires with handle once the clock reaches
// deadline. A deadline already past fires at the next tick.
func (w *Wheel) Insert(deadline int64, handle uint64) Timer {
	i := w.alloc()
	t := &w.timers[i]
	t.deadline = deadline
	t.handle = handle
	w.link(i, w.expiry(deadline))
	w.live++
	return Timer{index: i, gen: t.gen}
}

// Cancel removes t from the wheel so that it never fires. It reports whether
// t was still in the wheel: false for the zero Timer and for one that has
// already fired or been cancelled.
func (w *Wheel) Cancel(t Timer) bool {
	if !w.valid(t) {
		return false
	}
	w.unlink(t.index)
	w.release(t.index)
	return true
}

// Extend moves the deadline of t to deadline if that is later, and reports
// whether t is still in the wheel. It is one store, cheap enough for every
// read of an idle-timed connection: the timer stays in its slot, and when
// that slot comes due Advance files it again instead of firing it. To bring
// a deadline earlier, Cancel the timer and Insert another.
func (w *Wheel) Extend(t Timer, deadline int64) bool {
	if !w.valid(t) {
		return false
	}
	tm := &w.timers[t.index]
	tm.deadline = max(tm.deadline, deadline)
	return true
}

// Advance moves the wheel's clock to now and calls fire with the handle of
// every timer whose deadline has passed, removing each before the call, so
// fire may Insert, Extend or Cancel timers (its own is already gone). Timers
// whose deadline Extend moved later are refiled, not fired. A now earlier
// than the last one is ignored.
func (w *Wheel) Advance(now int64, fire func(handle uint64)) {
	if now <= w.now {
		return
	}
	w.now = now
	target := w.ticks(now)
	for {
		tick, slot, ok := w.nextSlot()
		if !ok || tick > target {
			break
		}
		w.cur = tick
		w.expire(slot, fire)
	}
	w.cur = target
}

// Next returns the earliest time at which Advance may have a timer to fire,
// for use as the deadline of the loop's wait, and false if the wheel is
// empty. It is never later than the first timer due, and may be earlier:
// when a slot holding timers moved later or far in the future comes due,
// Advance refiles them and fires nothing.
func (w *Wheel) Next() (int64, bool) {
	tick, _, ok := w.nextSlot()
	if !ok {
		return 0, false
	}
	return w.timeOf(tick), true
}

// valid reports whether t names a timer in the wheel.
func (w *Wheel) valid(t Timer) bool {
	return uint(t.index) < uint(len(w.timers)) && w.timers[t.index].gen == t.gen
}

// alloc takes a timer from the free list, growing the slab when it is empty.
func (w *Wheel) alloc() int32 {
	if w.free == none {
		w.timers = append(w.timers, timer{gen: 1})
		return int32(len(w.timers) - 1)
	}
	i := w.free
	w.free = w.timers[i].next
	return i
}

// release puts timer i, already off its slot's list, on the free list. The
// new generation stales every Timer naming it; zero is skipped so that the
// zero Timer stays invalid.
func (w *Wheel) release(i int32) {
	t := &w.timers[i]
	t.gen++
	if t.gen == 0 {
		t.gen = 1
	}
	t.next = w.free
	w.free = i
	w.live--
}

// expiry returns the tick at which a timer with the given deadline is due:
// the deadline rounded up to a tick, and never a tick already processed.
func (w *Wheel) expiry(deadline int64) uint64 {
	deadline = min(deadline, w.end)
	if deadline <= w.now {
		return w.cur + 1
	}
	d := uint64(deadline) - uint64(w.origin) // exact: origin <= now < deadline
	t := d / w.tick
	if d%w.tick != 0 {
		t++
	}
	return t
}

// ticks returns the number of whole ticks from the origin to now.
func (w *Wheel) ticks(now int64) uint64 {
	return (uint64(now) - uint64(w.origin)) / w.tick
}

// timeOf returns the time of tick t, which is no later than w.end.
func (w *Wheel) timeOf(t uint64) int64 {
	return int64(uint64(w.origin) + t*w.tick)
}

// slotOf returns the slot for a timer due at tick t: on the level of the
// highest digit in which t differs from the current tick, at t's digit there.
// That slot comes due at the first tick whose digits from that level up
// equal t's, which is no later than t and later than the current tick.
func (w *Wheel) slotOf(t uint64) int32 {
	level := (bits.Len64(t^w.cur) - 1) / levelBits
	digit := t >> (level * levelBits) & slotMask
	return int32(level*levelSlots) + int32(digit)
}

// link files timer i in the slot for tick t.
func (w *Wheel) link(i int32, t uint64) {
	s := w.slotOf(t)
	tm := &w.timers[i]
	tm.slot = s
	tm.prev = none
	tm.next = w.heads[s]
	if tm.next != none {
		w.timers[tm.next].prev = i
	}
	w.heads[s] = i
	level := s / levelSlots
	w.occupied[level] |= 1 << (s & slotMask)
	w.nonEmpty |= 1 << level
}

// unlink takes timer i off its slot's list.
func (w *Wheel) unlink(i int32) {
	tm := &w.timers[i]
	if tm.next != none {
		w.timers[tm.next].prev = tm.prev
	}
	if tm.prev != none {
		w.timers[tm.prev].next = tm.next
		return
	}
	w.heads[tm.slot] = tm.next
	if tm.next == none {
		level := tm.slot / levelSlots
		w.occupied[level] &^= 1 << (tm.slot & slotMask)
		if w.occupied[level] == 0 {
			w.nonEmpty &^= 1 << level
		}
	}
}

// nextSlot returns the slot that comes due first and the tick at which it
// does, after the current one. Every timer on level L shares the current
// tick's digits above L and has a larger digit L, so the lowest non-empty
// level holds that slot, at its lowest occupied digit, and no slot of
// another level comes due at the same tick.
func (w *Wheel) nextSlot() (tick uint64, slot int32, ok bool) {
	if w.nonEmpty == 0 {
		return 0, 0, false
	}
	level := bits.TrailingZeros16(w.nonEmpty)
	digit := bits.TrailingZeros64(w.occupied[level])
	shift := level * levelBits
	above := w.cur >> (shift + levelBits) << (shift + levelBits) // 0 when the shift passes 63
	return above | uint64(digit)<<shift, int32(level*levelSlots + digit), true
}

// expire empties slot s, firing the timers that are due and refiling the
// rest, whose deadlines lie beyond the current tick and so never land in s
// again. It takes one timer at a time because fire may cancel others.
func (w *Wheel) expire(s int32, fire func(handle uint64)) {
	for w.heads[s] != none {
		i := w.heads[s]
		w.unlink(i)
		tm := &w.timers[i]
		if min(tm.deadline, w.end) > w.now {
			w.link(i, w.expiry(tm.deadline))
			continue
		}
		handle := tm.handle
		w.release(i)
		fire(handle)
	}
}
