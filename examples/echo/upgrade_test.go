//go:build unix

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/cmdtest"
)

// load is the clients of TestUpgradeUnderLoad: busy connections, each
// sending request after request for a while before it makes way for a
// new one, and a new short connection every millisecond. Every reply is
// checked.
type load struct {
	addr string
	stop chan struct{}
	wg   sync.WaitGroup

	roundTrips atomic.Int64 // replies received whole and right
	conns      atomic.Int64 // connections that ended as they should
	refused    atomic.Int64 // connects that failed
	failed     atomic.Int64 // connections whose replies broke off or differ
	mu         sync.Mutex
	errs       []error
	latencies  []time.Duration // of each short connection, connect to reply
}

// busyFor is how long a busy connection lives: its process, once it has
// handed over, waits that long for it at most.
const busyFor = 100 * time.Millisecond

func startLoad(addr string, busy int) *load {
	ld := &load{addr: addr, stop: make(chan struct{})}
	for i := range busy {
		ld.wg.Go(func() {
			for n := 0; !ld.stopped(); n++ {
				ld.busy(uint64(i)<<32 | uint64(n))
			}
		})
	}
	ld.wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for n := uint64(1 << 63); ; n++ {
			select {
			case <-ld.stop:
				return
			case <-tick.C:
				ld.wg.Go(func() { ld.short(n) })
			}
		}
	})
	return ld
}

func (ld *load) stopped() bool {
	select {
	case <-ld.stop:
		return true
	default:
		return false
	}
}

// end stops the load and waits for every connection to finish.
func (ld *load) end() {
	close(ld.stop)
	ld.wg.Wait()
}

func (ld *load) fail(counter *atomic.Int64, err error) {
	counter.Add(1)
	ld.mu.Lock()
	if len(ld.errs) < 10 {
		ld.errs = append(ld.errs, err)
	}
	ld.mu.Unlock()
}

// request returns the id-th request of a connection: its ID, its number,
// and bytes that depend on both, so that a reply from elsewhere differs.
func request(id uint64, n int) []byte {
	b := make([]byte, 16, 64)
	binary.BigEndian.PutUint64(b, id)
	binary.BigEndian.PutUint64(b[8:], uint64(n))
	for i := range 48 {
		b = append(b, byte(id)+byte(n)*7+byte(i))
	}
	return b
}

// roundTrip sends the n-th request of connection id on c and checks its
// reply.
func (ld *load) roundTrip(c net.Conn, id uint64, n int) error {
	req := request(id, n)
	if _, err := c.Write(req); err != nil {
		return err
	}
	got := make([]byte, len(req))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, req) {
		return fmt.Errorf("connection %#x, request %d: a corrupt reply", id, n)
	}
	ld.roundTrips.Add(1)
	return nil
}

// dial connects to the server, whose reads and writes then have
// cmdtest.Deadline; it counts a failure as refused and reports false.
func (ld *load) dial() (net.Conn, bool) {
	c, err := net.DialTimeout("tcp", ld.addr, cmdtest.Deadline)
	if err != nil {
		ld.fail(&ld.refused, err)
		return nil, false
	}
	c.SetDeadline(time.Now().Add(cmdtest.Deadline))
	return c, true
}

// busy runs one busy connection: request after request for busyFor.
func (ld *load) busy(id uint64) {
	c, ok := ld.dial()
	if !ok {
		return
	}
	defer c.Close()
	end := time.Now().Add(busyFor)
	for n := 0; time.Now().Before(end) && !ld.stopped(); n++ {
		if err := ld.roundTrip(c, id, n); err != nil {
			ld.fail(&ld.failed, err)
			return
		}
	}
	ld.conns.Add(1)
}

// short runs one short connection: one request.
func (ld *load) short(id uint64) {
	start := time.Now()
	c, ok := ld.dial()
	if !ok {
		return
	}
	defer c.Close()
	if err := ld.roundTrip(c, id, 0); err != nil {
		ld.fail(&ld.failed, err)
		return
	}
	took := time.Since(start)
	ld.mu.Lock()
	ld.latencies = append(ld.latencies, took)
	ld.mu.Unlock()
	ld.conns.Add(1)
}

var (
	acceptedLine = regexp.MustCompile(`^echo: accepted (\d+) connections, the first at (\S+), the last at (\S+)$`)
	tookOverLine = regexp.MustCompile(`upgrade: process (\d+) took over after (\S+)$`)
	stoppedLine  = regexp.MustCompile(`^echo: (stopped|stop: .*)$|connections still open`)
)

