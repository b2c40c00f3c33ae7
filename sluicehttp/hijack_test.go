package sluicehttp

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hijackEcho takes the connection over, answers 101 itself, and echoes
// every byte back until the client finishes.
func hijackEcho(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if !assert.NoError(t, err) {
			return
		}
		go func() {
			defer conn.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			buf := make([]byte, 16<<10)
			for {
				n, err := rw.Read(buf)
				if n > 0 {
					if _, err := conn.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// TestHijack checks that a hijacked connection gets the bytes the client
// sent after its request, even in the same write, carries a stream much
// larger than its windows both ways, and ends when the client finishes.
func TestHijack(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/plain" {
				hello(w, r)
				return
			}
			hijackEcho(t)(w, r)
		})})
		c := dial(t, addr)
		io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\nGET /up HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nearly bytes|")
		br := bufio.NewReader(c)
		_, body := readResponse(t, br, "GET")
		assert.Equal(t, "hello /plain", body)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)

		payload := bytes.Repeat([]byte("0123456789"), 2<<20) // 20 MB
		go func() {
			c.Write(payload)
			c.(*net.TCPConn).CloseWrite()
		}()
		got, err := io.ReadAll(br)
		require.NoError(t, err)
		assert.Equal(t, "early bytes|", string(got[:12]))
		assert.True(t, bytes.Equal(payload, got[12:]), "the echo came back whole (%d bytes)", len(got))
	})
}

// TestHijackDeadlines checks a hijacked connection's read deadline.
func TestHijackDeadlines(t *testing.T) {
	result := make(chan error, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if !assert.NoError(t, err) {
			return
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err = conn.Read(make([]byte, 1))
		result <- err
	})})
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	err := <-result
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	n, err := c.Read(make([]byte, 1))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF, "closing the hijacked connection closes the client's")
	assert.True(t, strings.HasPrefix(addr, "127.0.0.1:"))
}

// TestHijackPipelined checks that a handler that hijacks a request that
// is no upgrade, with requests pipelined behind it in the same write, gets
// them as bytes, on the returned bufio.Reader, as net/http's would: the
// server neither answers them nor runs their handlers, and the rest of
// a body that was still arriving comes too. The answers owed before the
// hijacked request go first.
func TestHijackPipelined(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		ran, gate := make(chan string, 8), make(chan struct{})
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ran <- r.URL.Path
			if r.URL.Path != "/take" {
				hello(w, r)
				return
			}
			if !inline {
				<-gate // the rest of the body arrives before the hijack
			}
			conn, rw, err := w.(http.Hijacker).Hijack()
			if !assert.NoError(t, err) {
				return
			}
			go func() {
				defer conn.Close()
				// Echo what the client sent after this request, until it
				// finishes.
				got, _ := io.ReadAll(rw)
				conn.Write(got)
			}()
		})})
		after := "GET /next HTTP/1.1\r\nHost: x\r\n\r\n" +
			"POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" +
			"GET /last HTTP/1.1\r\nHost: x\r\n\r\n" +
			"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\nhalf " // its body's end comes later
		const later = "a body"
		c := dial(t, addr)
		_, err := io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /take HTTP/1.1\r\nHost: x\r\n\r\n"+after)
		require.NoError(t, err)
		assert.Equal(t, "/first", <-ran)
		assert.Equal(t, "/take", <-ran)
		_, err = io.WriteString(c, later)
		require.NoError(t, err)
		waitAcked(t, c)
		close(gate)
		br := bufio.NewReader(c)
		_, body := readResponse(t, br, "GET")
		assert.Equal(t, "hello /first", body)
		c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(br)
		require.NoError(t, err)
		assert.Equal(t, after+later, string(got))
		assert.True(t, holdsFor(20*time.Millisecond, func() bool { return len(ran) == 0 }),
			"a request pipelined behind the hijacked one was served")
	})
}

// TestHijackedOutlivesPanic checks that a handler that panics after it
// hijacked its connection leaves the connection to whoever holds it, as
// net/http's server does: a goroutine the handler started writes to it
// after the panic, and the connection ends when that goroutine closes
// it.
func TestHijackedOutlivesPanic(t *testing.T) {
	for _, abort := range []bool{false, true} {
		release := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if !assert.NoError(t, err) {
				return
			}
			io.WriteString(conn, "hijacked;")
			go func() {
				defer conn.Close()
				<-release
				io.WriteString(conn, "after the panic")
			}()
			if abort {
				panic(http.ErrAbortHandler)
			}
			panic("the handler's own panic")
		})
		std := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
		servers := serveTrio(t, std, func(bool) *Server { return &Server{Handler: h} })
		for _, addr := range []string{servers.std, servers.pooled, servers.inline} {
			c := dial(t, addr)
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			br := bufio.NewReader(c)
			got := make([]byte, len("hijacked;"))
			_, err := io.ReadFull(br, got)
			require.NoError(t, err)
			assert.Equal(t, "hijacked;", string(got))
			release <- struct{}{}
			rest, err := io.ReadAll(br)
			assert.NoError(t, err)
			assert.Equal(t, "after the panic", string(rest), "abort=%v, server %s (net/http's is %s)", abort, addr, servers.std)
		}
	}
}
