//go:build linux

package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/cmdtest"
)

// repo is the repository's root, where README.md's commands run.
const repo = "../.."

// production returns the code blocks of README.md's "Running in
// production" section written in lang ("sh", "ini"), each without its
// fences.
func production(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Running in production\n")
	require.True(t, ok, "README.md has no section \"Running in production\"")
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)\n```"+lang+"\n(.*?)\n```\n").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// block returns the one sh block of the section that runs tool.
func block(t *testing.T, tool string) string {
	t.Helper()
	var found []string
	for _, b := range production(t, "sh") {
		if regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(tool) + `\s`).MatchString(b) {
			found = append(found, b)
		}
	}
	require.Len(t, found, 1, "README.md's blocks that run %s", tool)
	return found[0]
}

// tool returns the path of name, and skips the test without it, except
// in CI.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed, and CI is set: install %s", name, pkg)
	}
	t.Skipf("%s is not installed (apt-get install %s)", name, pkg)
	return ""
}

// bash runs script in the repository's root and returns what it printed.
func bash(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\nprinted:\n%s", script, out)
	return string(out)
}

// The unit files are valid, for systemd-analyze verify, once the binary
// they start is there.
func TestREADMEUnitFiles(t *testing.T) {
	analyze := tool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	bin := filepath.Join(cmdtest.Build(t, "."), "echo")
	var units []string
	for _, b := range production(t, "ini") {
		first, _, _ := strings.Cut(b, "\n")
		name, ok := strings.CutPrefix(first, "# /etc/systemd/system/")
		require.True(t, ok, "a unit begins with the path it goes to: %q", first)
		b = strings.ReplaceAll(b, "/usr/local/bin/sluice-echo", bin)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(b), 0o644))
		units = append(units, path)
	}
	require.Len(t, units, 2)
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify:\n%s", out)
	for _, l := range strings.Split(string(out), "\n") {
		// In a container it may say it cannot read PID 1's environment.
		if strings.Contains(l, filepath.Base(units[0])) || strings.Contains(l, filepath.Base(units[1])) {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
}

// The commands that try socket activation and an upgrade by hand do what
// their comments say, on a free port and in a directory of the test's:
// the server's, in one terminal, then the client's, in another.
func TestREADMEByHand(t *testing.T) {
	tool(t, "systemd-socket-activate", "systemd")
	port := freePort(t)
	local := strings.NewReplacer("/tmp/", t.TempDir()+"/", "127.0.0.1:9000", "127.0.0.1:"+port, "127.0.0.1/9000", "127.0.0.1/"+port)
	server := strings.Split(local.Replace(block(t, "systemd-socket-activate")), "\n")
	require.Len(t, server, 2, "the server's block: build, then run")
	bash(t, server[0])
	run := exec.Command("bash", "-c", server[1])
	run.Dir = repo
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the upgrade's process too, for the cleanup
	cmd := cmdtest.Run(t, run)
	t.Cleanup(func() { syscall.Kill(-run.Process.Pid, syscall.SIGKILL) })
	cmd.Expect(t, regexp.MustCompile(`^Listening on 127.0.0.1:`+port+` as 3\.$`))

	out := bash(t, local.Replace(block(t, "kill")))
	assert.Equal(t, "hello\nagain\n", out)
	lines, err := cmd.Exit(t) // every process the server started has exited
	require.NoError(t, err, "%q", lines)
	var stops []string
	for _, l := range lines {
		if strings.HasPrefix(l, "echo: stop") {
			stops = append(stops, l)
		}
	}
	assert.Equal(t, []string{"echo: stopped", "echo: stopped"}, stops, "the old process once its client left, then the new one")
	_, err = net.Dial("tcp", "127.0.0.1:"+port)
	assert.Error(t, err, "nothing serves the port any more")
}

// The curl command shows the engine's counters.
func TestREADMEDebugVars(t *testing.T) {
	tool(t, "curl", "curl")
	tool(t, "jq", "jq")
	port := freePort(t)
	cmd, addr := startEcho(t, nil, "-addr", "tcp://127.0.0.1:0", "-loops", "1", "-debug-addr", "127.0.0.1:"+port)
	cmd.Expect(t, regexp.MustCompile(`echo: debug on `))
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	echoOnce(t, c, "hello")
	out := bash(t, strings.ReplaceAll(block(t, "curl"), "127.0.0.1:6060", "127.0.0.1:"+port))
	var s sluice.Stats
	require.NoError(t, json.Unmarshal([]byte(out), &s), "%s", out)
	assert.EqualValues(t, 1, s.Accepted, "%s", out)
	assert.Equal(t, 1, s.Conns)
	c.Close()
}

// The HAProxy command's configuration is valid, with the addresses it
// gives.
func TestREADMEHAProxy(t *testing.T) {
	tool(t, "haproxy", "haproxy")
	out := bash(t, block(t, "haproxy")+" -c")
	assert.Contains(t, out, "Configuration file is valid")
}

// The alerts check.
func TestREADMEAlerts(t *testing.T) {
	tool(t, "promtool", "prometheus")
	out := bash(t, block(t, "promtool"))
	assert.Regexp(t, `SUCCESS: \d+ rules found`, out)
}
