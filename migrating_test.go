//go:build unix

package sluice

// Four of the servers gnet v2's examples show (echo, a length-prefixed
// protocol, a push server and a pipelined HTTP responder), ported as
// MIGRATING.md tells a gnet user to port them, each run on every poller
// against real clients on loopback; and the client program MIGRATING.md
// prints, built from the page and run against an echo server.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exchange writes out, in pieces of at most piece bytes, from another
// goroutine while it reads len(want) bytes, and says if they were want.
func exchange(c net.Conn, out, want []byte, piece int) error {
	wrote := make(chan error, 1)
	go func() {
		var err error
		for ; len(out) > 0 && err == nil; out = out[min(piece, len(out)):] {
			_, err = c.Write(out[:min(piece, len(out))])
		}
		wrote <- err
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	if err != nil {
		c.Close() // unblocks the writer
	}
	err = errors.Join(err, <-wrote)
	if err == nil && !bytes.Equal(got, want) {
		err = fmt.Errorf("got %d bytes unlike the %d wanted", len(got), len(want))
	}
	return err
}

// readToEnd dials addr, sends out, and reads until the server closes,
// which must end the stream cleanly, not with a reset.
func readToEnd(t *testing.T, addr string, out []byte) []byte {
	c := dial(t, addr)
	_, err := c.Write(out)
	require.NoError(t, err)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	return got
}

// pattern returns n bytes that differ from their neighbours.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

// portEcho is gnet's echo server. BuiltinEventEngine is embedded by value:
// Sluice's no-op callbacks have value receivers.
type portEcho struct {
	BuiltinEventEngine
	closed chan error
}

func (h *portEcho) OnTraffic(c Conn) Action {
	buf, _ := c.Next(-1)
	c.Write(buf) // sent when OnTraffic returns
	return None
}

func (h *portEcho) OnClose(_ Conn, err error) Action {
	h.closed <- err
	return None
}

func TestPortEcho(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		const clients = 4
		h := &portEcho{closed: make(chan error, clients)}
		_, addr := serve(t, h, p, WithNumEventLoop(2))
		errs := make(chan error, clients)
		for i := range clients {
			c := dial(t, addr)
			go func() {
				for _, n := range []int{1, 1000, 200 << 10} { // past the 64 KiB read buffer
					msg := pattern(n, i)
					if err := exchange(c, msg, msg, len(msg)); err != nil {
						errs <- err
						return
					}
				}
				errs <- c.Close()
			}()
		}
		for range clients {
			require.NoError(t, <-errs)
		}
		for range clients {
			// A peer's end of stream is a clean close: nil, where gnet
			// passed io.EOF.
			require.NoError(t, <-h.closed)
		}
		return outcome{}
	})
}

// Frames of gnet's simple protocol: a 2-byte magic number and a 4-byte
// body length, both big-endian, then the body.
const (
	frameMagic  = 1314
	frameHeader = 6
)

func appendFrame(b, body []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, frameMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

// portFrames answers each frame with a frame whose body is the frame's
// number on its connection and the body reversed. Where gnet's decoder
// tested len(buf) < n after a short Peek, this one tests the error: a
// short Peek or Next hands back what there is, with io.ErrShortBuffer.
type portFrames struct {
	BuiltinEventEngine
	short   atomic.Int64 // calls that found a partial header
	unequal atomic.Bool  // a short Peek returned other than every byte buffered
}

func (h *portFrames) OnOpen(c Conn) ([]byte, Action) {
	c.SetContext(new(int))
	return nil, None
}

func (h *portFrames) OnTraffic(c Conn) Action {
	seq := c.Context().(*int)
	for {
		hdr, err := c.Peek(frameHeader)
		if err != nil {
			h.short.Add(1)
			if len(hdr) != c.InboundBuffered() {
				h.unequal.Store(true)
			}
			return None // the partial header stays buffered
		}
		if binary.BigEndian.Uint16(hdr) != frameMagic {
			return Close
		}
		frame, err := c.Next(frameHeader + int(binary.BigEndian.Uint32(hdr[2:])))
		if err != nil {
			return None // a partial body: nothing was consumed
		}
		*seq++
		c.Write(appendFrame(nil, reply(*seq, frame[frameHeader:])))
	}
}

func reply(seq int, body []byte) []byte {
	r := strconv.AppendInt(nil, int64(seq), 10)
	r = append(r, ' ')
	for i := len(body) - 1; i >= 0; i-- {
		r = append(r, body[i])
	}
	return r
}

func TestPortLengthPrefixed(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		h := &portFrames{}
		_, addr := serve(t, h, p, WithNumEventLoop(2))
		c := dial(t, addr)
		var out, want []byte
		for i, n := range []int{0, 1, 5, 300, 70_000, 3} {
			body := pattern(n, i)
			out = appendFrame(out, body)
			want = appendFrame(want, reply(i+1, body))
		}
		// Half a header first, and wait until the handler has seen it.
		_, err := c.Write(out[:3])
		require.NoError(t, err)
		waitFor(t, 5*time.Second, func() bool { return h.short.Load() > 0 },
			func() string { return "the partial header never reached OnTraffic" })
		require.NoError(t, exchange(c, out[3:], want, len(out)))
		assert.False(t, h.unequal.Load(), "a short Peek returned other than every byte buffered")

		// A bad magic number closes the connection, after the answers to
		// the frames before it.
		bad := appendFrame(appendFrame(nil, []byte("ok")), []byte("x"))
		bad[len(bad)-7] ^= 0xff
		assert.Equal(t, appendFrame(nil, reply(1, []byte("ok"))), readToEnd(t, addr, bad))
		return outcome{}
	})
}

