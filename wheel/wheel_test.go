package wheel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = int64(time.Millisecond)

// recorder collects the handles a wheel fires.
type recorder struct{ fired []uint64 }

func (r *recorder) fire(h uint64) { r.fired = append(r.fired, h) }

// take returns the handles fired since the last call.
func (r *recorder) take() []uint64 {
	f := r.fired
	r.fired = nil
	return f
}

// firedAt inserts one timer at deadline into a 10ms wheel started at 0,
// advances 1ms at a time, and returns the time of the Advance that fired it.
func firedAt(t *testing.T, deadline int64) int64 {
	t.Helper()
	w := New(10*time.Millisecond, 0)
	w.Insert(deadline, 7)
	var r recorder
	for now := int64(0); now <= deadline+20*ms; now += ms {
		w.Advance(now, r.fire)
		if f := r.take(); len(f) > 0 {
			require.Equal(t, []uint64{7}, f)
			return now
		}
	}
	t.Fatalf("timer at %d never fired", deadline)
	return 0
}

func TestFiresAtTick(t *testing.T) {
	tests := []struct {
		name     string
		deadline int64
		want     int64
	}{
		{"past", -5 * ms, 10 * ms},
		{"now", 0, 10 * ms},
		{"inside first tick", 3 * ms, 10 * ms},
		{"on a tick", 20 * ms, 20 * ms},
		{"just after a tick", 20*ms + 1, 30 * ms},
		{"end of level 0", 630 * ms, 630 * ms},
		{"start of level 1", 640 * ms, 640 * ms},
		{"inside level 1", 1234 * ms, 1240 * ms},
		{"level 2", 45678 * ms, 45680 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, firedAt(t, tt.deadline))
		})
	}
}

func TestExtendPostpones(t *testing.T) {
	w := New(10*time.Millisecond, 0)
	tm := w.Insert(100*ms, 1)
	require.True(t, w.Extend(tm, 250*ms))
	var r recorder
	w.Advance(240*ms, r.fire)
	assert.Empty(t, r.take())
	assert.Equal(t, 1, w.Len())
	w.Advance(250*ms, r.fire)
	assert.Equal(t, []uint64{1}, r.take())
	assert.Equal(t, 0, w.Len())
}

func TestExtendNeverBringsForward(t *testing.T) {
	w := New(10*time.Millisecond, 0)
	tm := w.Insert(100*ms, 1)
	require.True(t, w.Extend(tm, 50*ms))
	var r recorder
	w.Advance(90*ms, r.fire)
	assert.Empty(t, r.take())
	w.Advance(100*ms, r.fire)
	assert.Equal(t, []uint64{1}, r.take())
}

func TestCancel(t *testing.T) {
	w := New(10*time.Millisecond, 0)
	a := w.Insert(50*ms, 1)
	w.Insert(50*ms, 2)
	require.True(t, w.Cancel(a))
	assert.False(t, w.Cancel(a), "second cancel")
	var r recorder
	w.Advance(time.Second.Nanoseconds(), r.fire)
	assert.Equal(t, []uint64{2}, r.take())
}

func TestStaleTimer(t *testing.T) {
	w := New(10*time.Millisecond, 0)
	old := w.Insert(10*ms, 1)
	var r recorder
	w.Advance(10*ms, r.fire)
	require.Equal(t, []uint64{1}, r.take())

	reused := w.Insert(50*ms, 2)
	require.Equal(t, old.index, reused.index, "storage not reused")
	assert.False(t, w.Cancel(old))
	assert.False(t, w.Extend(old, 60*ms))
	assert.False(t, w.Cancel(Timer{}), "zero Timer")
	assert.False(t, w.Cancel(Timer{index: 99, gen: 1}), "index out of range")

	w.Advance(50*ms, r.fire)
	assert.Equal(t, []uint64{2}, r.take(), "a stale Timer moved the reused timer")
}

