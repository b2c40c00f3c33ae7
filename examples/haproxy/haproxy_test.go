//go:build unix

// Package haproxy_test runs haproxy.cfg, the example configuration of
// HAProxy in front of several Sluice servers, with the servers it names.
package haproxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
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

func TestMain(m *testing.M) { cmdtest.Main(m) }

// haproxy returns the path of haproxy, and skips the test without it,
// except in CI.
func haproxy(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("haproxy")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatal("haproxy is not installed, and CI is set: install haproxy")
	}
	t.Skip("haproxy is not installed (apt-get install haproxy)")
	return ""
}

// client is a RESP client.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(addr string) (*client, error) {
	c, err := net.DialTimeout("tcp", addr, cmdtest.Deadline)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(2 * cmdtest.Deadline))
	return &client{c, bufio.NewReader(c)}, nil
}

// do sends an inline command and returns its reply: a simple string, an
// error's text, or a bulk string.
func (cl *client) do(cmd string) (string, error) {
	if _, err := io.WriteString(cl.c, cmd+"\r\n"); err != nil {
		return "", err
	}
	line, err := cl.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" || line[0] != '$' {
		return line, nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		return "", err
	}
	b := make([]byte, n+2)
	_, err = io.ReadFull(cl.r, b)
	return string(b[:n]), err
}

var processID = regexp.MustCompile(`process_id:(\d+)`)

// whoami returns the ID of the server's process, and the address the
// server has for this client.
func (cl *client) whoami() (pid int, addr string, err error) {
	info, err := cl.do("INFO server")
	if err != nil {
		return 0, "", err
	}
	m := processID.FindStringSubmatch(info)
	if m == nil {
		return 0, "", fmt.Errorf("no process_id in %q", info)
	}
	pid, _ = strconv.Atoi(m[1])
	ci, err := cl.do("CLIENT INFO")
	if err != nil {
		return 0, "", err
	}
	for _, f := range strings.Fields(ci) {
		if a, ok := strings.CutPrefix(f, "addr="); ok {
			return pid, a, nil
		}
	}
	return 0, "", fmt.Errorf("no addr in %q", ci)
}

// Three examples/redis servers behind HAProxy as haproxy.cfg sets it up:
// every client is served, each server sees its clients' own addresses (the
// PROXY header), and leastconn spreads them. One server killed in the
// middle of the load takes only its own clients' connections with it:
// every other client goes on without an error, and new clients all reach
// the two left, none refused.
func TestThreeServersBehindHAProxy(t *testing.T) {
	bin := haproxy(t)
	dir := cmdtest.Build(t, "../redis")
	servers := map[int]*cmdtest.Cmd{} // by process ID
	var env []string
	for i := range 3 {
		cmd := cmdtest.Start(t, dir, "redis", nil, "-addr", "tcp://127.0.0.1:0", "-loops", "2", "-proxy-protocol", "required")
		addr := cmd.Expect(t, regexp.MustCompile(`^redis: listening on (.+)$`))[1]
		servers[cmd.Process.Pid] = cmd
		env = append(env, fmt.Sprintf("SLUICE_R%d=%s", i+1, addr))
	}
	// HAProxy takes its frontend's socket from the test, which knows its
	// address at once, and clients queue until HAProxy accepts them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	front := ln.Addr().String()
	f, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	ln.Close()
	hp := exec.Command(bin, "-f", "haproxy.cfg", "-db")
	hp.Env = append(append(os.Environ(), env...), "SLUICE_BIND=fd@3")
	hp.ExtraFiles = []*os.File{f}
	said, err := os.Create(t.TempDir() + "/haproxy.out")
	require.NoError(t, err)
	hp.Stdout, hp.Stderr = said, said
	require.NoError(t, hp.Start())
	f.Close()
	t.Cleanup(func() {
		hp.Process.Kill()
		hp.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(said.Name())
			t.Logf("haproxy said:\n%s", out)
		}
	})

	var (
		mu       sync.Mutex
		byServer = map[int]int{} // clients by the process serving them
		failed   = map[int]int{} // clients whose connection broke, by process
		errs     []string
	)
	stop := make(chan struct{})
	var roundTrips atomic.Int64
	var wg sync.WaitGroup
	run := func(i int) {
		cl, err := dial(front)
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("client %d: connect: %v", i, err))
			mu.Unlock()
			return
		}
		defer cl.c.Close()
		pid, addr, err := cl.whoami()
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("client %d: %v", i, err))
			mu.Unlock()
			return
		}
		if addr != cl.c.LocalAddr().String() {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("client %d: the server sees %s, not the client's %s", i, addr, cl.c.LocalAddr()))
			mu.Unlock()
		}
		mu.Lock()
		byServer[pid]++
		mu.Unlock()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("k%d", i)
			if r, err := cl.do(fmt.Sprintf("SET %s %d", key, n)); err != nil || r != "+OK" {
				mu.Lock()
				failed[pid]++
				mu.Unlock()
				return
			}
			if r, err := cl.do("GET " + key); err != nil || r != strconv.Itoa(n) {
				mu.Lock()
				failed[pid]++
				mu.Unlock()
				return
			}
			roundTrips.Add(1)
		}
	}
	const before, after = 30, 30
	for i := range before {
		wg.Go(func() { run(i) })
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		end := time.Now().Add(cmdtest.Deadline)
		for !cond() {
			require.True(t, time.Now().Before(end), what)
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the clients were not all served", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range byServer {
			n += c
		}
		return n == before
	})
	mu.Lock()
	spread := fmt.Sprint(byServer)
	victim, most := 0, -1
	for pid, n := range byServer {
		assert.Positive(t, n, "leastconn gives every server clients: %s", spread)
		if n > most {
			victim, most = pid, n
		}
	}
	assert.Len(t, byServer, 3, "leastconn gives every server clients: %s", spread)
	mu.Unlock()

	done := roundTrips.Load()
	waitFor("no load", func() bool { return roundTrips.Load() > done+1000 })
	require.NoError(t, servers[victim].Process.Signal(syscall.SIGKILL))
	waitFor("the victim's clients did not all fail", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failed[victim] == most
	})
	for i := range after {
		wg.Go(func() { run(before + i) })
	}
	waitFor("the new clients were not all served", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range byServer {
			n += c
		}
		return n == before+after || len(errs) > 0
	})
	done = roundTrips.Load()
	waitFor("no load after the kill", func() bool { return roundTrips.Load() > done+1000 })
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, errs)
	assert.Equal(t, map[int]int{victim: most}, failed, "only the killed server's clients failed")
	assert.Equal(t, most, byServer[victim], "no new client reached the killed server: %v", byServer)
	t.Logf("clients by server %v, the killed one %d; %d round trips", byServer, victim, roundTrips.Load())
	for pid, s := range servers {
		if pid != victim {
			require.NoError(t, s.Process.Signal(syscall.SIGTERM))
			_, err := s.Exit(t)
			assert.NoError(t, err, "server %d", pid)
		}
	}
}
