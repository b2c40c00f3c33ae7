//go:build unix

package upgrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// role tells the successor a test starts (this test binary, started again
// by Upgrade with the same arguments) what to do: serve, exit at once, or
// never say it is ready.
const role = "SLUICE_UPGRADE_TEST_ROLE"

const deadline = 20 * time.Second

// namer greets each connection with its name, then echoes: a client knows
// which process took it.
type namer struct {
	sluice.BuiltinEventEngine
	name byte
}

func (n namer) OnOpen(sluice.Conn) ([]byte, sluice.Action) { return []byte{n.name}, sluice.None }

func (namer) OnTraffic(c sluice.Conn) sluice.Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return sluice.None
}

// greeted dials addr, as Addrs gives it, and returns the connection and
// the name of the process that greeted it.
func greeted(t testing.TB, a net.Addr) (net.Conn, byte) {
	t.Helper()
	c, err := net.DialTimeout(a.Network(), a.String(), deadline)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(deadline))
	b := make([]byte, 1)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err, "greeting from %s", a)
	return c, b[0]
}

// echo sends p on c and reads it back.
func echo(t testing.TB, c net.Conn, p string) {
	t.Helper()
	_, err := io.WriteString(c, p)
	require.NoError(t, err)
	got := make([]byte, len(p))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, p, string(got))
}

// successor is the process Upgrade starts from TestUpgrade: the same
// engine configuration as its predecessor's, served from the sockets it
// was handed, until SIGTERM.
func successor(t *testing.T, listen []string) {
	switch os.Getenv(role) {
	case "exit":
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	}
	u, err := New(Config{PIDFile: os.Getenv("PIDFILE")})
	if err != nil {
		fail(err)
	}
	var names []string
	for _, f := range u.Files() {
		names = append(names, f.Name())
	}
	if got, want := strings.Join(names, " "), strings.Join(listen, " "); got != want {
		fail(fmt.Errorf("handed %q, want %q", got, want))
	}
	if _, set := os.LookupEnv(Env); set {
		fail(errors.New(Env + " left in the environment"))
	}
	eng, err := sluice.Start(namer{name: 'B'}, listen[0], sluice.WithListener(listen[1]), sluice.WithListenerFiles(u.Files()))
	if err != nil {
		fail(err)
	}
	if err := u.Ready(); err != nil {
		fail(err)
	}
	u.Wait(eng)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		fail(err)
	}
	u.Close()
	// Not os.Exit(0), which go test's flags, handed on with the
	// arguments, make a test failure.
	syscall.Exit(0)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "successor:", err)
	os.Exit(1)
}

