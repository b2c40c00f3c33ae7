package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// printed returns what p prints for s at now, line by line.
func printed(p *statsPrinter, now time.Time, s snapshot) []string {
	var b strings.Builder
	p.print(&b, now, s)
	if b.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// Each stats line carries the time and its byte counts' unit, and a line
// that would read as it did when last printed is left out: an idle proxy
// prints nothing, a busy one only what moved.
func TestStatsLinesPrintOnlyWhatChanged(t *testing.T) {
	zone := time.FixedZone("", 2*60*60)
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 8_000_000, zone)
	s := snapshot{
		Engine:   sluice.Stats{Conns: 2, Accepted: 1, Dialed: 1},
		Clients:  1,
		Pairs:    1,
		Buffered: 512,
		Peak:     65536,
		Up:       1024,
		Down:     2048,
		Backends: []backendStats{
			{Addr: "127.0.0.1:6379", Active: 1, Connected: 1},
			{Addr: "127.0.0.1:6380", Down: true, Failed: 3, Downs: 1},
		},
	}
	var p statsPrinter
	assert.Equal(t, []string{
		"2025-03-04T05:06:07.008+02:00 proxy: clients 1 pairs 1 held 0 buffered 512 B peak 65536 B up 1024 B down 2048 B rejected 0 unserved 0",
		"2025-03-04T05:06:07.008+02:00 proxy: engine conns 2 accepted 1 dialed 1 dial-failed 0 rejected-max 0 killed 0 idle-timeouts 0 proxy-invalid 0 proxy-missing 0 proxy-timeouts 0 tls-failed 0 tls-timeouts 0",
		"2025-03-04T05:06:07.008+02:00 proxy: backend 127.0.0.1:6379 up active 1 connected 1 failed 0 errors 0 downs 0",
		"2025-03-04T05:06:07.008+02:00 proxy: backend 127.0.0.1:6380 down active 0 connected 0 failed 3 errors 0 downs 1",
	}, printed(&p, t0, s), "the first snapshot prints every line")

	assert.Empty(t, printed(&p, t0.Add(time.Second), s), "nothing changed: nothing printed")

	// Bytes relayed move the totals, and only those; a backend that comes
	// back up moves its own line.
	s.Up += 10
	s.Backends = []backendStats{s.Backends[0], {Addr: "127.0.0.1:6380", Failed: 3, Downs: 1}}
	t2 := t0.Add(2 * time.Second)
	assert.Equal(t, []string{
		"2025-03-04T05:06:09.008+02:00 proxy: clients 1 pairs 1 held 0 buffered 512 B peak 65536 B up 1034 B down 2048 B rejected 0 unserved 0",
		"2025-03-04T05:06:09.008+02:00 proxy: backend 127.0.0.1:6380 up active 0 connected 0 failed 3 errors 0 downs 1",
	}, printed(&p, t2, s))

	// A line is compared with what it printed last, not with the
	// snapshot before: one that changes back is printed again.
	s.Up -= 10
	lines := printed(&p, t2.Add(time.Second), s)
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], " up 1024 B ")
	assert.Empty(t, printed(&p, t2.Add(2*time.Second), s))

	// The timestamp reads back as the time of the snapshot.
	stamp, _, _ := strings.Cut(lines[0], " ")
	at, err := time.Parse(statsTime, stamp)
	require.NoError(t, err)
	assert.True(t, at.Equal(t2.Add(time.Second)), "%s read back as %s", stamp, at)
}
