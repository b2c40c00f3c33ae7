package main

import (
	"bufio"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// realRedis is a redis-server of the test's own, on a Unix socket, to
// compare this server's replies with Redis's byte for byte.
type realRedis struct{ sock string }

// startRedis runs redis-server (Debian package redis-server) until the
// test ends, with nothing saved. Without it the test is skipped, except
// in CI, where it must be there.
func startRedis(t testing.TB) *realRedis {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(tool(t, "redis-server"), "--port", "0", "--unixsocket", sock, "--save", "",
		"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "log"))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return &realRedis{sock: sock}
		}
		require.True(t, time.Now().Before(deadline), "redis-server did not start: %v", err)
		time.Sleep(time.Millisecond)
	}
}

// exchange sends script on a new connection to network, addr, shuts its
// sending side down, and returns all the server replied before it closed
// the connection: every reply, since both Redis and this server answer
// what they have read before they act on the end of the stream.
func exchange(t testing.TB, network, addr, script string) string {
	t.Helper()
	c, err := net.Dial(network, addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, script)
	require.NoError(t, err)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		require.NoError(t, cw.CloseWrite())
	}
	out, err := io.ReadAll(bufio.NewReader(c))
	if err != nil && !strings.Contains(err.Error(), "reset") {
		require.NoError(t, err)
	}
	return string(out)
}

// sameAsRedis runs script against this server and against Redis and
// checks the replies are the same bytes; it returns them.
func sameAsRedis(t *testing.T, ts *testServer, r *realRedis, script string) string {
	t.Helper()
	want := clientIDs.ReplaceAllString(exchange(t, "unix", r.sock, script), "${1}ID")
	got := clientIDs.ReplaceAllString(exchange(t, "tcp", ts.addr(), script), "${1}ID")
	if want != got {
		w, g := strings.Split(want, "\r\n"), strings.Split(got, "\r\n")
		i := 0
		for i < len(w) && i < len(g) && w[i] == g[i] {
			i++
		}
		from := max(i-6, 0)
		t.Fatalf("script %q:\nreplies differ at line %d; Redis's, then ours:\n%q\n%q", script, i,
			w[from:min(i+6, len(w))], g[from:min(i+6, len(g))])
	}
	return got
}

// eachAsRedis runs each of scripts, after a FLUSHALL, against a server
// of this package's and against Redis, and checks the replies are the
// same bytes.
func eachAsRedis(t *testing.T, scripts []string) {
	t.Helper()
	ts := startServer(t, config{})
	r := startRedis(t)
	for _, script := range scripts {
		sameAsRedis(t, ts, r, "FLUSHALL\r\n"+script)
	}
}

// clientIDs matches the client ID in HELLO's reply, which differs between
// servers that have seen different numbers of clients.
var clientIDs = regexp.MustCompile(`(\$2\r\nid\r\n:)\d+`)
