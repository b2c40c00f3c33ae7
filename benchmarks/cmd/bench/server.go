package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

var (
	errNotReady  = errors.New("server not listening")
	errExited    = errors.New("server exited early")
	errStop      = errors.New("server did not stop cleanly")
	errLoad      = errors.New("load generator failed")
	errLoadError = errors.New("load generator saw errors")
)

// Deadlines for a server's life: start-up until its port answers, and a
// graceful stop (the servers give their own stop 5 s).
const (
	readyTimeout = 10 * time.Second
	stopTimeout  = 10 * time.Second
)

// A server is one stack's echo server running for one measurement.
type server struct {
	cmd    *exec.Cmd
	addr   string   // where it answers
	addrs  []string // every address it listens on, when more than one
	stdout bytes.Buffer
	stderr bytes.Buffer
	quit   syscall.Signal // stops it gracefully
	done   chan struct{}  // closed when the process has exited
	err    error          // its exit status, once done is closed
}

// startServer starts st's server pinned to cpus, with more flags if any,
// and waits until its port accepts connections.
func startServer(st stack, bin string, cpus cpuList, more ...string) (*server, error) {
	return startListening(func(addr string) (*server, error) {
		return launch(st, bin, cpus, append([]string{"-addr", addr}, more...)...)
	})
}

// startListening picks a free loopback port, has run start a server that
// listens on it (addr, host:port), and waits until the port accepts
// connections.
func startListening(run func(addr string) (*server, error)) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s, err := run(addr)
	if err != nil {
		return nil, err
	}
	s.addr = addr
	if err := s.waitReady(); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

// launch starts st's server pinned to cpus with args, and does not wait for
// it.
func launch(st stack, bin string, cpus cpuList, args ...string) (*server, error) {
	args = append(append([]string{filepath.Join(bin, st.exe())}, args...), st.flags...)
	var env []string
	if st.loops {
		args = append(args, "-loops", cpus.n())
		env = append(env, "GOMAXPROCS="+cpus.n())
	}
	return start(cpus, syscall.SIGTERM, args, env...)
}

// start runs the command line args pinned to cpus, with env added to its
// environment, and does not wait for it; quit is the signal that stops it
// gracefully.
func start(cpus cpuList, quit syscall.Signal, args []string, env ...string) (*server, error) {
	s := &server{done: make(chan struct{}), quit: quit}
	s.cmd = exec.Command("taskset", append([]string{"-c", cpus.spec}, args...)...) // taskset execs the server: same process id
	s.cmd.Env = append(s.cmd.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// freePort returns a port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady connects until the server answers, it exits, or readyTimeout
// passes.
func (s *server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", s.addr, 100*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		select {
		case <-s.done:
			return fmt.Errorf("%w: %v: %s", errExited, s.err, s.stderr.Bytes())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w on %s within %v", errNotReady, s.addr, readyTimeout)
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop stops the server (halt) and returns its exit report.
func (s *server) stop() (serve.Report, error) {
	if err := s.halt(); err != nil {
		return serve.Report{}, err
	}
	return serve.ParseReport(s.stdout.String())
}

// halt asks the server to stop (its quit signal) and waits for it. A server
// that crashed, hangs, or exits unclean is an error.
func (s *server) halt() error {
	select {
	case <-s.done:
		return fmt.Errorf("%w: %v: %s", errExited, s.err, s.stderr.Bytes())
	default:
	}
	s.cmd.Process.Signal(s.quit)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.kill()
		return fmt.Errorf("%w: no exit %v after %v", errStop, stopTimeout, s.quit)
	}
	if s.err != nil {
		return fmt.Errorf("%w: %v: %s", errStop, s.err, s.stderr.Bytes())
	}
	return nil
}

// kill ends the server at once, for the failure paths.
func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}
