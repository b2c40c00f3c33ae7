//go:build unix

package sluice

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/socket"
	"github.com/sluicenet/sluice/internal/syncbuf"
)

// namer greets each connection with its name, then echoes: a client
// knows which engine took it.
type namer struct {
	echoHandler
	name byte
}

func (g namer) OnOpen(Conn) ([]byte, Action) { return []byte{g.name}, None }

// greeted dials addr and returns the connection and the name of the
// engine that greeted it.
func greeted(t testing.TB, addr string) (net.Conn, byte) {
	t.Helper()
	c := dial(t, addr)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 1)
	_, err := io.ReadFull(c, b)
	require.NoError(t, err, "greeting from %s", addr)
	return c, b[0]
}

// listenerFile opens a listener on addr, as a parent or a service manager
// would, and returns a copy of it as a file, the listener closed.
func listenerFile(t testing.TB, network, addr string) *os.File {
	t.Helper()
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	var f *os.File
	switch ln := ln.(type) {
	case *net.TCPListener:
		f, err = ln.File()
	case *net.UnixListener:
		ln.SetUnlinkOnClose(false)
		f, err = ln.File()
	}
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	return f
}

// A socket listening already, handed over as a file or as a net.Listener,
// is served with the ListenerOptions it was given (its PROXY protocol
// mode, its TLS), reported by Addrs, and taken over: the engine closes
// what it was handed, and leaves a unix socket's file in place.
func TestListenerHandedOver(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		path := filepath.Join(t.TempDir(), "handed.sock")
		t.Cleanup(func() {
			// After the engine has stopped: the file is not its own.
			_, err := os.Stat(path)
			assert.NoError(t, err, "the engine removed a unix socket's file it did not make")
		})
		tcp := listenerFile(t, "tcp", "127.0.0.1:0")
		plain, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		unix, err := net.Listen("unix", path)
		require.NoError(t, err)
		want := []string{"tcp://" + addrOf(t, tcp), addrName(plain.Addr()), "unix://" + path}
		t.Cleanup(func() {
			// After the engine has stopped (the development backend serves
			// the listener itself until then).
			plain.(*net.TCPListener).SetDeadline(time.Now())
			_, err := plain.Accept()
			assert.ErrorIs(t, err, net.ErrClosed, "the listener was not closed")
		})

		h := newLifetimes()
		opens := logOpens(h)
		eng, _ := serveAddr(t, "", h, p, WithNumEventLoop(2),
			WithListenerFile(tcp, ListenProxyProtocol(ProxyRequired)),
			WithNetListener(plain),
			WithNetListener(unix, ListenTLS(serverTLS(t))))
		var got []string
		for _, a := range eng.Addrs() {
			got = append(got, addrName(a))
		}
		require.Equal(t, want, got)
		assert.ErrorIs(t, tcp.Close(), os.ErrClosed, "the file was not closed")

		var out outcome
		// PROXY required: a header names the client, its absence is refused.
		c := dial(t, want[0])
		require.NoError(t, echoAfter(c, []byte("PROXY TCP4 192.0.2.7 198.51.100.1 40000 443\r\n"), []byte("via proxy")))
		assert.Equal(t, "192.0.2.7:40000", opens.get(h.next(t)).remote)
		c.Close()
		c = dial(t, want[0])
		_, err = c.Write([]byte("no header\r\n"))
		require.NoError(t, err)
		requireRefused(t, c)

		c = dial(t, want[1])
		require.NoError(t, echoOnce(c, []byte("plain")))
		assert.Equal(t, want[1], opens.get(h.next(t)).listener)
		c.Close()

		tc := dialTLS(t, want[2], clientTLS(t, 0))
		require.NoError(t, echoOnce(tc, []byte("over TLS")))
		assert.Equal(t, want[2], opens.get(h.next(t)).listener)
		// The client ends first and reads to the end, session tickets
		// and all, so that the server sees its end rather than a reset.
		require.NoError(t, tc.CloseWrite())
		_, err = io.Copy(io.Discard, tc)
		require.NoError(t, err)
		tc.Close()

		out.Stats = closedStats(t, eng)
		assert.EqualValues(t, 3, out.Stats.Accepted)
		assert.EqualValues(t, 1, out.Stats.ProxyMissing)
		return out
	})
}

