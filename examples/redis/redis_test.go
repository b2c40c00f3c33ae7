package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// sentinel ends the scripts exchangeWhole sends: its reply is the last.
const sentinel = "end-of-script-6f1c"

// exchangeWhole is exchange for a script whose blocking commands time
// out: a server closes a blocked client once it reads the end of the
// stream, dropping the replies to every command after the one blocked, so
// the sending side is shut down only once the reply to an ECHO sent after
// the script has arrived, or the server closed the connection (QUIT, a
// protocol error). The ECHO's reply is left out of what it returns. The
// script is written while the replies are read, so that replies that
// outgrow the sockets' buffers do not stop it.
func exchangeWhole(t testing.TB, network, addr, script string) string {
	t.Helper()
	c, err := net.Dial(network, addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
	go io.WriteString(c, script+"ECHO "+sentinel+"\r\n")
	end := "$" + strconv.Itoa(len(sentinel)) + "\r\n" + sentinel + "\r\n"
	var out []byte
	buf := make([]byte, 64<<10)
	for !bytes.HasSuffix(out, []byte(end)) {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if err != io.EOF && !strings.Contains(err.Error(), "reset") {
				require.NoError(t, err, "after %q", out)
			}
			return string(out)
		}
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		require.NoError(t, cw.CloseWrite())
	}
	rest, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		require.NoError(t, err)
	}
	return string(out[:len(out)-len(end)]) + string(rest)
}

// sameAsRedis runs script against this server and against Redis and
// checks the replies are the same bytes; it returns them.
func sameAsRedis(t *testing.T, ts *testServer, r *realRedis, script string) string {
	t.Helper()
	return sameAsRedisBy(t, exchange, ts, r, script)
}

// sameAsRedisBy is sameAsRedis with the scripts sent and the replies read
// by exchange (exchange, exchangeWhole).
func sameAsRedisBy(t *testing.T, exchange func(testing.TB, string, string, string) string, ts *testServer, r *realRedis, script string) string {
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