// TestMillionTimersFireOnce advances in random steps of up to a second and
// checks that each timer fires once, not before its deadline, and at the
// first Advance that reaches its deadline rounded up to a tick, if not before.
func TestMillionTimersFireOnce(t *testing.T) {
	const n = 1_000_000
	w := New(10*time.Millisecond, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	deadlines := make([]int64, n)
	for i := range deadlines {
		deadlines[i] = rng.Int64N(100 * time.Second.Nanoseconds())
		w.Insert(deadlines[i], uint64(i))
	}
	fired := make([]bool, n)
	var prev, now int64
	fire := func(h uint64) {
		d := deadlines[h]
		switch {
		case fired[h]:
			t.Fatalf("timer %d fired twice", h)
		case now < d:
			t.Fatalf("timer %d due at %d fired early at %d", h, d, now)
		case prev >= dueAt(w, d):
			t.Fatalf("timer %d due at %d fired late at %d", h, d, now)
		}
		fired[h] = true
	}
	for w.Len() > 0 {
		prev, now = now, now+1+rng.Int64N(time.Second.Nanoseconds())
		w.Advance(now, fire)
	}
	assert.NotContains(t, fired, false)
}

// dueAt returns the time at which a timer with the given deadline is due in
// w: the deadline rounded up to a tick.
func dueAt(w *Wheel, deadline int64) int64 {
	since := uint64(deadline) - uint64(w.origin) // may pass math.MaxInt64
	return int64(uint64(w.origin) + (since+w.tick-1)/w.tick*w.tick)
}

func TestNext(t *testing.T) {
	w := New(10*time.Millisecond, 0)
	_, ok := w.Next()
	assert.False(t, ok, "empty wheel")

	w.Insert(25*ms, 1)
	next, ok := w.Next()
	require.True(t, ok)
	assert.Equal(t, 30*ms, next)

	w.Insert(5*ms, 2)
	next, _ = w.Next()
	assert.Equal(t, 10*ms, next)
}

// sleepUntilNext advances w, as a loop would, to each time Next returns
// until w is empty, checks that each timer fires exactly when its deadline
// rounded up to a tick comes, and returns the number of wakes.
func sleepUntilNext(t *testing.T, w *Wheel, now int64, deadlines []int64) int {
	t.Helper()
	var wakes int
	for w.Len() > 0 {
		next, ok := w.Next()
		require.True(t, ok)
		require.Greater(t, next, now)
		now = next
		wakes++
		w.Advance(now, func(h uint64) {
			assert.Equal(t, dueAt(w, deadlines[h]), now, "timer %d", h)
		})
	}
	_, ok := w.Next()
	assert.False(t, ok)
	return wakes
}

func TestNextDrivesLoop(t *testing.T) {
	deadlines := []int64{
		5 * ms, 999 * ms, time.Minute.Nanoseconds() + 1, 3 * time.Hour.Nanoseconds(),
		400 * 24 * time.Hour.Nanoseconds(),
	}
	w := New(time.Millisecond, 0)
	for i, d := range deadlines {
		w.Insert(d, uint64(i))
	}
	wakes := sleepUntilNext(t, w, 0, deadlines)
	assert.LessOrEqual(t, wakes, len(deadlines)*levels, "too many empty wakes")
}

func TestAdvanceLongGap(t *testing.T) {
	w := New(time.Millisecond, 0)
	var r recorder
	year := 365 * 24 * time.Hour.Nanoseconds()
	w.Advance(10*year, r.fire) // an empty wheel jumps straight there

	base := 10 * year
	w.Insert(base+5*ms, 1)
	w.Insert(base+year, 2)
	w.Advance(base+4*ms, r.fire)
	assert.Empty(t, r.take())
	w.Advance(base+100*year, r.fire)
	assert.ElementsMatch(t, []uint64{1, 2}, r.take())
	assert.Equal(t, 0, w.Len())
}

func TestExtremeTimes(t *testing.T) {
	tests := []struct {
		name     string
		origin   int64
		deadline int64
	}{
		{"max deadline", 0, math.MaxInt64 - ms},
		{"negative origin", math.MinInt64 + 1, -1},
		{"full range", math.MinInt64, math.MaxInt64 - ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(time.Millisecond, tt.origin)
			w.Insert(tt.deadline, 0)
			sleepUntilNext(t, w, tt.origin, []int64{tt.deadline})
		})
	}
}

