package sluicehttp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// modes runs a test once with handlers on the pool and once inline.
func modes(t *testing.T, test func(t *testing.T, inline bool)) {
	for _, inline := range []bool{false, true} {
		name := "pool"
		if inline {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) { test(t, inline) })
	}
}

// echoHandler answers with what it saw of the request: method, path,
// body length and the body's SHA-256.
var echoHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s %s %d %s", r.Method, r.URL.Path, n, hex.EncodeToString(h.Sum(nil)))
})

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestClientKeepAlive checks that Go's client, from several goroutines,
// gets every answer right over connections it keeps and reuses, and that
// each request has net/http's fields: host, remote address, context.
func TestClientKeepAlive(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		var conns atomic.Int64
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil || host != "127.0.0.1" || r.Host == "" || r.Context().Value(http.LocalAddrContextKey) == nil {
				http.Error(w, "bad request fields", http.StatusInternalServerError)
				return
			}
			w.Header().Set("X-Path", r.URL.Path)
			io.WriteString(w, r.URL.Query().Get("n"))
		})})
		c := client(t)
		const workers, each = 8, 100
		var wg sync.WaitGroup
		for g := range workers {
			wg.Go(func() {
				for i := range each {
					n := strconv.Itoa(g*each + i)
					trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
						if !info.Reused {
							conns.Add(1)
						}
					}}
					req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
						"GET", "http://"+addr+"/p/"+n+"?n="+n, nil)
					resp, err := c.Do(req)
					if !assert.NoError(t, err) {
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					assert.Equal(t, n, string(b))
					assert.Equal(t, "/p/"+n, resp.Header.Get("X-Path"))
				}
			})
		}
		wg.Wait()
		assert.LessOrEqual(t, conns.Load(), int64(2*workers), "connections are kept and reused")
	})
}

// TestCurl checks the server with curl: keep-alive across URLs, a POST,
// a chunked upload, and an upload curl sends with Expect: 100-continue.
func TestCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: echoHandler})
		url := "http://" + addr
		run := func(args ...string) string {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			out, err := exec.CommandContext(ctx, "curl", append([]string{"-sS", "-v", "--max-time", "10"}, args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			return string(out)
		}
		out := run(url+"/a", url+"/b")
		assert.Contains(t, out, "GET /a 0 "+sum(nil))
		assert.Contains(t, out, "GET /b 0 "+sum(nil))
		assert.Regexp(t, `(?i)re-?using existing`, out, "curl keeps the connection")

		body := strings.Repeat("payload!", 1000)
		out = run("-H", "Expect: 100-continue", "--data-binary", body, url+"/post")
		assert.Contains(t, out, "POST /post 8000 "+sum([]byte(body)))
		assert.Contains(t, out, "Expect: 100-continue")
		assert.Contains(t, out, "HTTP/1.1 100 Continue")

		out = run("-H", "Transfer-Encoding: chunked", "--data-binary", body, url+"/chunked")
		assert.Contains(t, out, "POST /chunked 8000 "+sum([]byte(body)))
	})
}

// TestPipelined sends many requests in one write, GETs and POSTs with
// bodies, to handlers that take random times, and checks that the
// answers come in the order of the requests.
func TestPipelined(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !inline {
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			}
			echoHandler(w, r)
		})})
		c := dial(t, addr)
		var req strings.Builder
		const n = 200
		for i := range n {
			if i%3 == 0 {
				body := strings.Repeat("b", i)
				fmt.Fprintf(&req, "POST /%d HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", i, len(body), body)
			} else {
				fmt.Fprintf(&req, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
			}
		}
		_, err := io.WriteString(c, req.String())
		require.NoError(t, err)
		br := bufio.NewReader(c)
		for i := range n {
			resp, body := readResponse(t, br, "GET")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			if i%3 == 0 {
				require.Equal(t, fmt.Sprintf("POST /%d %d %s", i, i, sum([]byte(strings.Repeat("b", i)))), body)
			} else {
				require.Equal(t, fmt.Sprintf("GET /%d 0 %s", i, sum(nil)), body)
			}
		}
	})
}

// TestPipelinedAnswersGoTogether checks that the answers to requests
// pipelined in one write leave in one write: the client's first read
// gets all of them.
func TestPipelinedAnswersGoTogether(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(hello)})
		c := dial(t, addr)
		const n = 16
		_, err := io.WriteString(c, strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", n))
		require.NoError(t, err)
		buf := make([]byte, 64<<10)
		k, err := c.Read(buf)
		require.NoError(t, err)
		assert.Equal(t, n, strings.Count(string(buf[:k]), "HTTP/1.1 200 OK"), "answers in the first read")
	})
}

