package sluicehttp

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/pool"
)

// describeLoop answers every request it is offered below the Handler
// API as describeHandler answers it, and counts them; ServeHTTP answers
// the rest (bodies, OPTIONS *).
type describeLoop struct{ served atomic.Int64 }

func (d *describeLoop) ServeLoop(w *LoopResponse, r *LoopRequest) bool {
	d.served.Add(1)
	req := r.req // the view's request, as parsed for the loop
	req.Body = http.NoBody
	var b strings.Builder
	describe(&b, &req)
	w.AddHeader("X-Description", strconv.Quote(b.String()))
	w.WriteString(b.String())
	return true
}

func (d *describeLoop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	describeHandler(w, r)
}

// TestLoopHandlerDifferential sends the differential corpus, each vector
// followed by a pipelined request, to net/http's server and to a Server
// whose Handler is a LoopHandler (pool and inline), and checks that both
// answer alike: the LoopHandler is offered the requests as net/http's
// server reads them, after the same checks, and the requests with bodies
// go to ServeHTTP, in order with the rest.
func TestLoopHandlerDifferential(t *testing.T) {
	var h describeLoop
	sent := differentialPipelined(t, &h)
	assert.Greater(t, h.served.Load(), int64(sent), "requests the LoopHandler answered")
}

// loopRoutes answer below the Handler API as stdRoutes answer with it.
var loopRoutes = map[string]func(w *LoopResponse){
	"/text": func(w *LoopResponse) {
		w.AddHeader("Content-Type", "text/plain")
		w.WriteString("hello")
	},
	"/empty":     func(w *LoopResponse) {},
	"/nocontent": func(w *LoopResponse) { w.WriteHeader(http.StatusNoContent) },
	"/notmod":    func(w *LoopResponse) { w.WriteHeader(http.StatusNotModified); w.WriteString("dropped") },
	"/teapot": func(w *LoopResponse) {
		w.AddHeader("Content-Type", "text/plain")
		w.AddHeader("X-Two", "a")
		w.AddHeader("X-Two", "b\r\nX-Injected: 1")
		w.AddHeader("Bad Key", "dropped")
		w.WriteHeader(http.StatusTeapot)
		w.WriteString("short and stout ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), 42, 10))
	},
}

var stdRoutes = map[string]http.HandlerFunc{
	"/text": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello")
	},
	"/empty":     func(w http.ResponseWriter, r *http.Request) {},
	"/nocontent": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
	"/notmod": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotModified)
		io.WriteString(w, "dropped")
	},
	"/teapot": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Add("X-Two", "a")
		w.Header().Add("X-Two", "b\r\nX-Injected: 1")
		w.Header().Add("Bad Key", "dropped")
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "short and stout 42")
	},
}

// routed answers loopRoutes below the Handler API, and everything else
// with ServeHTTP.
type routed struct{}

func (routed) ServeLoop(w *LoopResponse, r *LoopRequest) bool {
	f, ok := loopRoutes[r.Path()]
	if ok {
		f(w)
	}
	return ok
}

func (routed) ServeHTTP(w http.ResponseWriter, r *http.Request) { stdHandler(w, r) }

func stdHandler(w http.ResponseWriter, r *http.Request) {
	if f, ok := stdRoutes[r.URL.Path]; ok {
		f(w, r)
		return
	}
	io.WriteString(w, "next "+r.URL.Path)
}

// TestLoopHandlerFraming checks that the server frames a LoopHandler's
// answers as net/http frames a Handler's: status, header fields, Date,
// Content-Length (none for 204 and 304, nor for a HEAD answered with no
// body), the body dropped for HEAD, Connection for Connection: close and
// HTTP/1.0 with and without keep-alive, and whether the connection goes
// on to the request pipelined after it.
func TestLoopHandlerFraming(t *testing.T) {
	servers := serveTrio(t, &http.Server{Handler: http.HandlerFunc(stdHandler)},
		func(bool) *Server { return &Server{Handler: routed{}} })
	const next = "GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	for path := range loopRoutes {
		for _, req := range []string{
			"GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n",
			"HEAD " + path + " HTTP/1.1\r\nHost: x\r\n\r\n",
			"GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
			"GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: Keep-Alive, CLOSE\r\n\r\n",
			"GET " + path + " HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
			"HEAD " + path + " HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
			"GET " + path + " HTTP/1.0\r\n\r\n",
			"POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		} {
			servers.answerAlike(t, req, next)
		}
	}
}