// portPush is gnet's push server: OnTick, which Sluice runs on the first
// loop, posts a fresh slice to every open connection with AsyncWrite.
type portPush struct {
	BuiltinEventEngine
	tick  time.Duration
	conns sync.Map // RemoteAddr().String() -> Conn
}

func (ps *portPush) OnOpen(c Conn) ([]byte, Action) {
	ps.conns.Store(c.RemoteAddr().String(), c)
	return nil, None
}

func (ps *portPush) OnClose(c Conn, _ error) Action {
	ps.conns.Delete(c.RemoteAddr().String()) // still true inside OnClose
	return None
}

func (ps *portPush) OnTick() (time.Duration, Action) {
	ps.conns.Range(func(key, value any) bool {
		value.(Conn).AsyncWrite(fmt.Appendf(nil, "heart beating to %s\n", key), nil)
		return true
	})
	return ps.tick, None
}

func (ps *portPush) OnTraffic(c Conn) Action {
	buf, _ := c.Next(-1)
	c.Write(buf)
	return None
}

func TestPortPush(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		ps := &portPush{tick: 5 * time.Millisecond}
		_, addr := serve(t, ps, p, WithNumEventLoop(2), WithTicker(true))
		const clients = 3
		errs := make(chan error, clients)
		for i := range clients {
			c := dial(t, addr)
			go func() {
				// Each client's own traffic is echoed between the pushes.
				push := fmt.Sprintf("heart beating to %s\n", c.LocalAddr())
				r := bufio.NewReader(c)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err := c.Write([]byte("ping\n"))
				for pings, pushes := 0, 0; err == nil && (pings < 1 || pushes < 3); {
					var line string
					line, err = r.ReadString('\n')
					switch {
					case err != nil:
					case line == "ping\n":
						pings++
					case line == push:
						pushes++
					default:
						err = fmt.Errorf("client %d read %q", i, line)
					}
				}
				errs <- errors.Join(err, c.Close())
			}()
		}
		for range clients {
			require.NoError(t, <-errs)
		}
		waitFor(t, 5*time.Second, func() bool {
			n := 0
			ps.conns.Range(func(any, any) bool { n++; return true })
			return n == 0
		}, func() string { return "OnClose left connections in the push list" })
		return outcome{}
	})
}

// portHTTP is gnet's HTTP example: it answers every whole request
// buffered (the answers leave in one write when OnTraffic returns) and
// consumes them. Its parser state is per call, not a handler field shared
// by the loops, of which there is one per CPU by default.
type portHTTP struct{ BuiltinEventEngine }

func (portHTTP) OnTraffic(c Conn) Action {
	buf, _ := c.Peek(-1)
	used := 0
	for {
		path, n, err := parseRequest(buf[used:])
		if err != nil {
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			return Close // the peer gets the 400 whole, then its end of stream
		}
		if n == 0 {
			break
		}
		used += n
		c.Write(response(path))
	}
	if used > 0 { // Discard(0), as in gnet, would discard everything
		c.Discard(used)
	}
	return None
}

// parseRequest reads the request at the front of b, returning its path
// and length, or a length of zero when it has yet to arrive whole (a
// header that never ends is WithMaxInboundBuffered's to bound).
func parseRequest(b []byte) (path string, n int, err error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return "", 0, nil
	}
	lines := bytes.Split(b[:end], []byte("\r\n"))
	f := bytes.Fields(lines[0])
	if len(f) != 3 || !bytes.HasPrefix(f[2], []byte("HTTP/1.")) {
		return "", 0, fmt.Errorf("bad request line %q", lines[0])
	}
	n = end + 4
	for _, l := range lines[1:] {
		if v, ok := bytes.CutPrefix(l, []byte("Content-Length: ")); ok {
			body, err := strconv.Atoi(string(v))
			if err != nil || body < 0 {
				return "", 0, fmt.Errorf("bad length %q", v)
			}
			n += body
		}
	}
	if len(b) < n {
		return "", 0, nil
	}
	return string(f[1]), n, nil
}

