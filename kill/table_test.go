package kill

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewCapacity(t *testing.T) {
	var tooBig uint64 = math.MaxUint32 + 1 // an int of 0 where int has 32 bits
	for _, c := range []int{-1, 0, int(tooBig)} {
		assert.Panics(t, func() { New(c) }, "capacity %d", c)
	}
	assert.Equal(t, 3, New(3).Cap())
}

func TestClaimRelease(t *testing.T) {
	tb := New(4)
	a, err := tb.Claim(0, 10)
	require.NoError(t, err)
	b, err := tb.Claim(1, 11)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a.Slot(), b.Slot())
	assert.Equal(t, 2, tb.Len())

	assert.True(t, tb.Release(a))
	assert.False(t, tb.Release(a), "second release")
	assert.Equal(t, 1, tb.Len())
}

func TestFull(t *testing.T) {
	tb := New(3)
	var ids []ConnID
	for range 3 {
		id, err := tb.Claim(0, 0)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	_, err := tb.Claim(0, 0)
	require.ErrorIs(t, err, ErrFull)

	tb.Release(ids[1])
	id, err := tb.Claim(0, 0)
	require.NoError(t, err)
	assert.Equal(t, ids[1].Slot(), id.Slot())
}

func TestKill(t *testing.T) {
	tb := New(4)
	id, err := tb.Claim(3, 42)
	require.NoError(t, err)
	assert.False(t, tb.Killed(id))

	owner, handle, ok := tb.Kill(id)
	require.True(t, ok)
	assert.Equal(t, 3, owner)
	assert.Equal(t, uint64(42), handle)
	assert.True(t, tb.Killed(id))

	_, _, ok = tb.Kill(id)
	assert.False(t, ok, "second kill")
	assert.True(t, tb.Release(id), "release of a killed connection")
	assert.False(t, tb.Killed(id))
}

func TestStaleAndForgedIDs(t *testing.T) {
	tb := New(1)
	old, err := tb.Claim(0, 1)
	require.NoError(t, err)
	require.True(t, tb.Release(old))
	cur, err := tb.Claim(0, 2)
	require.NoError(t, err)
	require.Equal(t, old.Slot(), cur.Slot())
	require.NotEqual(t, old, cur)

	for _, id := range []ConnID{old, 0, cur + 1, cur + genOne} {
		_, _, ok := tb.Kill(id)
		assert.False(t, ok, "Kill(%#x)", uint64(id))
		assert.False(t, tb.Killed(id), "Killed(%#x)", uint64(id))
		assert.False(t, tb.Release(id), "Release(%#x)", uint64(id))
	}
	assert.False(t, tb.Killed(cur), "a stale kill reached the new connection")
	assert.Equal(t, 1, tb.Len())
}

func TestGenerationWraps(t *testing.T) {
	tb := New(1)
	tb.slots[0].state.Store(math.MaxUint32 << 32)
	id, err := tb.Claim(0, 0)
	require.NoError(t, err)
	require.True(t, tb.Release(id))
	id, err = tb.Claim(0, 0)
	require.NoError(t, err)
	assert.Equal(t, ConnID(genOne), id, "generation 0 is skipped")
}

func TestRange(t *testing.T) {
	tb := New(8)
	want := map[ConnID]int{}
	for owner := range 6 {
		id, err := tb.Claim(owner, 0)
		require.NoError(t, err)
		want[id] = owner
	}
	for id := range want {
		if id.Slot()%2 == 0 {
			tb.Release(id)
			delete(want, id)
		}
	}
	got := map[ConnID]int{}
	for id, owner := range tb.Range {
		got[id] = owner
	}
	assert.Equal(t, want, got)

	var n int
	tb.Range(func(ConnID, int) bool { n++; return false })
	assert.Equal(t, 1, n, "Range went on after yield returned false")
}

// TestKillDuringChurn kills recently seen IDs, live and stale, from 100
// goroutines while others claim and release. Each connection ends by trying
// to kill itself: that fails exactly when another goroutine killed it first,
// so the IDs whose self-kill failed must be exactly the IDs other goroutines
// report killing. A kill that reached a newer connection through a stale ID
// would show up as a mismatch. Meanwhile Range must pair each ID it visits
// with the owner that claimed it.
func TestKillDuringChurn(t *testing.T) {
	const (
		churners = 4
		rounds   = 5_000 // at least, and until minKills kills landed
		minKills = 200
		hold     = 8 // connections each churner keeps open at once
		killers  = 100
	)
	tb := New(churners * hold)
	var recent [4 * churners * hold]atomic.Uint64 // IDs recently claimed, some of them stale by now
	var done atomic.Bool
	var kills atomic.Int64
	deadline := time.Now().Add(20 * time.Second)

	var killerWG, churnWG sync.WaitGroup
	killedBy := make([][]ConnID, killers) // what each killer killed
	for k := range killers {
		killerWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(k), 1))
			for !done.Load() {
				id := ConnID(recent[rng.IntN(len(recent))].Load())
				if _, _, ok := tb.Kill(id); ok {
					killedBy[k] = append(killedBy[k], id)
					kills.Add(1)
				}
				runtime.Gosched() // let the churners run
			}
		})
	}
	var owners sync.Map // ConnID to the churner that claimed it
	var errs atomic.Int64
	killerWG.Go(func() {
		for !done.Load() {
			for id, owner := range tb.Range {
				if c, ok := owners.Load(id); ok && c != owner {
					errs.Add(1)
				}
			}
		}
	})
	killedOf := make([][]ConnID, churners) // connections that found themselves killed
	for c := range churners {
		churnWG.Go(func() {
			closeConn := func(id ConnID) {
				if _, _, ok := tb.Kill(id); !ok {
					killedOf[c] = append(killedOf[c], id)
				}
				if !tb.Release(id) {
					errs.Add(1)
				}
			}
			var open []ConnID
			for r := 0; r < rounds || kills.Load() < minKills && time.Now().Before(deadline); r++ {
				id, err := tb.Claim(c, uint64(r))
				if err != nil {
					errs.Add(1)
					continue
				}
				owners.Store(id, c)
				recent[(c*rounds+r)%len(recent)].Store(uint64(id))
				open = append(open, id)
				if len(open) == hold {
					closeConn(open[0])
					open = open[1:]
				}
			}
			for _, id := range open {
				closeConn(id)
			}
		})
	}
	churnWG.Wait()
	done.Store(true)
	killerWG.Wait()

	require.Zero(t, errs.Load(), "failed claims or releases, or Range gave a wrong owner")
	assert.Zero(t, tb.Len())
	byKillers, byChurn := slices.Concat(killedBy...), slices.Concat(killedOf...)
	slices.Sort(byKillers)
	slices.Sort(byChurn)
	require.GreaterOrEqual(t, len(byKillers), minKills, "too few kills landed for the test to mean much")
	assert.Len(t, slices.Compact(slices.Clone(byKillers)), len(byKillers), "one ID killed twice")
	assert.Equal(t, byChurn, byKillers)
}