// generation is one process of the chain of upgrades: what it said as it
// stopped.
type generation struct {
	accepted    int
	first, last time.Time
}

// stopped reads what a process says as it stops: how many connections it
// accepted and when, then that it stopped, having closed none of them.
func stopped(t *testing.T, cmd *cmdtest.Cmd) generation {
	t.Helper()
	m := cmd.Expect(t, acceptedLine)
	var g generation
	var err error
	g.accepted, _ = strconv.Atoi(m[1])
	g.first, err = time.Parse(time.RFC3339Nano, m[2])
	require.NoError(t, err)
	g.last, err = time.Parse(time.RFC3339Nano, m[3])
	require.NoError(t, err)
	require.Equal(t, "echo: stopped", cmd.Expect(t, stoppedLine)[0], "it closed connections itself")
	return g
}

// readPID waits for the PID file at path to name a process, and returns
// its ID.
func readPID(t *testing.T, path string) int {
	t.Helper()
	end := time.Now().Add(cmdtest.Deadline)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			return pid
		}
		require.ErrorIs(t, err, os.ErrNotExist)
		require.True(t, time.Now().Before(end), "no PID file")
		time.Sleep(time.Millisecond)
	}
}

// Three upgrades in a row under load, each on SIGHUP: 200 busy
// connections, each sending request after request for 100 ms before
// another takes its place, and a new connection every millisecond. No
// connect is refused, no reply is lost or corrupt, and every connection
// finishes on the process that accepted it: each old process stops
// having closed none itself. The gap from one process's last accept to
// the next one's first is logged; it is negative while both accept.
func TestUpgradeUnderLoad(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "echo.pid")
	args := []string{"-addr", "tcp://127.0.0.1:0", "-loops", "2", "-upgrade-on", "SIGHUP", "-pid-file", pidFile, "-drain", "10s"}
	if p := os.Getenv("SLUICE_TEST_POLLER"); p != "" {
		args = append(args, "-poller", p) // as the engine's tests take it
	}
	cmd, addr := startEcho(t, nil, args...)
	require.Equal(t, cmd.Process.Pid, readPID(t, pidFile))

	ld := startLoad(addr, 200)
	waitLoad := func(n int64) {
		t.Helper()
		end := time.Now().Add(cmdtest.Deadline)
		for target := ld.conns.Load() + n; ld.conns.Load() < target; {
			require.True(t, time.Now().Before(end), "the load made no progress")
			time.Sleep(time.Millisecond)
		}
	}
	waitLoad(500)
	var gens []generation
	pid := cmd.Process.Pid
	for range 3 {
		require.NoError(t, syscall.Kill(pid, syscall.SIGHUP))
		m := cmd.Expect(t, tookOverLine)
		next, _ := strconv.Atoi(m[1])
		require.NotEqual(t, pid, next)
		require.Equal(t, next, readPID(t, pidFile), "the PID file names the process serving")
		t.Logf("process %d took over from %d after %s", next, pid, m[2])
		gens = append(gens, stopped(t, cmd))
		pid = next
		waitLoad(500) // the new process serves before the next upgrade
	}
	ld.end()
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	gens = append(gens, stopped(t, cmd))
	lines, err := cmd.Exit(t)
	require.NoError(t, err, "%q", lines)
	_, err = os.Stat(pidFile)
	assert.ErrorIs(t, err, os.ErrNotExist, "the last process removes the PID file as it stops")

	assert.Zero(t, ld.refused.Load(), "refused connects: %v", ld.errs)
	assert.Zero(t, ld.failed.Load(), "connections broken off or answered wrong: %v", ld.errs)
	accepted := 0
	for i, g := range gens {
		accepted += g.accepted
		if i > 0 {
			t.Logf("hand-over %d: %d connections accepted by the old process; from its last accept to the new one's first: %v",
				i, gens[i-1].accepted, g.first.Sub(gens[i-1].last))
		}
	}
	assert.EqualValues(t, ld.conns.Load(), accepted, "every connection was accepted once, and ended as it should")
	slices.Sort(ld.latencies)
	n := len(ld.latencies)
	t.Logf("%d round trips on %d connections; short connections, connect to reply: median %v, p99 %v, max %v",
		ld.roundTrips.Load(), ld.conns.Load(), ld.latencies[n/2], ld.latencies[n*99/100], ld.latencies[n-1])
}
