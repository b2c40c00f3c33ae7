package loadgen

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucketsCoverEveryValueInOrder(t *testing.T) {
	// Every bucket's top is followed by the next bucket's first value.
	for i := 0; i < numBuckets-1; i++ {
		require.Equal(t, i, bucket(bucketHigh(i)), "top of bucket %d", i)
		require.Equal(t, i+1, bucket(bucketHigh(i)+1), "after bucket %d", i)
	}
	assert.Equal(t, numBuckets-1, bucket(math.MaxUint64))
	assert.Equal(t, uint64(math.MaxUint64), bucketHigh(numBuckets-1))
}

func TestBucketPrecision(t *testing.T) {
	for _, v := range []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 12345, 1e6, 1e9, 1e12, 1 << 62} {
		high := bucketHigh(bucket(v))
		require.GreaterOrEqual(t, high, v)
		assert.LessOrEqual(t, float64(high-v), float64(v)/subCount, "value %d", v)
	}
}

func TestQuantile(t *testing.T) {
	var h Histogram
	assert.Equal(t, time.Duration(0), h.Quantile(0.5), "empty")
	for v := 1; v <= 1000; v++ {
		h.Record(time.Duration(v) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0, time.Microsecond},
		{0.5, 500 * time.Microsecond},
		{0.99, 990 * time.Microsecond},
		{0.999, 999 * time.Microsecond},
		{1, 1000 * time.Microsecond},
	} {
		got := h.Quantile(tc.q)
		assert.GreaterOrEqual(t, got, tc.want, "q=%v", tc.q)
		assert.LessOrEqual(t, float64(got-tc.want), float64(tc.want)/subCount, "q=%v", tc.q)
	}
}

func TestMergeAndNegative(t *testing.T) {
	var a, b Histogram
	a.Record(-time.Second)
	b.Record(time.Millisecond)
	b.Record(time.Millisecond)
	a.Merge(&b)
	assert.Equal(t, uint64(3), a.Count())
	assert.Equal(t, time.Duration(0), a.Quantile(0.1))
	assert.InEpsilon(t, float64(time.Millisecond), float64(a.Quantile(1)), 1.0/subCount)
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := new(Histogram)
	allocs := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Nanosecond) })
	assert.Zero(t, allocs)
}
