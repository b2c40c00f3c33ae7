package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice"
)

// outputLimit is Redis's client-output-buffer-limit for normal clients:
// a hard bound on the replies a client may have queued, and a soft one it
// may stay over for a time. Past either the engine resets the client
// (sluice.WithMaxOutbound, sluice.WithOutboundSoftLimit), freeing what it
// held. The zero value is the engine's defaults.
type outputLimit struct {
	hard, soft int // bytes; a hard bound of zero, set, means none
	softFor    time.Duration
	set        bool
}

// hardBytes returns the hard bound for sluice.WithMaxOutbound: zero for
// none, and the engine's default when none was set.
func (o outputLimit) hardBytes() int {
	if !o.set {
		return sluice.DefaultMaxOutbound
	}
	return o.hard
}

// String returns the limit as CONFIG GET reports it and the flag takes it.
func (o outputLimit) String() string {
	return fmt.Sprintf("normal %d %d %d", o.hardBytes(), o.soft, int(o.softFor/time.Second))
}

var errOutputLimit = errors.New(`want "normal <hard> <soft> <soft seconds>", as Redis's client-output-buffer-limit`)

// Set parses Redis's form, "normal <hard> <soft> <soft seconds>", with
// the sizes in bytes or with Redis's units (32mb, 512kb, 1gb; k, m and g
// are powers of 1000).
func (o *outputLimit) Set(s string) error {
	f := strings.Fields(s)
	if len(f) != 4 || !strings.EqualFold(f[0], "normal") {
		return errOutputLimit
	}
	hard, err1 := parseMemory(f[1])
	soft, err2 := parseMemory(f[2])
	secs, err3 := strconv.Atoi(f[3])
	if err := errors.Join(err1, err2, err3); err != nil || secs < 0 {
		return errOutputLimit
	}
	*o = outputLimit{hard: hard, soft: soft, softFor: time.Duration(secs) * time.Second, set: true}
	return nil
}

// parseMemory reads a size as Redis's configuration does: bytes, or a
// number with k, kb, m, mb, g or gb (the b forms powers of 1024).
func parseMemory(s string) (int, error) {
	units := []struct {
		suffix string
		scale  int
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}}
	lower := strings.ToLower(s)
	scale := 1
	for _, u := range units {
		if n, ok := strings.CutSuffix(lower, u.suffix); ok {
			lower, scale = n, u.scale
			break
		}
	}
	n, err := strconv.Atoi(lower)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * scale, nil
}