// TestHead checks that a HEAD's answer has the head a GET's would have
// and no body.
func TestHead(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(hello)})
		c := dial(t, addr)
		io.WriteString(c, "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /g HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, body := readResponse(t, br, "HEAD")
		assert.Equal(t, "", body)
		assert.Equal(t, "8", resp.Header.Get("Content-Length"))
		_, body = readResponse(t, br, "GET")
		assert.Equal(t, "hello /g", body)
	})
}

// TestHTTP10 checks HTTP/1.0: closed after the answer unless it asks for
// keep-alive, kept with a length when it does, and never chunked.
func TestHTTP10(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		big := strings.Repeat("x", 3*stageSize)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/big" {
				io.WriteString(w, big)
				return
			}
			hello(w, r)
		})})

		c := dial(t, addr)
		io.WriteString(c, "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		br := bufio.NewReader(c)
		resp, body := readResponse(t, br, "GET")
		assert.Equal(t, "HTTP/1.0", resp.Proto)
		assert.Equal(t, "keep-alive", resp.Header.Get("Connection"))
		assert.Equal(t, "hello /a", body)
		io.WriteString(c, "GET /big HTTP/1.0\r\n\r\n")
		resp, body = readResponse(t, br, "GET")
		assert.Empty(t, resp.TransferEncoding, "HTTP/1.0 is never chunked")
		assert.Equal(t, big, body, "the body ends with the connection")
		_, err := br.ReadByte()
		assert.ErrorIs(t, err, io.EOF)
	})
}

// TestConnectionClose checks that a request asking to close gets its
// answer and then the end of the stream, and requests after it none.
func TestConnectionClose(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(hello)})
		c := dial(t, addr)
		io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, body := readResponse(t, br, "GET")
		assert.Equal(t, "hello /1", body)
		assert.True(t, resp.Close, "the answer says Connection: close")
		_, err := br.ReadByte()
		assert.ErrorIs(t, err, io.EOF)
	})
}

// TestAnswerSemantics checks the head of answers against net/http's
// rules: a sniffed Content-Type, none when the handler says so, chunked
// answers past the buffer and after Flush, trailers, 204 and 304 without
// body fields, a handler's own Date and Content-Length.
func TestAnswerSemantics(t *testing.T) {
	big := strings.Repeat("<html>", 2*stageSize)
	routes := map[string]http.HandlerFunc{
		"/html": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html><body>hi</body></html>") },
		"/no-type": func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "<html>")
		},
		"/big": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) },
		"/flush": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
		},
		"/trailer": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "body")
			w.Header().Set("X-Sum", "42")
			w.Header().Set(http.TrailerPrefix+"X-Late", "7")
		},
		"/204": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
		"/304": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotModified)
		},
		"/own": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", "Tue, 01 Jan 2030 00:00:00 GMT")
			w.Header().Set("Content-Length", "2")
			io.WriteString(w, "ok")
		},
		"/after": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.Header().Set("X-Late", "not sent")
			io.WriteString(w, "x")
		},
		"/early": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "final")
		},
	}
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			routes[r.URL.Path](w, r)
		})})
		c := client(t)
		get := func(path string) (*http.Response, string) {
			resp, err := c.Get("http://" + addr + path)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			return resp, string(b)
		}
		resp, _ := get("/html")
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
		resp, _ = get("/no-type")
		assert.NotContains(t, resp.Header, "Content-Type")
		resp, body := get("/big")
		assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
		assert.Equal(t, big, body)
		resp, body = get("/flush")
		assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
		assert.Equal(t, "ab", body)
		resp, body = get("/trailer")
		assert.Equal(t, "body", body)
		assert.Equal(t, "42", resp.Trailer.Get("X-Sum"))
		assert.Equal(t, "7", resp.Trailer.Get("X-Late"))
		resp, _ = get("/204")
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		assert.NotContains(t, resp.Header, "Content-Length")
		resp, _ = get("/304")
		assert.Equal(t, http.StatusNotModified, resp.StatusCode)
		assert.NotContains(t, resp.Header, "Content-Type")
		resp, body = get("/own")
		assert.Equal(t, "Tue, 01 Jan 2030 00:00:00 GMT", resp.Header.Get("Date"))
		assert.Equal(t, "ok", body)
		resp, _ = get("/after")
		assert.Equal(t, http.StatusAccepted, resp.StatusCode)
		assert.Empty(t, resp.Header.Get("X-Late"))
		var hints []int
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			Got1xxResponse: func(code int, _ textproto.MIMEHeader) error { hints = append(hints, code); return nil },
		}), "GET", "http://"+addr+"/early", nil)
		resp, err := c.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, "final", string(b))
		assert.Equal(t, []int{http.StatusEarlyHints}, hints)
	})
}

