package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseInt(t *testing.T) {
	valid := map[string]int64{
		"0":                    0,
		"7":                    7,
		"-7":                   -7,
		"1234567890":           1234567890,
		"9223372036854775807":  math.MaxInt64,
		"-9223372036854775808": math.MinInt64,
	}
	for s, want := range valid {
		n, err := parseInt([]byte(s))
		assert.NoError(t, err, s)
		assert.Equal(t, want, n, s)
	}
	for _, s := range []string{"", "-", "+1", "01", "-0", " 1", "1 ", "1.5", "1e3", "abc",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999"} {
		_, err := parseInt([]byte(s))
		assert.ErrorIs(t, err, errNotInteger, "%q", s)
	}
}

func TestParseFloat(t *testing.T) {
	for s, want := range map[string]float64{"1.5": 1.5, "-2": -2, "inf": math.Inf(1), "-inf": math.Inf(-1), "1e3": 1000} {
		f, err := parseFloat([]byte(s))
		assert.NoError(t, err, s)
		assert.Equal(t, want, f, s)
	}
	for _, s := range []string{"", "nan", "abc", "1.5x", " 1"} {
		_, err := parseFloat([]byte(s))
		assert.ErrorIs(t, err, errNotFloat, "%q", s)
	}
}

// TestFormatDouble checks scores are written as Redis 7.0 writes them,
// in C's "%.17g": these are its replies to ZSCORE.
func TestFormatDouble(t *testing.T) {
	for f, want := range map[float64]string{
		1.5: "1.5", 3: "3", 0.1: "0.10000000000000001", -0.25: "-0.25", 1e21: "1e+21", math.Inf(1): "inf",
		math.Inf(-1): "-inf", 1e16: "10000000000000000", 1e17: "1e+17", 123456789012345678: "1.2345678901234568e+17",
		0.0001: "0.0001", 0.00001: "1.0000000000000001e-05", math.MaxFloat64: "1.7976931348623157e+308",
		5e-324: "4.9406564584124654e-324", 1e-7: "9.9999999999999995e-08", 0.3: "0.29999999999999999",
	} {
		assert.Equal(t, want, string(formatDouble(nil, f)))
	}
}