// TestEndOfTime checks that a deadline in the last partial tick before
// math.MaxInt64 fires at the start of that tick rather than never.
func TestEndOfTime(t *testing.T) {
	w := New(time.Millisecond, 0)
	w.Insert(math.MaxInt64, 1)
	end := math.MaxInt64 / ms * ms
	next, ok := w.Next()
	require.True(t, ok)
	assert.LessOrEqual(t, next, end)
	var r recorder
	w.Advance(end-1, r.fire)
	assert.Empty(t, r.take())
	w.Advance(end, r.fire)
	assert.Equal(t, []uint64{1}, r.take())
}

// TestFireMayChangeWheel cancels, inserts and extends from inside fire.
func TestFireMayChangeWheel(t *testing.T) {
	w := New(10*time.Millisecond, 0)
	victim := w.Insert(10*ms, 2)
	var later Timer
	var fired []uint64
	w.Insert(10*ms, 1)
	w.Advance(10*ms, func(h uint64) {
		fired = append(fired, h)
		if h == 1 {
			w.Cancel(victim)
			later = w.Insert(0, 3) // already due: fires at the next tick
			w.Insert(20*ms, 4)
		}
	})
	assert.Equal(t, []uint64{1}, fired)
	require.True(t, w.Extend(later, 25*ms))
	fired = nil
	w.Advance(20*ms, func(h uint64) { fired = append(fired, h) })
	assert.Equal(t, []uint64{4}, fired)
}

// TestMatchesModel runs random operations against a plain model: a timer
// must not fire before its deadline and must have fired once Advance reaches
// its due tick, which is its deadline rounded up to a tick, or the next tick
// when that one has already been processed.
func TestMatchesModel(t *testing.T) {
	const tick = ms
	rng := rand.New(rand.NewPCG(3, 4))
	w := New(time.Duration(tick), 0)
	type entry struct {
		timer    Timer
		deadline int64
		due      int64 // in ticks
	}
	live := map[uint64]*entry{}
	var order []uint64 // handles of live timers, for a deterministic choice
	var now int64
	deadline := func() int64 {
		spans := []int64{10 * tick, 5000 * tick, 40_000 * tick}
		return now - 5*tick + rng.Int64N(spans[rng.IntN(len(spans))])
	}
	set := func(e *entry, d int64) {
		e.deadline = d
		e.due = max((d+tick-1)/tick, now/tick+1)
	}
	pick := func() (uint64, *entry) {
		for len(order) > 0 {
			i := rng.IntN(len(order))
			h := order[i]
			if e, ok := live[h]; ok {
				return h, e
			}
			order[i] = order[len(order)-1]
			order = order[:len(order)-1]
		}
		return 0, nil
	}
	for step := range 100_000 {
		switch op := rng.IntN(10); {
		case op < 4:
			h := uint64(step) + 1
			e := &entry{}
			set(e, deadline())
			e.timer = w.Insert(e.deadline, h)
			live[h] = e
			order = append(order, h)
		case op < 6:
			if _, e := pick(); e != nil {
				d := deadline()
				require.True(t, w.Extend(e.timer, d))
				if d > e.deadline {
					set(e, d)
				}
			}
		case op < 7:
			if h, e := pick(); e != nil {
				require.True(t, w.Cancel(e.timer))
				delete(live, h)
			}
		default:
			now += rng.Int64N(300 * tick)
			w.Advance(now, func(h uint64) {
				e, ok := live[h]
				require.True(t, ok, "handle %d fired but is not live", h)
				require.LessOrEqual(t, e.deadline, now, "handle %d fired early", h)
				delete(live, h)
			})
			for h, e := range live {
				if e.due <= now/tick {
					t.Fatalf("handle %d due at tick %d did not fire at %d", h, e.due, now/tick)
				}
			}
		}
		if w.Len() != len(live) {
			t.Fatalf("Len is %d, want %d", w.Len(), len(live))
		}
	}
}

