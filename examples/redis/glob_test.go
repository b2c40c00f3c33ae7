package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything", true},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "hllo", true},
		{"h*llo", "heeeello", true},
		{"h*llo", "hello!", false},
		{"*llo*", "hello world", true},
		{"a*b*c", "abxbxc", true},
		{"a*b*c", "abxbxd", false},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-c]llo", "hbllo", true},
		{"h[c-a]llo", "hbllo", true},
		{"h[a-c]llo", "hdllo", false},
		{`h[\]]llo`, "h]llo", true},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{`a\`, `a\`, true},
		{"h[ab", "ha", true},
		{"h[ab", "hc", false},
		{"HELLO", "hello", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, globMatch([]byte(tt.pattern), []byte(tt.s), false), "%q against %q", tt.pattern, tt.s)
	}
	assert.True(t, globMatch([]byte("SAVE"), []byte("save"), true))
	assert.True(t, globMatch([]byte("[A-Z]ave"), []byte("save"), true))
}

// TestGlobMatchIsPolynomial checks a pattern that takes exponential time
// to a matcher that backtracks into every star.
func TestGlobMatchIsPolynomial(t *testing.T) {
	pattern := []byte(strings.Repeat("a*", 30) + "b")
	s := []byte(strings.Repeat("a", 5000))
	assert.False(t, globMatch(pattern, s, false))
}
