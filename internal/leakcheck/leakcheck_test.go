package leakcheck

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a test whose Fatal notes what it says instead of ending it,
// so that a test can see a check fail.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.failed = append(r.failed, fmt.Sprint(args...)) }

// check runs a leak check around leak, which leaves what it will behind,
// and returns what the check said.
func check(t *testing.T, within time.Duration, leak func()) []string {
	r := &recorder{TB: t}
	done := Start(r, within)
	leak()
	done()
	return r.failed
}

// A test that leaves nothing behind passes, also one whose descriptors
// and goroutines end only while the check waits.
func TestNothingLeftPasses(t *testing.T) {
	assert.Empty(t, check(t, time.Second, func() {}))
	assert.Empty(t, check(t, 5*time.Second, func() {
		f, err := os.Open(os.DevNull)
		require.NoError(t, err)
		go func() {
			time.Sleep(20 * time.Millisecond)
			f.Close()
		}()
	}), "a descriptor and a goroutine that end while the check waits")
}

// A descriptor left open fails the check, which names it, a socket with
// its address.
func TestDescriptorLeftFails(t *testing.T) {
	if !Descriptors() {
		t.Skip("the system does not list its descriptors")
	}
	var f *os.File
	var ln net.Listener
	failed := check(t, 50*time.Millisecond, func() {
		var err error
		f, err = os.Open(os.DevNull)
		require.NoError(t, err)
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	})
	defer f.Close()
	defer ln.Close()
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], " "+os.DevNull)
	assert.Contains(t, failed[0], ln.Addr().String())
	if _, err := os.Stat("/proc/self/net/tcp"); err == nil {
		assert.Contains(t, failed[0], "tcp state 0A", "the socket's state: listening")
	}
	assert.NotContains(t, failed[0], "goroutine ", "no goroutine was left: no stacks")
}

// Goroutines left running fail the check, which shows their stacks. (It
// leaves three: the goroutine of the test before this one may still be
// ending as the check starts, and one fewer would then even the count.)
func TestGoroutineLeftFails(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	failed := check(t, 50*time.Millisecond, func() {
		for range 3 {
			go leftBehind(release)
		}
	})
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], "leakcheck.leftBehind")
}

func leftBehind(release chan struct{}) { <-release }

// Descriptors is true where the process's descriptors are listed.
func TestDescriptors(t *testing.T) {
	_, err := os.ReadDir("/proc/self/fd")
	assert.Equal(t, err == nil, Descriptors())
	if Descriptors() {
		assert.NotEmpty(t, openFDs())
	}
}