// TestDateRefreshed checks that the Date header follows the clock.
func TestDateRefreshed(t *testing.T) {
	addr := serve(t, &Server{Inline: true, Handler: http.HandlerFunc(hello)})
	c := client(t)
	date := func() time.Time {
		resp, err := c.Get("http://" + addr + "/")
		require.NoError(t, err)
		resp.Body.Close()
		d, err := http.ParseTime(resp.Header.Get("Date"))
		require.NoError(t, err)
		return d
	}
	first := date()
	assert.WithinDuration(t, time.Now(), first, 2*time.Second)
	waitFor(t, func() bool { return date().After(first) }, func() string { return "the Date header never changed" })
}

// TestWriterUsedAfterReturn checks that a handler that keeps its
// http.ResponseWriter and uses it after returning, which net/http
// forbids, gets errors and changes no later answer, on its connection or
// another: the server reuses what served it.
func TestWriterUsedAfterReturn(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		kept := make(chan http.ResponseWriter, 1)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/keep" {
				kept <- w
			}
			w.Header().Set("X-Path", r.URL.Path)
			io.WriteString(w, "hello "+r.URL.Path)
		})})
		c := client(t)
		get := func(path string) {
			t.Helper()
			resp, err := c.Get("http://" + addr + path)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, "hello "+path, string(b))
			assert.Equal(t, []string{path}, resp.Header.Values("X-Path"))
		}
		get("/keep")
		w := <-kept
		rc := http.NewResponseController(w)
		_, err := io.WriteString(w, "late")
		assert.ErrorIs(t, err, errHandlerDone)
		assert.ErrorIs(t, rc.Flush(), errHandlerDone)
		assert.ErrorIs(t, rc.SetWriteDeadline(time.Now()), errHandlerDone)
		assert.ErrorIs(t, rc.SetReadDeadline(time.Now()), errHandlerDone)
		w.Header().Set("X-Late", "1")
		w.WriteHeader(http.StatusTeapot)
		for _, path := range []string{"/a", "/b", "/c"} {
			get(path)
		}
	})
}

// TestWriterUsedAfterReturnRacesNothing checks that each method of a
// kept http.ResponseWriter that does not write, called first after its
// handler returned, from a goroutine that never synchronized with the
// server, is ordered against the handler's return: the race detector
// (on in CI) fails the test otherwise. Each also says the handler is done.
func TestWriterUsedAfterReturnRacesNothing(t *testing.T) {
	late := map[string]func(t *testing.T, w http.ResponseWriter){
		"Header": func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("X-Late", "1")
		},
		"SetReadDeadline": func(t *testing.T, w http.ResponseWriter) {
			assert.ErrorIs(t, http.NewResponseController(w).SetReadDeadline(time.Now()), errHandlerDone)
		},
		"SetWriteDeadline": func(t *testing.T, w http.ResponseWriter) {
			assert.ErrorIs(t, http.NewResponseController(w).SetWriteDeadline(time.Now()), errHandlerDone)
		},
		"EnableFullDuplex": func(t *testing.T, w http.ResponseWriter) {
			assert.ErrorIs(t, http.NewResponseController(w).EnableFullDuplex(), errHandlerDone)
		},
	}
	modes(t, func(t *testing.T, inline bool) {
		kept := make(chan http.ResponseWriter, 1)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/keep" {
				kept <- w
			}
			io.WriteString(w, "hello "+r.URL.Path)
		})})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		get := func(path string) {
			t.Helper()
			_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
			_, body := readResponse(t, br, http.MethodGet)
			require.Equal(t, "hello "+path, body)
		}
		for name, use := range late {
			t.Run(name, func(t *testing.T) {
				get("/keep")
				w := <-kept
				// A goroutine of its own, started now: nothing orders it
				// after the handler's return but what the writer does.
				done := make(chan struct{})
				go func() {
					defer close(done)
					use(t, w)
				}()
				<-done
				get("/next")
			})
		}
	})
}

// A handler may keep its answer's header map past its return, against
// net/http's rules, and write to it later (a Set-Cookie from a goroutine,
// say): that must never reach another client's answer, as under net/http,
// which ignores it. Here the late write is made while the next request,
// another client's on the same loop, is served: an answer's header map
// handed on would be that request's.
func TestKeptHeaderReachesNoOtherAnswer(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		kept := make(chan http.Header, 1)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case h := <-kept:
				h.Set("Set-Cookie", "session=the-first-client's")
			default:
			}
			w.Header().Set("X-Path", r.URL.Path)
			io.WriteString(w, "hello")
			if r.URL.Path == "/keep" {
				kept <- w.Header()
			}
		})}, sluice.WithNumEventLoop(1))
		get := func(c *http.Client, path string) *http.Response {
			t.Helper()
			resp, err := c.Get("http://" + addr + path)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			return resp
		}
		get(client(t), "/keep")
		resp := get(client(t), "/a")
		assert.Empty(t, resp.Header.Values("Set-Cookie"), "a header kept by another request's handler")
		assert.Equal(t, []string{"/a"}, resp.Header.Values("X-Path"))
		assert.Empty(t, kept, "the second request's handler took the kept map")
	})
}
