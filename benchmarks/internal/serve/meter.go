package serve

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A Meter counts a server's accepted connections and its heap allocations
// from the first connection on. Its zero value is ready; Opened is safe from
// any goroutine.
type Meter struct {
	accepted atomic.Int64
	first    sync.Once
	mallocs  uint64 // runtime.MemStats.Mallocs at the first connection
}

// Opened records one accepted (or, for ServeDialed, dialed) connection. The first call snapshots the
// allocation count, so the report leaves out what the server allocated to
// start.
func (m *Meter) Opened() {
	m.first.Do(func() { m.mallocs = readMallocs() })
	m.accepted.Add(1)
}

// Report says what the meter saw. Mallocs counts from the first connection
// to now, or is 0 if none came.
func (m *Meter) Report() Report {
	r := Report{Accepted: m.accepted.Load()}
	if r.Accepted > 0 {
		r.Mallocs = int64(readMallocs() - m.mallocs)
	}
	return r
}

// readMallocs returns the heap objects allocated so far. ReadMemStats stops
// the world, which is why it runs only at the first connection and at exit.
func readMallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}