// A successor started by Upgrade takes up every listener, a TCP port and a
// unix socket whose name needs escaping, and writes the PID file once it
// serves; from then on the old process can stop accepting, and every
// new client reaches the successor while a client of the old one is
// served by it until it leaves. A successor that exits, or is not ready in
// time, fails the upgrade, and the old process serves on.
func TestUpgrade(t *testing.T) {
	if _, child := os.LookupEnv(Env); child {
		successor(t, listenOn(os.Getenv("UPGRADE_TEST_DIR")))
		return
	}
	// Short, so that the socket's path fits sun_path.
	dir, err := os.MkdirTemp("", "up")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	t.Setenv("UPGRADE_TEST_DIR", dir)
	listen := listenOn(dir)
	pidFile := filepath.Join(dir, "pid")
	t.Setenv("PIDFILE", pidFile)
	u, err := New(Config{PIDFile: pidFile, ReadyTimeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Empty(t, u.Files(), "a process started afresh is handed nothing")
	assert.Equal(t, strconv.Itoa(os.Getpid()), readPID(t, pidFile), "a process started afresh writes the PID file at once")
	eng, err := sluice.Start(namer{name: 'A'}, listen[0], sluice.WithListener(listen[1]))
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		assert.NoError(t, eng.Stop(ctx))
		u.Close()
	}()
	require.NoError(t, u.Ready())
	assert.Equal(t, strconv.Itoa(os.Getpid()), readPID(t, pidFile))
	addrs := eng.Addrs()

	for _, r := range []string{"exit", "hang"} {
		t.Setenv(role, r)
		_, err := u.Upgrade(eng)
		require.ErrorIs(t, err, ErrNotReady, "a successor told to %s", r)
		c, by := greeted(t, addrs[0])
		assert.Equal(t, byte('A'), by, "the old process serves on")
		c.Close()
		assert.Equal(t, strconv.Itoa(os.Getpid()), readPID(t, pidFile))
	}
	select {
	case <-u.Exited():
		t.Fatal("Exited's channel is closed after failed upgrades")
	default:
	}

	t.Setenv(role, "serve")
	var old net.Conn
	for by := byte(0); by != 'A'; { // the old process's, open across the upgrade
		old, by = greeted(t, addrs[0])
	}
	pid, err := u.Upgrade(eng)
	require.NoError(t, err)
	<-u.Exited()
	assert.Equal(t, strconv.Itoa(pid), readPID(t, pidFile), "the successor wrote the PID file before it said it was ready")
	_, err = u.Upgrade(eng)
	assert.ErrorIs(t, err, ErrUpgraded)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, eng.StopAccepting(ctx), context.DeadlineExceeded, "the old client is still open")
	for i := range 20 {
		for _, a := range addrs {
			c, by := greeted(t, a)
			require.Equal(t, byte('B'), by, "client %d of %s", i, a)
			echo(t, c, "hello")
			c.Close()
		}
	}
	echo(t, old, "still served by the old process")
	old.Close()

	p, err := os.FindProcess(pid)
	require.NoError(t, err)
	require.NoError(t, p.Signal(syscall.SIGTERM))
	st, err := p.Wait()
	require.NoError(t, err)
	assert.True(t, st.Success(), "the successor: %v", st)
	_, err = os.Stat(pidFile)
	assert.ErrorIs(t, err, os.ErrNotExist, "the successor's Close removes the PID file that names it")
}

// listenOn returns the addresses TestUpgrade listens on: a TCP port, and
// a unix socket in dir whose name needs escaping in Env.
func listenOn(dir string) []string {
	return []string{"tcp://127.0.0.1:0", "unix://" + filepath.Join(dir, "a,b:c.sock")}
}

func readPID(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// Ready tells systemd that the service is ready and this process is its
// main one, over NOTIFY_SOCKET, when it is set.
func TestReadyNotifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	u, err := New(Config{})
	require.NoError(t, err)
	defer u.Close()
	require.NoError(t, u.Ready())
	ln.SetReadDeadline(time.Now().Add(deadline))
	b := make([]byte, 256)
	n, err := ln.Read(b)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("READY=1\nMAINPID=%d", os.Getpid()), string(b[:n]))
}

// Default keeps the address a program listens on unless told otherwise
// when the process was handed nothing, or a socket named by it; handed
// others, it serves those alone.
func TestDefault(t *testing.T) {
	named := func(name string) *os.File { return os.NewFile(1<<20, name) } // no descriptor: a name
	assert.Equal(t, "tcp://:9000", (&Upgrader{}).Default("tcp://:9000"))
	assert.Equal(t, "tcp://:9000", (&Upgrader{files: []*os.File{named("x"), named("tcp://:9000")}}).Default("tcp://:9000"))
	assert.Equal(t, "", (&Upgrader{files: []*os.File{named("echo.socket")}}).Default("tcp://:9000"))
}

func TestParseSignal(t *testing.T) {
	for name, want := range map[string]os.Signal{"": nil, "none": nil, "SIGHUP": syscall.SIGHUP, "USR2": syscall.SIGUSR2} {
		s, err := ParseSignal(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, s, name)
	}
	_, err := ParseSignal("SIGKILL")
	assert.Error(t, err)
}

// An Env that does not unescape is refused.
func TestMalformed(t *testing.T) {
	t.Setenv(Env, "tcp%zz")
	_, err := New(Config{})
	assert.ErrorIs(t, err, ErrMalformed)
}

// A PID file that cannot be written fails New.
func TestPIDFileUnwritable(t *testing.T) {
	_, err := New(Config{PIDFile: filepath.Join(t.TempDir(), "missing", "pid")})
	assert.ErrorIs(t, err, os.ErrNotExist)
}
