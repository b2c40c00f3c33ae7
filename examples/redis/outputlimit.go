package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice"
)

// classLimit is Redis's client-output-buffer-limit for one class of
// clients: a hard bound on the replies a client may have queued, and a
// soft one it may stay over for a time. A bound of zero is none.
type classLimit struct {
	hard, soft int // bytes
	softFor    time.Duration
}

func (l classLimit) String() string {
	return fmt.Sprintf("%d %d %d", l.hard, l.soft, int(l.softFor/time.Second))
}

// outputLimit is client-output-buffer-limit for the two classes of
// clients there are here: normal clients, and pub/sub clients, those
// subscribed to a channel or a pattern. The zero value is the defaults:
// for normal clients, a hard bound and no soft one, where Redis has none,
// so that one client cannot take the server's memory: the engine's 32 MB,
// or twice the largest command (-max-request) where that is more, so
// that a client reads back any string it could store (a reply of one
// string is as long as the command that stored it) and the replies
// queued before it; for pub/sub clients, Redis's "pubsub 32mb 8mb 60".
type outputLimit struct {
	normal, pubsub       classLimit
	normalSet, pubsubSet bool
	maxRequest           int // the largest command, in bytes, for the default normal bound
}

// defaultPubsubLimit is the pubsub class's limit when no flag sets it.
var defaultPubsubLimit = classLimit{hard: 32 << 20, soft: 8 << 20, softFor: 60 * time.Second}

// normalLimit and pubsubLimit return each class's limit, set or default.
func (o outputLimit) normalLimit() classLimit {
	if o.normalSet {
		return o.normal
	}
	return classLimit{hard: max(sluice.DefaultMaxOutbound, 2*o.maxRequest)}
}

func (o outputLimit) pubsubLimit() classLimit {
	if o.pubsubSet {
		return o.pubsub
	}
	return defaultPubsubLimit
}

// engineBound returns the bound for sluice.WithMaxOutbound, which holds
// every connection: the looser of the classes' hard bounds, zero (none)
// if either has none. The server holds each class to its own bound; the
// engine's is the backstop no client passes.
func (o outputLimit) engineBound() int {
	n, p := o.normalLimit().hard, o.pubsubLimit().hard
	if n == 0 || p == 0 {
		return 0
	}
	return max(n, p)
}

// String returns the limits as CONFIG GET reports them and the flag takes
// them.
func (o outputLimit) String() string {
	return "normal " + o.normalLimit().String() + " pubsub " + o.pubsubLimit().String()
}

var errOutputLimit = errors.New(`want "<class> <hard> <soft> <soft seconds>" for each class, normal or pubsub, as Redis's client-output-buffer-limit`)

// Set parses Redis's form, "<class> <hard> <soft> <soft seconds>" for one
// class or more, normal or pubsub, with the sizes in bytes or with Redis's
// units (32mb, 512kb, 1gb; k, m and g are powers of 1000). Each call sets
// the classes it names, so the flag may be given once for each.
func (o *outputLimit) Set(s string) error {
	f := strings.Fields(s)
	if len(f) == 0 || len(f)%4 != 0 {
		return errOutputLimit
	}
	next := *o
	for ; len(f) > 0; f = f[4:] {
		hard, err1 := parseMemory(f[1])
		soft, err2 := parseMemory(f[2])
		secs, err3 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2, err3); err != nil || secs < 0 {
			return errOutputLimit
		}
		l := classLimit{hard: hard, soft: soft, softFor: time.Duration(secs) * time.Second}
		switch strings.ToLower(f[0]) {
		case "normal":
			next.normal, next.normalSet = l, true
		case "pubsub":
			next.pubsub, next.pubsubSet = l, true
		default:
			return errOutputLimit
		}
	}
	*o = next
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
	switch {
	case errors.Is(err, strconv.ErrRange) && n > 0, err == nil && n > math.MaxInt/scale:
		return 0, fmt.Errorf("%q: %w", s, errSizeRange)
	case err != nil || n < 0:
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * scale, nil
}

// errSizeRange is parseMemory's error for a size past the largest int.
var errSizeRange = errors.New("argument must be between 0 and 9223372036854775807 inclusive")
