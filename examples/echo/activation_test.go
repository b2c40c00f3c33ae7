//go:build linux

package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/cmdtest"
)

// socketActivate returns the path of systemd-socket-activate (Debian
// package systemd), which opens listening sockets and starts a command
// with them as systemd does, once the first client connects; without it
// the test is skipped, except in CI.
func socketActivate(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("systemd-socket-activate")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatal("systemd-socket-activate is not installed, and CI is set: install systemd")
	}
	t.Skip("systemd-socket-activate is not installed (apt-get install systemd)")
	return ""
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on now:
// systemd-socket-activate takes no port 0.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// Started by systemd-socket-activate, with no -addr, the command serves
// every socket it was handed and none of its own: one TCP socket, or a
// TCP and a unix socket, named or not. The first client, whose connection
// starts the command, is served too. On SIGTERM it stops as ever.
func TestSocketActivation(t *testing.T) {
	tool := socketActivate(t)
	dir := cmdtest.Build(t, ".")
	sock := filepath.Join(t.TempDir(), "echo.sock")
	for _, tt := range []struct {
		name    string
		sockets []string // as -l takes them
		fdname  string
	}{
		{"one TCP socket", []string{"127.0.0.1:" + freePort(t)}, ""},
		{"TCP and unix", []string{"127.0.0.1:" + freePort(t), sock}, ""},
		{"named", []string{"127.0.0.1:" + freePort(t), sock}, "web:admin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			for _, s := range tt.sockets {
				args = append(args, "-l", s)
			}
			if tt.fdname != "" {
				args = append(args, "--fdname="+tt.fdname)
			}
			args = append(args, filepath.Join(dir, "echo"), "-loops", "2")
			cmd := cmdtest.Run(t, exec.Command(tool, args...))
			for _, s := range tt.sockets {
				cmd.Expect(t, regexp.MustCompile(`^Listening on `+regexp.QuoteMeta(s)+` as \d+\.$`))
			}
			names := strings.TrimSuffix(strings.Repeat("unknown, ", len(tt.sockets)), ", ")
			if tt.fdname != "" {
				names = strings.ReplaceAll(tt.fdname, ":", ", ")
			}
			// Connecting starts the command, which then serves the client.
			var conns []net.Conn
			for _, s := range tt.sockets {
				network := "tcp"
				if filepath.IsAbs(s) {
					network = "unix"
				}
				c, err := net.Dial(network, s)
				require.NoError(t, err)
				defer c.Close()
				conns = append(conns, c)
			}
			cmd.Expect(t, regexp.MustCompile(`^echo: handed listening sockets `+regexp.QuoteMeta(names)+`$`))
			var listening []string
			for range tt.sockets {
				listening = append(listening, cmd.Expect(t, listeningLine)[1])
			}
			assert.ElementsMatch(t, tt.sockets, listening, "it listens on what it was handed, and nothing more")
			for i, c := range conns {
				echoOnce(t, c, "activated "+strconv.Itoa(i))
				c.Close()
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			lines, err := cmd.Exit(t)
			require.NoError(t, err, "%q", lines)
			assert.Equal(t, "echo: stopped", lines[len(lines)-1])
			assert.NotContains(t, lines, "echo: listening on 127.0.0.1:9000", "it bound its default address")
		})
	}
}
