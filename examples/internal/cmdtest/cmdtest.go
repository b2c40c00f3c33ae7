// Package cmdtest builds the example commands and runs them as processes,
// for tests that check what a command does as a whole: what it prints, how
// it answers a signal, what it leaves behind.
package cmdtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Deadline bounds every wait on a command: long enough for a loaded
// machine under the race detector, short enough that a hang fails.
const Deadline = 20 * time.Second

var (
	mu    sync.Mutex
	dir   string          // holds the built commands; removed by Main
	built map[string]bool // packages built into dir, by path
)

// Main runs the tests of a package whose tests build commands, then
// removes what they built: call it from the package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	mu.Unlock()
	os.Exit(code)
}

// Build builds the commands in pkgs (package paths as the go command takes
// them, relative to the test's directory: "." for its own) once per test
// binary, and returns the directory that holds them, each named as its
// package's directory. They are built with the race detector when the
// tests run with it: the packages they share with the tests are compiled
// already then, where a build without it would compile the standard
// library again (23 s of a cold run on two cores).
func Build(t testing.TB, pkgs ...string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-cmdtest")
		if err != nil {
			t.Fatal(err)
		}
		dir, built = d, map[string]bool{}
	}
	var todo []string
	for _, p := range pkgs {
		if !built[p] {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return dir
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, todo...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("building %v: %v\n%s", todo, err, out)
	}
	for _, p := range todo {
		built[p] = true
	}
	return dir
}

// Cmd is a command running until the test ends.
type Cmd struct {
	*exec.Cmd
	// Lines are the lines it prints, stdout and stderr as one stream in
	// the order they come, until it exits; then Lines is closed.
	Lines <-chan string
}

// Start starts the built command name with args until the test ends (when
// it is killed if still running), with env added to the test's own
// environment.
func Start(t testing.TB, dir, name string, env []string, args ...string) *Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, name), args...)
	cmd.Env = append(os.Environ(), env...)
	return Run(t, cmd)
}

// Run starts cmd, whose output is not yet set, until the test ends, and
// returns it with the lines it prints. Its output goes to a pipe of its
// own, which the processes it starts inherit unless it says otherwise:
// Lines ends once every process that holds the pipe has exited.
func Run(t testing.TB, cmd *exec.Cmd) *Cmd {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w // one stream, in order
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	lines := make(chan string, 4096)
	go func() {
		defer close(lines)
		defer r.Close()
		s := bufio.NewScanner(r)
		for s.Scan() {
			select {
			case lines <- s.Text():
			default: // nobody reads them: drop rather than stall the command
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return &Cmd{Cmd: cmd, Lines: lines}
}

// Expect waits for a line that re matches and returns its submatches; it
// fails the test if the command ends first or Deadline passes.
func (c *Cmd) Expect(t testing.TB, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(Deadline)
	var seen []string
	for {
		select {
		case l, ok := <-c.Lines:
			if !ok {
				t.Fatalf("%s ended without printing a line like %q; it printed:\n%s", c.Path, re, strings.Join(seen, "\n"))
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
			seen = append(seen, l)
		case <-timeout:
			t.Fatalf("%s printed no line like %q; it printed:\n%s", c.Path, re, strings.Join(seen, "\n"))
		}
	}
}

// Exit waits for the command to exit and its output to end, for at most
// Deadline, and returns the lines it printed that no Expect took and how
// it ended (nil if the test waited for it already).
func (c *Cmd) Exit(t testing.TB) ([]string, error) {
	t.Helper()
	var rest []string
	timeout := time.After(Deadline)
	for {
		select {
		case l, ok := <-c.Lines:
			if ok {
				rest = append(rest, l)
				continue
			}
			if c.ProcessState != nil { // waited for already
				return rest, nil
			}
			return rest, c.Wait()
		case <-timeout:
			t.Fatalf("%s did not exit; it printed:\n%s", c.Path, strings.Join(rest, "\n"))
		}
	}
}
