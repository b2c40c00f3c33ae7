package loadgen

import (
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: each power of two is split into
// 1<<subBits buckets, so a recorded value is known to within 1/64 of itself.
const subBits = 6

const (
	subCount   = 1 << subBits
	numBuckets = (64 - subBits + 1) * subCount
)

// A Histogram counts latencies in log-linear buckets: exact below 64 ns, and
// within 1/64 (1.6%) of the value above. Recording never allocates. The zero
// value is empty and ready.
type Histogram struct {
	counts [numBuckets]uint64
	total  uint64
}

// bucket returns the index of the bucket holding v.
func bucket(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - 1 - subBits // v>>shift is in [subCount, 2*subCount)
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// bucketHigh returns the largest value bucket i holds.
func bucketHigh(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	shift := i/subCount - 1
	low := uint64(subCount+i%subCount) << shift
	return low + 1<<shift - 1
}

// Record counts one latency; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucket(uint64(max(d, 0)))]++
	h.total++
}

// Count returns how many latencies were recorded.
func (h *Histogram) Count() uint64 { return h.total }

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// Quantile returns the latency at or below which a fraction q of the
// recorded ones fall, rounded up to its bucket's top; 0 if none were recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.total) + 0.5)
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(bucketHigh(i))
		}
	}
	panic("unreachable: counts sum to total")
}
