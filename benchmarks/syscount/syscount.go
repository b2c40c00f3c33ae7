// Package syscount counts the system calls another process makes over a
// window, with the kernel's raw_syscalls:sys_enter tracepoint read by
// `perf stat` (Debian package linux-perf). The tracepoint does not stop the
// process; strace -c does, at every call, and by the time the process resumes
// the next request has arrived, so empty reads and zero-timeout polls vanish
// from its count.
//
// perf attaches to the threads the process has when counting starts; threads
// it creates later are not counted, so warm the process up first.
package syscount

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const event = "raw_syscalls:sys_enter"

// ErrUnavailable reports that perf cannot count the tracepoint here: not
// installed, or not permitted.
var ErrUnavailable = errors.New("syscount: perf cannot count " + event)

// ErrPerf reports perf failing or answering in a way this package does not
// understand.
var ErrPerf = errors.New("syscount: perf")

// Available reports whether perf can count system calls on this machine.
func Available() error {
	out, err := exec.Command("perf", "stat", "-x,", "-e", event, "--", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %v: %s", ErrUnavailable, err, bytes.TrimSpace(out))
	}
	return nil
}

// ackTimeout bounds each exchange with perf, its start-up included.
const ackTimeout = 10 * time.Second

// A Counter is perf attached to one process, counting only between Enable
// and Disable.
type Counter struct {
	cmd    *exec.Cmd
	dir    string
	ctl    *os.File
	ack    *os.File
	acks   *bufio.Reader
	stderr bytes.Buffer
}

// Start attaches perf to process pid with counting disabled.
func Start(pid int) (*Counter, error) {
	dir, err := os.MkdirTemp("", "syscount")
	if err != nil {
		return nil, err
	}
	c := &Counter{dir: dir}
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, p := range []string{ctl, ack} {
		if err := unix.Mkfifo(p, 0o600); err != nil {
			c.cleanup()
			return nil, err
		}
	}
	c.cmd = exec.Command("perf", "stat", "-x,", "-e", event, "-D", "-1",
		"--control", "fifo:"+ctl+","+ack, "-o", c.outPath(), "-p", strconv.Itoa(pid))
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// Read-write opens of a FIFO do not wait for the other end, so a perf
	// that dies at start cannot leave these hanging; the read deadlines
	// below catch it instead.
	if c.ctl, err = os.OpenFile(ctl, os.O_RDWR, 0); err == nil {
		c.ack, err = os.OpenFile(ack, os.O_RDWR, 0)
	}
	if err != nil {
		c.kill()
		return nil, err
	}
	c.acks = bufio.NewReader(c.ack)
	return c, nil
}

func (c *Counter) outPath() string { return filepath.Join(c.dir, "out") }

// Enable starts counting; perf has confirmed when it returns.
func (c *Counter) Enable() error { return c.command("enable") }

// Disable stops counting; perf has confirmed when it returns.
func (c *Counter) Disable() error { return c.command("disable") }

func (c *Counter) command(cmd string) error {
	if _, err := c.ctl.WriteString(cmd + "\n"); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrPerf, cmd, err)
	}
	if err := c.ack.SetReadDeadline(time.Now().Add(ackTimeout)); err != nil {
		return err
	}
	// perf writes the ack with C's terminating NUL, which the next read meets first.
	line, err := c.acks.ReadString('\n')
	if err != nil || strings.Trim(line, "\x00\n") != "ack" {
		return fmt.Errorf("%w: no ack to %s (%v): %s", ErrPerf, cmd, err, bytes.TrimSpace(c.stderr.Bytes()))
	}
	return nil
}

// Stop ends perf and returns the system calls counted while enabled.
func (c *Counter) Stop() (int64, error) {
	defer c.cleanup()
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrPerf, err)
	}
	// perf writes its count and then ends itself with the same signal.
	if err := c.cmd.Wait(); err != nil && !interrupted(err) {
		return 0, fmt.Errorf("%w: %v: %s", ErrPerf, err, bytes.TrimSpace(c.stderr.Bytes()))
	}
	out, err := os.ReadFile(c.outPath())
	if err != nil {
		return 0, err
	}
	return parse(out)
}

func interrupted(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

// parse finds the count in perf's CSV output (-x,), whose first field on the
// event's line is the count or "<not counted>" when nothing ran.
func parse(out []byte) (int64, error) {
	for line := range strings.Lines(string(out)) {
		f := strings.Split(line, ",")
		if len(f) < 3 || f[2] != event {
			continue
		}
		if f[0] == "<not counted>" {
			return 0, nil
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: count %q", ErrPerf, f[0])
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: no %s line in %q", ErrPerf, event, out)
}

// kill ends perf without reading its count.
func (c *Counter) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
	c.cleanup()
}

func (c *Counter) cleanup() {
	for _, f := range []*os.File{c.ctl, c.ack} {
		if f != nil {
			f.Close()
		}
	}
	os.RemoveAll(c.dir)
}