func response(path string) []byte {
	body := "Hello World! You asked for " + path + "\r\n"
	return fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func TestPortHTTP(t *testing.T) {
	onEachPoller(t, func(t *testing.T, p Option) outcome {
		_, addr := serve(t, portHTTP{}, p, WithNumEventLoop(2))
		c := dial(t, addr)
		var out, want []byte
		for i := range 50 {
			path := "/" + strconv.Itoa(i)
			if i%5 == 4 {
				body := pattern(i*40, i)
				out = fmt.Appendf(out, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
			} else {
				out = fmt.Appendf(out, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
			}
			want = append(want, response(path)...)
		}
		// Pipelined, in pieces that split requests anywhere.
		require.NoError(t, exchange(c, out, want, 37))

		// A malformed request, with more behind it the handler never
		// reads: the 400 arrives whole and the stream ends cleanly.
		got := readToEnd(t, addr, []byte("GET /a HTTP/1.1\r\n\r\nBOGUS\r\n\r\nGET /b HTTP/1.1\r\n\r\n"))
		assert.Equal(t, string(response("/a"))+"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", string(got))
		return outcome{}
	})
}

// docProgram returns the Go code block MIGRATING.md marks as the program
// name: the fenced block right after its marker comment.
func docProgram(t *testing.T, page, name string) string {
	t.Helper()
	marker := "<!-- migrating_test.go builds this program: " + name + " -->\n```go\n"
	_, rest, ok := strings.Cut(page, marker)
	require.True(t, ok, "MIGRATING.md has no program %q", name)
	code, _, ok := strings.Cut(rest, "\n```\n")
	require.True(t, ok, "program %q has no end", name)
	return code + "\n"
}

// declaresFunc says whether the package's own source declares a function
// (not a method) of that name.
func declaresFunc(t *testing.T, name string) bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
				return true
			}
		}
	}
	return false
}

// buildPrograms builds each program, a main package's source by name, in
// a module of its own that takes this package from this directory, and
// returns the directory that holds the commands. They are built with the
// race detector and the build tags the tests run with.
func buildPrograms(t *testing.T, programs map[string]string) string {
	t.Helper()
	root, err := os.Getwd()
	require.NoError(t, err)
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	mod := filepath.Join(t.TempDir(), "mod")
	files := map[string]string{
		"go.mod": "module migrating\n\ngo 1.26.0\n\nrequire github.com/sluicenet/sluice v0.0.0\n\n" +
			"replace github.com/sluicenet/sluice => " + root + "\n",
		"go.sum": string(sum),
	}
	bin := t.TempDir()
	args := []string{"build", "-mod=mod", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if stdBackend {
		args = append(args, "-tags", "sluice_std")
	}
	for name, src := range programs {
		files[filepath.Join(name, "main.go")] = src
		args = append(args, "./"+name)
	}
	for name, text := range files {
		path := filepath.Join(mod, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = mod
	// Everything the build needs is here: this module, and the module
	// cache that built it.
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building MIGRATING.md's programs:\n%s", out)
	return bin
}

// runProgram runs the command with args, and returns what it printed once
// it has exited, which it must do by itself, cleanly.
func runProgram(t *testing.T, path string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	require.NoError(t, err, "%s %v printed:\n%s", filepath.Base(path), args, out)
	return string(out)
}

// MIGRATING.md's client, as the page prints it: against an echo server it
// hears every connection open and echo its line, against a port nobody
// listens on every dial fail, and either way it stops by itself. The page
// gives it with sluice.Start, and with a main for sluice.Run in place of
// that one; the version with Start is built once the package has Start.
func TestMigratingClient(t *testing.T) {
	page, err := os.ReadFile("MIGRATING.md")
	require.NoError(t, err)
	withStart := docProgram(t, string(page), "client-start")
	withRun := docProgram(t, string(page), "client-run")
	// The Run version is the Start version with its main, which comes
	// last, replaced by the Run version's declarations.
	i := strings.Index(withStart, "\nfunc main() {")
	require.Positive(t, i, "the client has no main")
	programs := map[string]string{"run": withStart[:i+1] + withRun}
	if declaresFunc(t, "Start") {
		programs["start"] = withStart
	} else {
		t.Log("the package has no Start yet: only the Run version is built")
	}
	bin := buildPrograms(t, programs)

	_, addr := serve(t, echoHandler{})
	addr = strings.TrimPrefix(addr, "tcp://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())

	for name := range programs {
		t.Run(name, func(t *testing.T) {
			out := runProgram(t, filepath.Join(bin, name), "-addr", addr, "-conns", "20")
			assert.Contains(t, out, "client: 20 connected, 0 failed\n")
			assert.Contains(t, out, "client: 20 echoed\n")

			out = runProgram(t, filepath.Join(bin, name), "-addr", closed, "-conns", "3")
			assert.Contains(t, out, "client: 0 connected, 3 failed\n")
			assert.Equal(t, 3, strings.Count(out, "connection refused"), "each failed dial is logged:\n%s", out)
			assert.Contains(t, out, "client: 0 echoed\n")
		})
	}
}