// counter counts the timers a wheel fires. Its method value stands for the
// loop's own, which Advance must not make escape.
type counter struct{ fired int }

func (c *counter) fire(uint64) { c.fired++ }

func TestNoAllocations(t *testing.T) {
	w := New(time.Millisecond, 0)
	var now int64
	var c counter
	cycle := func() {
		a := w.Insert(now+5*ms, 1)
		b := w.Insert(now+time.Hour.Nanoseconds(), 2)
		w.Extend(a, now+10*ms)
		w.Extend(b, now+time.Minute.Nanoseconds())
		w.Cancel(b)
		now += 20 * ms
		w.Advance(now, c.fire)
	}
	cycle() // grow the slab
	assert.Zero(t, testing.AllocsPerRun(1000, cycle))
	assert.Equal(t, 1002, c.fired)
	assert.Zero(t, w.Len())
}

// The benchmarks run on a wheel holding a million timers due within a
// minute, as a loop with a million idle-timed connections would have.
const (
	benchTimers = 1_000_000
	benchBatch  = 1 << 16
)

// benchDeadline spreads deadlines over a minute.
func benchDeadline(i int) int64 { return int64(i) * 7919 % 60_000 * ms }

// benchWheel returns a wheel holding benchTimers timers, its slab grown by
// benchBatch more, and their Timers.
func benchWheel(b *testing.B) (*Wheel, []Timer) {
	w := New(DefaultTick, 0)
	timers := make([]Timer, benchTimers+benchBatch)
	for i := range timers {
		timers[i] = w.Insert(benchDeadline(i), uint64(i))
	}
	for _, tm := range timers[benchTimers:] {
		w.Cancel(tm)
	}
	b.ReportAllocs()
	return w, timers[:benchTimers]
}

// inBatches calls op for each iteration of b.Loop with a counter that wraps
// at benchBatch, calling between, untimed, each time it wraps.
func inBatches(b *testing.B, op func(i int), between func()) {
	for i := 0; b.Loop(); i++ {
		if i == benchBatch {
			b.StopTimer()
			between()
			b.StartTimer()
			i = 0
		}
		op(i)
	}
}

func BenchmarkInsert(b *testing.B) {
	w, _ := benchWheel(b)
	batch := make([]Timer, benchBatch)
	inBatches(b, func(i int) {
		batch[i] = w.Insert(benchDeadline(i), uint64(i))
	}, func() {
		for _, tm := range batch {
			w.Cancel(tm)
		}
	})
}

// BenchmarkExtend extends timers of a wheel holding a million: all of them
// in turn, which measures memory more than the wheel, and the same 1,024 over
// and over, as when a few connections of many are busy.
func BenchmarkExtend(b *testing.B) {
	for _, active := range []int{benchTimers, 1024} {
		b.Run(fmt.Sprintf("active=%d", active), func(b *testing.B) {
			w, timers := benchWheel(b)
			later := time.Minute.Nanoseconds()
			for i, j := int64(0), 0; b.Loop(); i, j = i+1, j+1 {
				if j == active {
					j = 0
				}
				w.Extend(timers[j], later+i)
			}
		})
	}
}

func BenchmarkCancel(b *testing.B) {
	w, _ := benchWheel(b)
	batch := make([]Timer, benchBatch)
	refill := func() {
		for i := range batch {
			batch[i] = w.Insert(benchDeadline(i), uint64(i))
		}
	}
	refill()
	inBatches(b, func(i int) { w.Cancel(batch[i]) }, refill)
}