// addrOf returns the address a listener's file is bound to.
func addrOf(t testing.TB, f *os.File) string {
	t.Helper()
	ln, err := net.FileListener(f)
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// A second engine serves copies of the first's listeners (DupListeners),
// both at once, until the first stops accepting: from then on every new
// client reaches the second, none is refused, and a client of the first
// is served by it until it leaves. The first's stop leaves the unix
// socket's file to the second. With SO_REUSEPORT each loop's socket is
// handed over.
func TestDupListenersHandsOver(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reuseport=%v", reuse), func(t *testing.T) {
			onEachPoller(t, func(t *testing.T, p Option) outcome {
				path := filepath.Join(t.TempDir(), "dup.sock")
				first, addr := serve(t, namer{name: 'A'}, p, WithNumEventLoop(2), WithReusePort(reuse),
					WithListener("unix://"+path))
				// A client of the first, open across the hand-over.
				old, by := greeted(t, addr)
				require.Equal(t, byte('A'), by)
				files, err := first.DupListeners()
				require.NoError(t, err)
				var names []string
				for _, f := range files {
					names = append(names, f.Name())
				}
				want := []string{"tcp://127.0.0.1:0", "unix://" + path}
				if reuse && socket.ReusePort {
					want = []string{"tcp://127.0.0.1:0", "tcp://127.0.0.1:0", "unix://" + path}
				}
				require.Equal(t, want, names)
				// The copies are close-on-exec: a process started without
				// them in its ExtraFiles does not inherit them.
				ls, err := exec.Command("ls", "-l", "/proc/self/fd").Output()
				require.NoError(t, err)
				assert.NotContains(t, string(ls), "socket:", "a process started meanwhile inherited a copy")
				// The same configuration, which takes up each address
				// from the file named by it rather than binding it.
				second, _ := serve(t, namer{name: 'B'}, p, WithNumEventLoop(2), WithReusePort(reuse),
					WithListener("unix://"+path), WithListenerFiles(files))
				require.Len(t, second.Addrs(), 2)
				require.Equal(t, addrName(first.Addrs()[0]), addrName(second.Addrs()[0]))

				// Both accept from the socket until the first stops, and
				// clients keep coming while it does: each is served by
				// whichever accepted it, none dropped.
				stop := make(chan struct{})
				var clients sync.WaitGroup
				var served atomic.Int64
				for range 4 {
					clients.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							c, _ := greeted(t, addr)
							if err := echoOnce(c, []byte("meanwhile")); err != nil {
								t.Errorf("a client while the first stops accepting: %v", err)
								return
							}
							c.Close()
							served.Add(1)
						}
					})
				}
				waitFor(t, 10*time.Second, func() bool { return served.Load() > 20 }, func() string { return "no client served" })
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				// The first's client is still open: StopAccepting gives up waiting for it.
				require.ErrorIs(t, first.StopAccepting(ctx), context.DeadlineExceeded)
				close(stop)
				clients.Wait()
				_, err = first.DupListeners()
				assert.ErrorIs(t, err, ErrEngineStopped, "copies of listeners that are closed")

				for i := range 20 {
					for _, a := range []string{addr, "unix://" + path} {
						c, by := greeted(t, a)
						require.Equal(t, byte('B'), by, "client %d of %s", i, a)
						require.NoError(t, echoOnce(c, []byte("hello")))
						c.Close()
					}
				}
				require.NoError(t, echoOnce(old, []byte("still served by the first")))
				old.Close()
				stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				require.NoError(t, first.Stop(stopCtx))
				c, by := greeted(t, "unix://"+path)
				assert.Equal(t, byte('B'), by)
				require.NoError(t, echoOnce(c, []byte("after the first stopped")))
				c.Close()
				// Which engine took a client before the first stopped
				// accepting is the kernel's choice.
				closedStats(t, second)
				return outcome{}
			})
		})
	}
}

// named returns a copy of f's socket under another name.
func named(t testing.TB, f *os.File, name string) *os.File {
	t.Helper()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	var fd int
	var dupErr error
	require.NoError(t, rc.Control(func(s uintptr) { fd, dupErr = syscall.Dup(int(s)) }))
	require.NoError(t, dupErr)
	require.NoError(t, f.Close())
	return os.NewFile(uintptr(fd), name)
}

