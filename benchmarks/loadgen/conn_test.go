package loadgen

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSource(t *testing.T) {
	for _, tc := range []struct {
		dst  string
		n    int
		want string // "" for the kernel's choice
	}{
		{"127.0.0.1:9000", 0, "127.0.0.1"},
		{"127.0.0.1:9000", 1, "127.0.0.2"},
		{"127.0.0.1:9000", loopbackSources, "127.0.0.1"},
		{"127.0.0.1:9000", loopbackSources - 1, "127.0.0.250"},
		{"10.1.2.3:9000", 5, ""},
		{"[::1]:9000", 5, ""},
	} {
		got := source(netip.MustParseAddrPort(tc.dst), tc.n)
		if tc.want == "" {
			assert.False(t, got.IsValid(), "%s #%d", tc.dst, tc.n)
			continue
		}
		assert.Equal(t, netip.MustParseAddr(tc.want), got, "%s #%d", tc.dst, tc.n)
	}
}
