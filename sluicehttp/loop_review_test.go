package sluicehttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/internal/syncbuf"
)

// TestLoopRequestForgets pipelines requests that the loop answers, one
// it declines after writing, and one with a body for ServeHTTP, in one
// write, and checks that no request sees a header field or a Host of
// the one before it on the loop's reused request, that nothing the
// declined ServeLoop wrote goes out, and that every answer comes, in
// order.
func TestLoopRequestForgets(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			w.AddHeader("X-Leak", "declined")
			w.WriteString("declined|")
			if r.Path() == "/decline" {
				return false
			}
			w.fields = w.fields[:0]
			w.body = w.body[:0]
			w.WriteString(r.Path() + "|" + r.Host() + "|" + r.Header("X-A") + "|" + r.Header("F40") + "|" + r.Header("Connection"))
			return true
		})
		addr := serve(t, &Server{Handler: h, Inline: inline})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		var many strings.Builder
		for i := range 41 {
			many.WriteString("F" + strconv.Itoa(i) + ": v\r\n")
		}
		_, err := io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: one\r\nX-A: 1\r\n"+many.String()+"\r\n"+
			"GET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"+
			"GET /decline HTTP/1.1\r\nHost: three\r\nX-A: 3\r\n\r\n"+
			"POST /body HTTP/1.1\r\nHost: four\r\nContent-Length: 2\r\n\r\nhi"+
			"GET http://five/5 HTTP/1.1\r\nHost: other\r\n\r\n"+
			"HEAD /6 HTTP/1.1\r\nHost: six\r\n\r\n"+
			"GET /7 HTTP/1.1\r\nHost: seven\r\nConnection: close\r\n\r\n")
		require.NoError(t, err)
		want := []struct{ method, body string }{
			{"GET", "/1|one|1|v|"},
			{"GET", "/2||||keep-alive"},
			{"GET", "hello /decline"},
			{"POST", "hello /body"},
			{"GET", "/5|five|||"},
			{"HEAD", ""},
			{"GET", "/7|seven|||close"},
		}
		for i, w := range want {
			resp, body := readResponse(t, br, w.method)
			assert.Equal(t, w.body, body, "answer %d", i+1)
			assert.Empty(t, resp.Header.Get("X-Leak"), "answer %d", i+1)
			if i == 1 {
				assert.Equal(t, "keep-alive", resp.Header.Get("Connection"))
			}
			if w.method == "HEAD" {
				assert.Equal(t, int64(len("/6|six|||")), resp.ContentLength)
			}
		}
		_, err = br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "Connection: close ends it")
	})
}

// mostOf returns the most f gives of one of s's connections, asked on
// its loop.
func mostOf(s *Server, f func(hc *hconn) int) int {
	got := make(chan int, len(s.loops))
	for _, ls := range s.loops {
		if ls.loop.Execute(func() {
			most := 0
			for _, hc := range ls.conns {
				if hc != nil {
					most = max(most, f(hc))
				}
			}
			got <- most
		}) != nil {
			got <- 0
		}
	}
	most := 0
	for range s.loops {
		most = max(most, <-got)
	}
	return most
}

// headBegun reports whether one of s's connections holds part of a
// request's head, read on its loop.
func headBegun(s *Server) bool {
	return mostOf(s, func(hc *hconn) int { return hc.c.InboundBuffered() }) > 0
}

// TestShutdownHalfHead checks that a connection whose request has begun
// arriving when Shutdown begins is not closed as idle: its request, once
// whole, is answered, with Connection: close, and Shutdown waits for it
// (within its context). net/http's server is less kind: it closes a kept
// connection in the middle of its next head as idle, and reads a first
// head to its end only to close the connection unanswered.
func TestShutdownHalfHead(t *testing.T) {
	for _, loop := range []bool{false, true} {
		t.Run(map[bool]string{false: "handler", true: "loop"}[loop], func(t *testing.T) {
			modes(t, func(t *testing.T, inline bool) {
				var h http.Handler = http.HandlerFunc(hello)
				if loop {
					h = loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
						w.WriteString("loop " + r.Path())
						return true
					})
				}
				s := &Server{Handler: h, Inline: inline}
				addr := serve(t, s)
				c := dial(t, addr)
				_, err := io.WriteString(c, "GET /half HTTP/1.1\r\nHo")
				require.NoError(t, err)
				waitFor(t, func() bool { return headBegun(s) }, func() string { return "the half head is not read" })
				done := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), deadline)
					defer cancel()
					done <- s.Shutdown(ctx)
				}()
				waitFor(t, s.shutting.Load, func() string { return "Shutdown did not begin" })
				_, err = io.WriteString(c, "st: x\r\n\r\n")
				require.NoError(t, err)
				resp, body := readResponse(t, bufio.NewReader(c), http.MethodGet)
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Contains(t, body, "/half")
				assert.True(t, resp.Close)
				c.Close()
				require.NoError(t, <-done)
			})
		})
	}
}

