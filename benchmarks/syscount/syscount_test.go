package syscount

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestCountsOnlyWhileEnabled(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	// perf attaches to the threads that exist when it starts: stay on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := Start(os.Getpid())
	require.NoError(t, err)
	getpids(10_000) // before Enable: not counted
	require.NoError(t, c.Enable())
	getpids(10_000)
	require.NoError(t, c.Disable())
	getpids(100_000) // after Disable: not counted
	n, err := c.Stop()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, int64(10_000))
	assert.Less(t, n, int64(20_000), "only the enabled window counts, with a little of the runtime's own")
}

func getpids(n int) {
	for range n {
		unix.Getpid()
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      int64
		err       error
	}{
		{"count", "# started on Mon\n\n4012,,raw_syscalls:sys_enter,30843022,100.00,,\n", 4012, nil},
		{"nothing ran", "<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n", 0, nil},
		{"no line", "# started on Mon\n", 0, ErrPerf},
		{"bad count", "x,,raw_syscalls:sys_enter,0,100.00,,\n", 0, ErrPerf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse([]byte(tc.out))
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