// Each of WithListenerFiles' files is served in place of the address it is
// named by, with that address's options, Run's (WithTLS) or a
// WithListener's; a file no address names is served after them with the
// options given with the files.
func TestListenerFilesTakeTheirAddresses(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		const source = "192.0.2.7:40000"
		header := []byte("PROXY TCP4 192.0.2.7 198.51.100.1 40000 443\r\n")
		tlsFile := named(t, listenerFile(t, "tcp", "127.0.0.1:0"), "tcp://127.0.0.1:0")
		proxyFile := named(t, listenerFile(t, "tcp", "127.0.0.1:0"), "127.0.0.1:0")
		otherFile := named(t, listenerFile(t, "tcp", "127.0.0.1:0"), "other")
		want := []string{"tcp://" + addrOf(t, tlsFile), "tcp://" + addrOf(t, proxyFile), "tcp://" + addrOf(t, otherFile)}

		h := newLifetimes()
		opens := logOpens(h)
		eng, _ := serve(t, h, p, WithTLS(serverTLS(t)),
			WithListener("127.0.0.1:0", ListenProxyProtocol(ProxyRequired)),
			WithListenerFiles([]*os.File{otherFile, proxyFile, tlsFile}, ListenProxyProtocol(ProxyOptional)))
		var got []string
		for _, a := range eng.Addrs() {
			got = append(got, addrName(a))
		}
		require.Equal(t, want, got, "each address from its file, in their order; the rest after")

		tc := dialTLS(t, want[0], clientTLS(t, 0))
		require.NoError(t, echoOnce(tc, []byte("Run's address, with TLS")))
		h.next(t)
		tc.Close()
		c := dial(t, want[1])
		require.NoError(t, echoAfter(c, header, []byte("a header, required")))
		assert.Equal(t, source, opens.get(h.next(t)).remote)
		c.Close()
		c = dial(t, want[2])
		require.NoError(t, echoAfter(c, header, []byte("a header, optional")))
		c.Close()
		c = dial(t, want[2])
		require.NoError(t, echoOnce(c, []byte("none, optional")))
		c.Close()
		s := closedStats(t, eng)
		assert.EqualValues(t, 4, s.Accepted)
		return outcome{Stats: s}
	})
}

// What is not a listening stream socket is refused, with an error that
// says so, and closed all the same; a listener with no descriptor is not
// supported.
func TestNotAListener(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	udpFile, err := udp.(*net.UDPConn).File()
	require.NoError(t, err)
	udp.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	conn := dial(t, "tcp://"+ln.Addr().String())
	connFile, err := conn.(*net.TCPConn).File()
	require.NoError(t, err)
	regular, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	require.NoError(t, err)

	for _, tt := range []struct {
		name string
		f    *os.File
	}{{"nil", nil}, {"udp", udpFile}, {"connected", connFile}, {"regular file", regular}} {
		t.Run(tt.name, func(t *testing.T) {
			leaks := leakCheck(t)
			err := Run(echoHandler{}, "", WithPoller(testPoller), WithListenerFile(tt.f))
			require.ErrorIs(t, err, ErrNotListener)
			if tt.f != nil {
				assert.ErrorIs(t, tt.f.Close(), os.ErrClosed, "the file was not closed")
			}
			leaks()
		})
	}
	t.Run("tls.Listener", func(t *testing.T) {
		if stdBackend {
			t.Skip("the standard library's backend serves any net.Listener")
		}
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		err = Run(echoHandler{}, "", WithPoller(testPoller), WithNetListener(tls.NewListener(inner, serverTLS(t))))
		require.ErrorIs(t, err, errors.ErrUnsupported)
		_, err = inner.Accept()
		assert.ErrorIs(t, err, net.ErrClosed, "the listener was not closed")
	})
}

// ListenFDs reads the environment as sd_listen_fds does and removes it,
// whatever it finds: nothing unless LISTEN_PID names this process, and an
// error for what it cannot read. (Sockets it finds are tested in a
// process of their own, TestListenFDsServes: in this one descriptors 3
// and up are the runtime's.)
func TestListenFDsEnvironment(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	for _, tt := range []struct {
		name      string
		env       []string // LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES; "-" unset
		malformed bool
	}{
		{"not activated", []string{"-", "-", "-"}, false},
		{"another process's", []string{strconv.Itoa(os.Getpid() + 1), "2", "a:b"}, false},
		{"no sockets", []string{pid, "0", "-"}, false},
		{"pid not a number", []string{"x", "1", "-"}, true},
		{"count not a number", []string{pid, "one", "-"}, true},
		{"negative count", []string{pid, "-1", "-"}, true},
		{"too few names", []string{pid, "2", "web"}, true},
		{"too many names", []string{pid, "1", "web:admin"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i, name := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
				if tt.env[i] == "-" {
					os.Unsetenv(name)
				} else {
					t.Setenv(name, tt.env[i])
				}
			}
			files, err := ListenFDs()
			if tt.malformed {
				assert.ErrorIs(t, err, ErrSocketActivation)
			} else {
				assert.NoError(t, err)
			}
			assert.Empty(t, files)
			for _, name := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
				_, set := os.LookupEnv(name)
				assert.False(t, set, "%s left in the environment", name)
			}
		})
	}
}