// TestLoopHandlerDeclines checks that a request ServeLoop declines goes
// to ServeHTTP, with nothing of what ServeLoop wrote.
func TestLoopHandlerDeclines(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			w.AddHeader("X-Loop", "1")
			w.WriteHeader(http.StatusTeapot)
			w.WriteString("from the loop")
			return r.Path() == "/loop"
		})
		addr := serve(t, &Server{Handler: h, Inline: inline})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		_, err := io.WriteString(c, "GET /other HTTP/1.1\r\nHost: x\r\n\r\nGET /loop HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, body := readResponse(t, br, http.MethodGet)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Empty(t, resp.Header.Get("X-Loop"))
		assert.Equal(t, "hello /other", body)
		resp, body = readResponse(t, br, http.MethodGet)
		assert.Equal(t, http.StatusTeapot, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get("X-Loop"))
		assert.Equal(t, "from the loop", body)
	})
}

// loopFunc is a LoopHandler from a function, with hello as its
// ServeHTTP.
type loopFunc func(w *LoopResponse, r *LoopRequest) bool

func (f loopFunc) ServeLoop(w *LoopResponse, r *LoopRequest) bool { return f(w, r) }
func (loopFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) { hello(w, r) }

// TestLoopRequestView checks what a LoopHandler sees of a request: its
// method, target, path, query, host, protocol and header fields, looked
// up in any case.
func TestLoopRequestView(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			fmt.Fprintf(w, "%s|%s|%s|%s|%s|%s|%s|%s|%s|%s", r.Method(), r.Target(), r.Path(), r.RawQuery(),
				r.Host(), r.Proto(), r.Header("x-custom"), r.Header("ACCEPT"), r.Header("Host"),
				r.Header(strings.Repeat("Long-", 20)))
			return true
		})
		addr := serve(t, &Server{Handler: h, Inline: inline})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		_, err := io.WriteString(c, "GET /a%20b/c?q=1&r=2 HTTP/1.1\r\nHost: example.com\r\nX-Custom: one\r\n"+
			"x-custom: two\r\nAccept: */*\r\n"+strings.Repeat("Long-", 20)+": long\r\n\r\n")
		require.NoError(t, err)
		_, body := readResponse(t, br, http.MethodGet)
		assert.Equal(t, "GET|/a%20b/c?q=1&r=2|/a b/c|q=1&r=2|example.com|HTTP/1.1|one|*/*||long", body)
	})
}

// TestLoopHandlerPanics checks that a ServeLoop that panics, or sets a
// status it may not, gets 500 Internal Server Error, its connection
// closed after the answers before it, and that the loop goes on serving
// others.
func TestLoopHandlerPanics(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			switch r.Path() {
			case "/panic":
				w.WriteString("half an answer")
				panic("boom")
			case "/code":
				w.WriteHeader(http.StatusContinue)
			}
			w.WriteString("fine")
			return true
		})
		addr := serve(t, &Server{Handler: h, Inline: inline, ErrorLog: log.New(io.Discard, "", 0)}, sluice.WithNumEventLoop(1))
		for _, path := range []string{"/panic", "/code"} {
			c := dial(t, addr)
			br := bufio.NewReader(c)
			_, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"+
				"GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
			_, body := readResponse(t, br, http.MethodGet)
			assert.Equal(t, "fine", body)
			resp, _ := readResponse(t, br, http.MethodGet)
			assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, path)
			assert.True(t, resp.Close, path)
			_, err = br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "the connection closes after the 500")
		}
		c := dial(t, addr)
		_, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		_, body := readResponse(t, bufio.NewReader(c), http.MethodGet)
		assert.Equal(t, "fine", body)
	})
}

