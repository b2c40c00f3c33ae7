package sluicehttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// handlerKinds runs test with a plain Handler and with a LoopHandler, on
// the pool and inline.
func handlerKinds(t *testing.T, test func(t *testing.T, h http.Handler, inline bool)) {
	kinds := map[string]http.Handler{
		"handler": http.HandlerFunc(hello),
		"loop": loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			w.WriteString("hello " + r.Path())
			return true
		}),
	}
	for name, h := range kinds {
		t.Run(name, func(t *testing.T) {
			modes(t, func(t *testing.T, inline bool) { test(t, h, inline) })
		})
	}
}

// TestReadTimeoutsArePerRequest checks that the read timeouts bound each
// request, and each wait for one, not the connection's life: a client
// that asks again and again, each time well within the timeout, is served
// for twice as long as it, whatever answers it (pool, inline, LoopHandler).
// Then, with IdleTimeout (or ReadTimeout, which it defaults to) the
// connection closes once it waits past it; with ReadHeaderTimeout alone
// it is kept, as net/http keeps it.
func TestReadTimeoutsArePerRequest(t *testing.T) {
	const d = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		set    func(s *Server)
		closes bool
	}{
		{"IdleTimeout", func(s *Server) { s.IdleTimeout = d }, true},
		{"ReadTimeout", func(s *Server) { s.ReadTimeout = d }, true},
		{"ReadHeaderTimeout", func(s *Server) { s.ReadHeaderTimeout = d }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handlerKinds(t, func(t *testing.T, h http.Handler, inline bool) {
				s := &Server{Handler: h, Inline: inline}
				tc.set(s)
				c := dial(t, serve(t, s))
				br := bufio.NewReader(c)
				start := time.Now()
				for i := 0; time.Since(start) < 2*d; i++ {
					_, err := io.WriteString(c, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
					require.NoError(t, err)
					resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
					require.NoError(t, err, "request %d, %v after the first: the connection closed while its client kept asking",
						i+1, time.Since(start))
					_, err = io.Copy(io.Discard, resp.Body)
					require.NoError(t, err)
					time.Sleep(d / 8)
				}
				if tc.closes {
					waited := time.Now()
					_, err := br.ReadByte()
					assert.ErrorIs(t, err, io.EOF, "the connection closes once idle")
					assert.GreaterOrEqual(t, time.Since(waited), d/2)
					return
				}
				c.SetReadDeadline(time.Now().Add(3 * d / 2))
				_, err := br.ReadByte()
				assert.True(t, isTimeout(err), "an idle connection is kept without IdleTimeout or ReadTimeout: %v", err)
			})
		})
	}
}

// TestWriteTimeoutIsPerRequest checks that WriteTimeout bounds each
// request's handler, from the end of its head, not the connection's
// life: handlers that each take a third of it, one after another on a
// kept connection, are all answered; and that a handler that takes
// longer has its writes failed, even a megabyte written at once, rather
// than left waiting or taken as sent.
func TestWriteTimeoutIsPerRequest(t *testing.T) {
	const d = 300 * time.Millisecond
	wrote := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/late" {
			<-r.Context().Done()
			_, err := w.Write(make([]byte, 1<<20))
			if err == nil {
				err = http.NewResponseController(w).Flush()
			}
			wrote <- err
			return
		}
		time.Sleep(d / 3)
		hello(w, r)
	})
	c := dial(t, serve(t, &Server{Handler: h, WriteTimeout: d}))
	br := bufio.NewReader(c)
	for i := range 6 {
		_, err := io.WriteString(c, "GET /third HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		require.NoError(t, err, "request %d: the connection was reset", i+1)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
	}
	_, err := io.WriteString(c, "GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	select {
	case err := <-wrote:
		assert.Error(t, err, "a handler past WriteTimeout writes")
	case <-time.After(deadline):
		t.Fatal("a handler past WriteTimeout waits on its write")
	}
	_, err = br.ReadByte()
	assert.Error(t, err, "the connection is reset")
}

