package ops

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FlagSet tells a flag given on the command line from one left at its
// default, even where the value given is the default.
func TestFlagSet(t *testing.T) {
	assert.False(t, FlagSet("pid-file"), "not given")
	require.NoError(t, flag.CommandLine.Set("pid-file", ""))
	assert.True(t, FlagSet("pid-file"), "given, as its default")
	assert.False(t, FlagSet("debug-addr"), "another, not given")
}