// TestLoopHandlerReadTimeouts checks that the server's read timeouts
// apply to a LoopHandler's requests as to any: a head that does not
// come whole in ReadHeaderTimeout is answered 408 without ServeLoop, and
// a connection idle past IdleTimeout after an answer closes.
func TestLoopHandlerReadTimeouts(t *testing.T) {
	var served atomic.Int64
	h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
		served.Add(1)
		return true
	})
	addr := serve(t, &Server{Handler: h, ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n")
	require.NoError(t, err)
	resp, _ := readResponse(t, br, http.MethodGet)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = readResponse(t, br, http.MethodGet)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.EqualValues(t, 1, served.Load())

	c = dial(t, addr)
	br = bufio.NewReader(c)
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	readResponse(t, br, http.MethodGet)
	_, err = br.ReadByte() // the idle connection closes: the read ends
	assert.ErrorIs(t, err, io.EOF)
}

// TestLoopHandlerAfterPool checks that a request pipelined after one
// whose ServeHTTP runs on the pool is answered after it.
func TestLoopHandlerAfterPool(t *testing.T) {
	release := make(chan struct{})
	h := &slowStd{release: release}
	addr := serve(t, &Server{Handler: h})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	_, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	_, body := readResponse(t, br, http.MethodGet)
	assert.Equal(t, "slow", body)
	_, body = readResponse(t, br, http.MethodGet)
	assert.Equal(t, "fast", body)
}

// slowStd answers /fast on the loop, and everything else on the pool once
// release is closed.
type slowStd struct{ release chan struct{} }

func (s *slowStd) ServeLoop(w *LoopResponse, r *LoopRequest) bool {
	if r.Path() != "/fast" {
		return false
	}
	w.WriteString("fast")
	return true
}

func (s *slowStd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	<-s.release
	io.WriteString(w, "slow")
}

// TestLoopHandlerPoolBusy checks that ServeLoop's answers to the requests
// before one that finds every worker of the pool busy reach the client,
// before that request's 503.
func TestLoopHandlerPoolBusy(t *testing.T) {
	p, err := pool.New(pool.WithSize(1))
	require.NoError(t, err)
	t.Cleanup(p.Release)
	release := make(chan struct{})
	h := &slowStd{release: release}
	addr := serve(t, &Server{Pool: p, Handler: h})
	busy := dial(t, addr)
	_, err = io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	waitFor(t, func() bool { return p.Running() == 1 }, func() string { return "the slow handler never ran" })
	c := dial(t, addr)
	br := bufio.NewReader(c)
	_, err = io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	for range 2 {
		_, body := readResponse(t, br, http.MethodGet)
		assert.Equal(t, "fast", body)
	}
	resp, _ := readResponse(t, br, http.MethodGet)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	close(release)
	_, body := readResponse(t, bufio.NewReader(busy), http.MethodGet)
	assert.Equal(t, "slow", body)
}

// TestLoopHandlerKeepsOutput checks the loop's output buffer kept between
// runs of LoopHandler answers: one per loop, kept after a run of answers
// on the pool and inline, and let go once an answer grows it past
// maxKeptBytes, so that a big answer is not held for good (the pool may
// hand that buffer out again, but the loop does not keep it).
func TestLoopHandlerKeepsOutput(t *testing.T) {
	big := strings.Repeat("b", maxKeptBytes+1)
	h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
		if r.Path() == "/big" {
			w.WriteString(big)
		} else {
			w.WriteString("small")
		}
		return true
	})
	modes(t, func(t *testing.T, inline bool) {
		s := &Server{Inline: inline, Handler: h}
		c, ls := serveOneLoop(t, s)
		// kept returns the capacity of the loop's kept buffer, or -1.
		kept := func() int {
			ch := make(chan int, 1)
			require.NoError(t, ls.loop.Execute(func() {
				n := -1
				if sc := ls.lsc; sc != nil && sc.out != nil {
					n = cap(sc.out.B)
				}
				ch <- n
			}))
			return <-ch
		}
		br := bufio.NewReader(c)
		ask := func(path string, depth int) {
			_, err := io.WriteString(c, strings.Repeat("GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n", depth))
			require.NoError(t, err)
			for range depth {
				resp, err := http.ReadResponse(br, nil)
				require.NoError(t, err)
				_, err = io.Copy(io.Discard, resp.Body)
				require.NoError(t, err)
				resp.Body.Close()
			}
		}
		// The first run may be handed a buffer another test grew past the
		// bound, which the loop passes over for a small one of its own.
		ask("/small", 16)
		ask("/small", 16)
		small := kept()
		require.Positive(t, small, "a buffer kept after a run of 16 answers")
		ask("/small", 16)
		require.Equal(t, small, kept(), "the same buffer, at the same size, for the next run")
		ask("/big", 1)
		require.Zero(t, kept(), "a buffer grown past %d bytes kept, not a fresh one", maxKeptBytes)
		ask("/small", 16)
		require.LessOrEqual(t, kept(), maxKeptBytes, "the buffer kept after a big answer")
	})
}
