package wheel_test

import (
	"fmt"
	"time"

	"github.com/sluicenet/sluice/wheel"
)

// An event loop times out idle connections. It reads the clock once per
// iteration (here the clock is a number), extends a connection's deadline
// on each read, and sleeps until the wheel's next due time.
func Example() {
	var now int64
	w := wheel.New(10*time.Millisecond, now)
	idle := (100 * time.Millisecond).Nanoseconds()

	// Two connections open at time 0. The loop keeps their timers in a
	// slice indexed by descriptor, and the descriptor is the handle.
	timers := make([]wheel.Timer, 16)
	for _, fd := range []uint64{7, 8} {
		timers[fd] = w.Insert(now+idle, fd)
	}

	// Connection 7 reads at 60ms: one store moves its deadline.
	now = (60 * time.Millisecond).Nanoseconds()
	w.Extend(timers[7], now+idle)

	for w.Len() > 0 {
		now, _ = w.Next() // the loop would wait in the poller until then
		w.Advance(now, func(fd uint64) {
			fmt.Printf("%v: connection %d idle, closing\n", time.Duration(now), fd)
		})
	}
	// Output:
	// 100ms: connection 8 idle, closing
	// 160ms: connection 7 idle, closing
}