// TestLoopAnswersHeldBack pipelines requests whose ServeLoop answers are
// each larger than Server.WriteBufferSize to a client that reads none of
// them, and checks that the loop holds at most one answer past that mark
// (the requests after it wait, unread), then that every answer comes
// whole once the client reads.
func TestLoopAnswersHeldBack(t *testing.T) {
	const size, n = 1 << 20, 16
	answer := strings.Repeat("a", size)
	var served atomic.Int64
	h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
		served.Add(1)
		w.WriteString(answer)
		return true
	})
	s := &Server{Handler: h}
	addr := serve(t, s)
	c := dial(t, addr)
	_, err := io.WriteString(c, strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", n))
	require.NoError(t, err)
	waitFor(t, func() bool { return served.Load() > 0 }, func() string { return "nothing served" })
	bound := size + s.writeMark() + 64<<10 // one answer and its head past the mark
	held := func() bool { return outbound(s) <= bound }
	assert.True(t, holdsFor(300*time.Millisecond, held), "the loop holds %d bytes, past %d", outbound(s), bound)
	assert.Less(t, served.Load(), int64(n), "every answer was made for a client that reads none")
	br := bufio.NewReader(c)
	for i := range n {
		_, body := readResponse(t, br, http.MethodGet)
		require.Equal(t, size, len(body), "answer %d", i+1)
	}
}

// outbound returns the most output one of s's connections holds unsent.
func outbound(s *Server) int {
	return mostOf(s, func(hc *hconn) int { return hc.c.OutboundBuffered() })
}

// isTimeout reports whether err is a read that ran past its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestLoopAnswerPastMaxOutbound pipelines requests whose ServeLoop
// answers outgrow what the connection may hold queued
// (sluice.WithMaxOutbound), to a client that reads late, and checks that
// it never gets an answer that looks whole but lacks bytes, nor an answer
// after one that was cut: each comes whole, or the connection ends (not
// left open, its answer lost).
func TestLoopAnswerPastMaxOutbound(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		const size, n = 1 << 20, 4
		answer := strings.Repeat("b", size)
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			w.WriteString(answer)
			return true
		})
		addr := serve(t, &Server{Handler: h, Inline: inline, ErrorLog: log.New(io.Discard, "", 0)}, sluice.WithMaxOutbound(256<<10))
		c := dial(t, addr)
		_, err := io.WriteString(c, strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", n))
		require.NoError(t, err)
		br := bufio.NewReader(c)
		for i := range n {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				require.False(t, isTimeout(err), "answer %d: the connection is left open, unanswered: %v", i+1, err)
				return
			}
			m, err := io.Copy(io.Discard, resp.Body)
			if err != nil {
				require.False(t, isTimeout(err), "answer %d: the connection is left open, its body cut: %v", i+1, err)
				return
			}
			require.Equal(t, int64(size), m, "a body that ends cleanly has every byte")
		}
	})
}

// TestLoopHandlerAbortNotLogged checks that a ServeLoop that panics with
// http.ErrAbortHandler is answered as a Handler's (500, the connection
// closed) and, as a Handler's, not logged, while another panic is.
func TestLoopHandlerAbortNotLogged(t *testing.T) {
	var logged syncbuf.Buffer
	h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
		if r.Path() == "/abort" {
			panic(http.ErrAbortHandler)
		}
		panic("boom")
	})
	addr := serve(t, &Server{Handler: h, ErrorLog: log.New(&logged, "", 0)})
	for _, path := range []string{"/abort", "/boom"} {
		c := dial(t, addr)
		_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, _ := readResponse(t, bufio.NewReader(c), http.MethodGet)
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, path)
		assert.True(t, resp.Close, path)
	}
	assert.Equal(t, 1, strings.Count(logged.String(), "http: panic serving"), "only the panic that is not ErrAbortHandler is logged:\n%s", logged.String())
	assert.Contains(t, logged.String(), "boom")
}

// TestLoopAnswerKeepsServerFraming checks that the fields the server
// writes itself, added by a LoopHandler in any case, are dropped: an
// answer never carries two Content-Lengths, a Transfer-Encoding beside
// one, a Date of the handler's, or a Connection that disagrees with
// whether the server goes on, which a client or a proxy in front could
// read as another framing.
func TestLoopAnswerKeepsServerFraming(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			w.AddHeader("Content-Length", "999")
			w.AddHeader("content-length", "0")
			w.AddHeader("Transfer-Encoding", "chunked")
			w.AddHeader("CONNECTION", "close")
			w.AddHeader("date", "yesterday")
			w.AddHeader("X-Kept", "1")
			w.WriteString("body")
			return true
		})
		addr := serve(t, &Server{Handler: h, Inline: inline})
		c, err := net.DialTimeout("tcp", addr, deadline)
		require.NoError(t, err)
		defer c.Close()
		c.SetDeadline(time.Now().Add(deadline))
		const req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
		_, err = io.WriteString(c, req+req)
		require.NoError(t, err)
		br := bufio.NewReader(c)
		for i := range 2 {
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
			require.NoError(t, err, "answer %d", i)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, "body", string(body))
			assert.Equal(t, []string{"4"}, resp.Header.Values("Content-Length"))
			assert.Empty(t, resp.TransferEncoding)
			assert.Empty(t, resp.Header.Values("Connection"))
			assert.Len(t, resp.Header.Values("Date"), 1)
			assert.NotEqual(t, "yesterday", resp.Header.Get("Date"))
			assert.Equal(t, "1", resp.Header.Get("X-Kept"))
			assert.False(t, resp.Close, "answer %d", i)
		}
	})
}