// TestBodyLimitClosesWhateverTheAnswer checks MaxBodyBytes where the
// handler answers the chunked body that outgrew it itself: its answer
// goes out, and the connection still closes after it, the request
// pipelined behind it unanswered (what follows a body cut short cannot
// be told from the body). And an inline handler's default bound, 1 MiB,
// refuses a Content-Length past it with 413, without running the
// handler.
func TestBodyLimitClosesWhateverTheAnswer(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		var ran atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ran.Add(1)
			if _, err := io.ReadAll(r.Body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, "too big")
				return
			}
			hello(w, r)
		})
		s := &Server{Handler: h, Inline: inline}
		if !inline {
			s.MaxBodyBytes = 1000
		}
		addr := serve(t, s)
		c := dial(t, addr)
		chunk := strings.Repeat("b", 0x800)
		_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
		require.NoError(t, err)
		for range 1 + (1<<20)/len(chunk) {
			if _, err := io.WriteString(c, "800\r\n"+chunk+"\r\n"); err != nil {
				break // the server may close before it has all
			}
		}
		io.WriteString(c, "0\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, body := readResponse(t, br, http.MethodPost)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Equal(t, "too big", body)
		assert.True(t, resp.Close)
		_, err = br.ReadByte()
		assert.Error(t, err, "the request behind the body is not answered")

		if inline {
			c = dial(t, addr)
			_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 1<<20+1)
			require.NoError(t, err)
			before := ran.Load()
			resp, _ = readResponse(t, bufio.NewReader(c), http.MethodPost)
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			assert.True(t, resp.Close)
			assert.Equal(t, before, ran.Load(), "the handler ran")
		}
	})
}

// TestWriteBufferSizeOverOptions checks that WriteBufferSize bounds what
// a streamed answer queues for a client that reads nothing even when the
// engine's options ask for a far larger write buffer cap, and that the
// handler, held back, writes on once the client reads: Start sets the
// cap over theirs, so that the engine says when the output has drained.
func TestWriteBufferSizeOverOptions(t *testing.T) {
	const size, mark = 16 << 20, 16 << 10
	chunk := make([]byte, 32<<10)
	var written atomic.Int64
	s := &Server{WriteBufferSize: mark, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
			http.NewResponseController(w).Flush()
		}
	})}
	c := dial(t, serve(t, s, sluice.WithWriteBufferCap(1<<30)))
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	waitFor(t, func() bool { return written.Load() > 0 }, func() string { return "the handler never wrote" })
	bound := mark + len(chunk) + 64<<10 // a chunk past the mark, and its framing
	assert.True(t, holdsFor(300*time.Millisecond, func() bool { return outbound(s) <= bound }),
		"%d bytes queued for a client that reads nothing, past %d", outbound(s), bound)
	assert.Less(t, written.Load(), int64(size/2), "the handler wrote on")
	resp, body := readResponse(t, bufio.NewReader(c), http.MethodGet)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, size, len(body), "the answer, once the client reads")
}

// TestShutdownFromManyGoroutines calls Shutdown from several goroutines
// at once, with a connection idle and one whose request is in flight on
// the pool: each call returns, none with an error but the engine's being
// stopped already, the request in flight is answered, with Connection:
// close, and a call after is told the engine has stopped.
func TestShutdownFromManyGoroutines(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		hello(w, r)
	})}
	addr := serve(t, s)
	idle := dial(t, addr)
	_, err := io.WriteString(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	ibr := bufio.NewReader(idle)
	readResponse(t, ibr, http.MethodGet)
	busy := dial(t, addr)
	_, err = io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	<-started

	const callers = 4
	errs := make(chan error, callers)
	for range callers {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			errs <- s.Shutdown(ctx)
		}()
	}
	waitFor(t, s.shutting.Load, func() string { return "Shutdown did not begin" })
	_, err = ibr.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the idle connection closes")
	idle.Close() // as clients do: the server's lingering close ends
	close(release)
	resp, body := readResponse(t, bufio.NewReader(busy), http.MethodGet)
	assert.Equal(t, "hello /slow", body)
	assert.True(t, resp.Close)
	busy.Close() // as clients do: the server's lingering close ends
	for range callers {
		select {
		case err := <-errs:
			if err != nil {
				assert.ErrorIs(t, err, sluice.ErrEngineStopped)
			}
		case <-time.After(deadline):
			t.Fatal("a Shutdown never returned")
		}
	}
	assert.ErrorIs(t, s.Shutdown(context.Background()), sluice.ErrEngineStopped)
}

// TestReadTimeoutBoundsTheHead checks that ReadTimeout alone bounds a
// request's head as ReadHeaderTimeout would (which is zero, so means
// ReadTimeout's value): a head still coming on a kept connection is
// answered 408 and closed, timed from its first byte, not from the
// answer before it.
func TestReadTimeoutBoundsTheHead(t *testing.T) {
	handlerKinds(t, func(t *testing.T, h http.Handler, inline bool) {
		const d = 300 * time.Millisecond
		c := dial(t, serve(t, &Server{Handler: h, Inline: inline, ReadTimeout: d}))
		br := bufio.NewReader(c)
		_, err := io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		readResponse(t, br, http.MethodGet)
		time.Sleep(d / 2)
		begun := time.Now()
		_, err = io.WriteString(c, "GET /slow HTTP/1.1\r\nHo")
		require.NoError(t, err)
		resp, _ := readResponse(t, br, http.MethodGet)
		assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		assert.GreaterOrEqual(t, time.Since(begun), d*3/4, "timed from the head's first byte")
		assert.True(t, resp.Close)
	})
}