// TestClaimDuringChurn checks that concurrent claims never hand out one slot
// twice, and that capacity holds while loops claim and release at once.
func TestClaimDuringChurn(t *testing.T) {
	const (
		loops  = 8
		rounds = 5_000
		hold   = 4 // slots each loop holds at once
	)
	tb := New(loops * hold)
	var holders [loops * hold]atomic.Int32 // loop+1 holding each slot, 0 when free
	var wg sync.WaitGroup
	var errs atomic.Int64
	for l := range loops {
		wg.Go(func() {
			var held []ConnID
			for r := range rounds {
				if len(held) == hold || (len(held) > 0 && r%3 == 0) {
					id := held[0]
					held = held[1:]
					holders[id.Slot()].Store(0)
					tb.Release(id)
					continue
				}
				id, err := tb.Claim(l, 0)
				if err != nil || !holders[id.Slot()].CompareAndSwap(0, int32(l+1)) {
					errs.Add(1) // full although loops hold no more than capacity, or a slot handed out twice
					continue
				}
				held = append(held, id)
			}
			for _, id := range held {
				holders[id.Slot()].Store(0)
				tb.Release(id)
			}
		})
	}
	wg.Wait()
	assert.Zero(t, errs.Load())
	assert.Zero(t, tb.Len())
}

func TestNoAllocations(t *testing.T) {
	tb := New(16)
	allocs := testing.AllocsPerRun(1000, func() {
		id, err := tb.Claim(1, 2)
		if err != nil {
			panic(err)
		}
		tb.Kill(id)
		tb.Release(id)
	})
	assert.Zero(t, allocs)
}

func BenchmarkClaimRelease(b *testing.B) {
	tb := New(1024)
	b.ReportAllocs()
	for b.Loop() {
		id, _ := tb.Claim(0, 0)
		tb.Release(id)
	}
}

func BenchmarkClaimReleaseParallel(b *testing.B) {
	tb := New(1024)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id, _ := tb.Claim(0, 0)
			tb.Release(id)
		}
	})
}

// BenchmarkKill kills a million live connections in turn, claiming them
// afresh, untimed, once all are killed.
func BenchmarkKill(b *testing.B) {
	const n = 1 << 20
	tb := New(n)
	ids := make([]ConnID, n)
	claimAll := func() {
		for i := range ids {
			tb.Release(ids[i])
			ids[i], _ = tb.Claim(0, uint64(i))
		}
	}
	claimAll()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i == n {
			b.StopTimer()
			claimAll()
			b.StartTimer()
			i = 0
		}
		if _, _, ok := tb.Kill(ids[i]); !ok {
			b.Fatal("kill failed")
		}
	}
}
