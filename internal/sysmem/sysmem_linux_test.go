package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCgroupLimit(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]uint64{
		"536870912\n":           512 << 20,
		"max\n":                 0,
		"9223372036854771712\n": 0, // v1's "no limit"
		"":                      0,
	} {
		f := filepath.Join(dir, "limit")
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := cgroupLimit(f); got != want {
			t.Errorf("cgroupLimit(%q) = %d; want %d", content, got, want)
		}
	}
	if got := cgroupLimit(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("cgroupLimit of a missing file = %d; want 0", got)
	}
}
