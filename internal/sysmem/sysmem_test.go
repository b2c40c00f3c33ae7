package sysmem

import (
	"runtime"
	"testing"
)

func TestTotal(t *testing.T) {
	n := Total()
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "dragonfly":
		if n < 64<<20 {
			t.Fatalf("Total() = %d: less than any machine running this test has", n)
		}
	default:
		if n != 0 {
			t.Fatalf("Total() = %d here; want 0", n)
		}
	}
}