// activatedChild is set in the process TestListenFDsServes starts.
const activatedChild = "SLUICE_TEST_ACTIVATED"

// A process started as a service manager starts it, with listening
// sockets from descriptor 3 on and LISTEN_PID naming it, serves each
// socket ListenFDs finds under the name it was given, and hands none of
// them, nor the variables, to the processes it starts.
func TestListenFDsServes(t *testing.T) {
	if os.Getenv(activatedChild) != "" {
		activated()
		return
	}
	tcp := listenerFile(t, "tcp", "127.0.0.1:0")
	path := filepath.Join(t.TempDir(), "activated.sock")
	unix := listenerFile(t, "unix", path)
	addrs := []string{"tcp://" + addrOf(t, tcp), "unix://" + path}
	// LISTEN_PID must name the process itself: a shell sets it to its own
	// and becomes the test binary.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" -test.run='^TestListenFDsServes$'`, os.Args[0])
	cmd.Env = append(os.Environ(), activatedChild+"=1", "LISTEN_FDS=2", "LISTEN_FDNAMES=web:admin",
		"SLUICE_TEST_POLLER="+testPoller.String())
	cmd.ExtraFiles = []*os.File{tcp, unix}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	tcp.Close()
	unix.Close()
	lines := bufio.NewScanner(out)
	require.True(t, lines.Scan(), "the child said nothing: %s", &stderr)
	assert.Equal(t, "its child sees nothing", lines.Text())
	require.True(t, lines.Scan(), "%s", &stderr)
	assert.Equal(t, "serving web admin", lines.Text())
	for _, a := range addrs {
		c := dial(t, a)
		require.NoError(t, echoOnce(c, []byte("activated")), "through %s", a)
		c.Close()
	}
	stdin.Close()
	require.NoError(t, cmd.Wait(), "%s", &stderr)
}

// activated is the process TestListenFDsServes starts: it serves what
// ListenFDs finds until its standard input ends.
func activated() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	files, err := ListenFDs()
	if err != nil {
		fail(err)
	}
	var names []string
	opts := []Option{WithPoller(testPoller)}
	for _, f := range files {
		names = append(names, f.Name())
		opts = append(opts, WithListenerFile(f))
	}
	// The sockets are close-on-exec and the variables gone: a process it
	// starts, here before the engine has closed the files, finds nothing.
	env, err := exec.Command("env").Output()
	if err != nil {
		fail(err)
	}
	if strings.Contains(string(env), "LISTEN_") {
		fail(fmt.Errorf("the child's environment: %s", env))
	}
	ls, err := exec.Command("ls", "-l", "/proc/self/fd").Output()
	if err != nil {
		fail(err)
	}
	if strings.Contains(string(ls), "socket:") {
		fail(fmt.Errorf("the child inherited sockets: %s", ls))
	}
	fmt.Println("its child sees nothing")
	eng, err := Start(echoHandler{}, "", opts...)
	if err != nil {
		fail(err)
	}
	fmt.Println("serving", strings.Join(names, " "))
	io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// DupListeners hands over stream listeners only: beside a UDP socket they
// come in their order, and an engine that listens on UDP alone has none to
// hand over, which is no error until it stops.
func TestDupListenersBesideUDP(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		mixed, _ := serveAddr(t, "udp4://127.0.0.1:0", BuiltinEventEngine{}, p, WithListener("tcp://127.0.0.1:0"))
		files, err := mixed.DupListeners()
		require.NoError(t, err)
		var names []string
		for _, f := range files {
			names = append(names, f.Name())
			f.Close()
		}
		assert.Equal(t, []string{"tcp://127.0.0.1:0"}, names)

		alone, _ := serveAddr(t, "udp4://127.0.0.1:0", BuiltinEventEngine{}, p)
		files, err = alone.DupListeners()
		require.NoError(t, err, "an engine serving UDP alone")
		assert.Empty(t, files)
		require.NoError(t, alone.Stop(context.Background()))
		_, err = alone.DupListeners()
		require.ErrorIs(t, err, ErrEngineStopped, "once stopped")
		return outcome{}
	})
}
