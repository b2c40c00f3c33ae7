package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sluicenet/sluice"
)

// snapshot is the proxy's state at one moment, for -stats-interval and
// for tests.
type snapshot struct {
	Engine sluice.Stats

	Clients  int64  // clients open
	Rejected uint64 // clients reset for -maxconn
	Unserved uint64 // clients reset because no backend could be reached

	Pairs    int // pairs the loops hold, clients connecting included
	Held     int // sides of pairs paused because the other side is full
	Buffered int // bytes the proxy holds for its pairs now: unsent, and received but not yet relayed
	Peak     int // the most unsent bytes one side of a pair held after a relayed write, since the start

	Up, Down uint64 // bytes relayed from clients to backends, and back

	Backends []backendStats
}

// backendStats is one backend's part of a snapshot.
type backendStats struct {
	Addr      string
	Down      bool   // marked down by passive health, or being probed
	Active    int64  // pairs relaying to it now, or connecting
	Connected uint64 // connects that succeeded
	Failed    uint64 // connects that failed
	Errors    uint64 // pairs whose backend side ended in an error
	Downs     uint64 // times marked down
}

// snapshot gathers the proxy's state. The loops' shares are read on the
// loops themselves (Loop.Execute), where their connections may be asked
// what they hold, so it waits for each loop's turn; a loop that has
// stopped holds nothing.
func (px *proxy) snapshot() snapshot {
	s := snapshot{
		Engine:   px.eng.Stats(),
		Clients:  px.clients.Load(),
		Rejected: px.rejected.Load(),
		Unserved: px.unserved.Load(),
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range px.eng.NumLoops() {
		ls := &px.loops[i]
		wg.Add(1)
		err := px.eng.Loop(i).Execute(func() {
			defer wg.Done()
			var part snapshot
			for p := ls.pairs; p != nil; p = p.next {
				part.Pairs++
				if p.clientHeld {
					part.Held++
				}
				if p.backendHeld {
					part.Held++
				}
				if !p.clientGone {
					part.Buffered += p.client.OutboundBuffered() + p.client.InboundBuffered()
				}
				if p.backend != nil && !p.backendGone {
					part.Buffered += p.backend.OutboundBuffered() + p.backend.InboundBuffered()
				}
			}
			mu.Lock()
			s.Pairs += part.Pairs
			s.Held += part.Held
			s.Buffered += part.Buffered
			s.Peak = max(s.Peak, ls.peak)
			s.Up += ls.up
			s.Down += ls.down
			mu.Unlock()
		})
		if err != nil {
			wg.Done() // the loop has stopped: fn will not run
		}
	}
	wg.Wait()
	now := time.Now().UnixNano()
	for _, b := range px.pool.backends {
		s.Backends = append(s.Backends, backendStats{
			Addr:      b.addr,
			Down:      px.pool.health(b, now) != up,
			Active:    b.active.Load(),
			Connected: b.connected.Load(),
			Failed:    b.failed.Load(),
			Errors:    b.errored.Load(),
			Downs:     b.downs.Load(),
		})
	}
	return s
}

// printStats prints the proxy's state every interval until the engine
// shuts down, each line only when it has changed (statsPrinter).
func (px *proxy) printStats(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var p statsPrinter
	for {
		select {
		case <-t.C:
			p.print(px.cfg.out, time.Now(), px.snapshot())
		case <-px.done:
			return
		}
	}
}

// statsTime is how a stats line gives its time: RFC 3339, to the
// millisecond.
const statsTime = "2006-01-02T15:04:05.000Z07:00"

// statsPrinter prints snapshots as lines, each stamped with the time of its
// snapshot. A line that reads as it did when last printed is left out, so
// that a proxy with nothing happening prints nothing.
type statsPrinter struct {
	last map[string]string // each line's text when last printed, by its key
}

// print writes to w the lines of s that changed since they were last
// printed, stamped with now.
func (p *statsPrinter) print(w io.Writer, now time.Time, s snapshot) {
	if p.last == nil {
		p.last = make(map[string]string)
	}
	stamp := now.Format(statsTime)
	for _, l := range s.lines() {
		if p.last[l.key] == l.text {
			continue
		}
		p.last[l.key] = l.text
		fmt.Fprintf(w, "%s proxy: %s\n", stamp, l.text)
	}
}

// statsLine is one line of a snapshot, and what it stands for: the
// totals, the engine's counters, or one backend.
type statsLine struct {
	key, text string
}

// lines returns s as a line of totals, one of the engine's counters and
// one per backend. Byte counts carry their unit, B; the rest count
// connections, or times a backend was marked down.
func (s snapshot) lines() []statsLine {
	e := s.Engine
	lines := []statsLine{
		{"totals", fmt.Sprintf("clients %d pairs %d held %d buffered %d B peak %d B up %d B down %d B rejected %d unserved %d",
			s.Clients, s.Pairs, s.Held, s.Buffered, s.Peak, s.Up, s.Down, s.Rejected, s.Unserved)},
		{"engine", fmt.Sprintf("engine conns %d accepted %d dialed %d dial-failed %d rejected-max %d killed %d idle-timeouts %d proxy-invalid %d proxy-missing %d proxy-timeouts %d tls-failed %d tls-timeouts %d",
			e.Conns, e.Accepted, e.Dialed, e.DialFailed, e.RejectedMaxConns, e.Killed, e.IdleTimeouts,
			e.ProxyInvalid, e.ProxyMissing, e.ProxyTimeouts, e.TLSHandshakeFailures, e.TLSHandshakeTimeouts)},
	}
	for i, b := range s.Backends {
		state := "up"
		if b.Down {
			state = "down"
		}
		lines = append(lines, statsLine{fmt.Sprint("backend ", i), fmt.Sprintf("backend %s %s active %d connected %d failed %d errors %d downs %d",
			b.Addr, state, b.Active, b.Connected, b.Failed, b.Errors, b.Downs)})
	}
	return lines
}
