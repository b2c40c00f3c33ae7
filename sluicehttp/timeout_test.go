package sluicehttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syncbuf"
)

// TestSlowHeader checks ReadHeaderTimeout: a client still sending its
// head when it passes is answered 408 and closed, and one that sends
// nothing is closed without an answer.
func TestSlowHeader(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		const timeout = 200 * time.Millisecond
		addr := serve(t, &Server{Inline: inline, ReadHeaderTimeout: timeout, Handler: http.HandlerFunc(hello)})

		start := time.Now() // a new connection's first head is timed from its opening, as net/http times it
		c := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
		br := bufio.NewReader(c)
		resp, _ := readResponse(t, br, "GET")
		assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		assert.GreaterOrEqual(t, time.Since(start), timeout)
		_, err := br.ReadByte()
		assert.ErrorIs(t, err, io.EOF)

		silent := dial(t, addr)
		n, err := silent.Read(make([]byte, 1))
		assert.Zero(t, n)
		assert.ErrorIs(t, err, io.EOF, "a connection that sent nothing is closed unanswered")

		// A head trickled a byte at a time is bounded all the same.
		c = dial(t, addr)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, b := range []byte("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1234567890") {
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(timeout / 20)
			}
		}()
		resp, _ = readResponse(t, bufio.NewReader(c), "GET")
		assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		<-done
	})
}

// TestIdleTimeout checks that a keep-alive connection waiting for its
// next request is closed once IdleTimeout passes, and one that keeps
// asking is not.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	addr := serve(t, &Server{IdleTimeout: idle, Handler: http.HandlerFunc(hello)})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	for range 5 {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		readResponse(t, br, "GET")
		time.Sleep(idle / 3)
	}
	start := time.Now()
	_, err := br.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
	assert.GreaterOrEqual(t, time.Since(start), idle/2)
}

// TestReadTimeoutBody checks ReadTimeout on a body that stops coming: the
// handler's Read fails with a timeout, and the connection closes after
// the answer.
func TestReadTimeoutBody(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		got := make(chan error, 1)
		addr := serve(t, &Server{Inline: inline, ReadTimeout: 300 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			got <- err
			w.WriteHeader(http.StatusBadRequest)
		})})
		c := dial(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly some")
		err := <-got
		require.Error(t, err)
		assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "%v", err)
		te, ok := err.(interface{ Timeout() bool })
		assert.True(t, ok && te.Timeout(), "the error's own Timeout method says so: %T", err)
		br := bufio.NewReader(c)
		resp, _ := readResponse(t, br, "POST")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.True(t, resp.Close)
	})
}

// TestWriteTimeout checks that a handler that takes longer than
// WriteTimeout has its connection reset and its context cancelled.
func TestWriteTimeout(t *testing.T) {
	cancelled := make(chan struct{})
	addr := serve(t, &Server{WriteTimeout: 200 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fast" {
			hello(w, r)
			return
		}
		<-r.Context().Done()
		close(cancelled)
	})})
	c := client(t)
	resp, err := c.Get("http://" + addr + "/fast")
	require.NoError(t, err)
	resp.Body.Close()
	_, err = c.Get("http://" + addr + "/slow")
	assert.Error(t, err)
	<-cancelled
}

// TestHandlerPanic checks that a handler that panics gets 500 and its
// connection closed, is logged as net/http logs it, and that other
// connections go on being served.
func TestHandlerPanic(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		var logged syncbuf.Buffer
		addr := serve(t, &Server{Inline: inline, ErrorLog: log.New(&logged, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/panic":
				w.Header().Set("X-Not", "sent")
				w.WriteHeader(http.StatusAccepted)
				panic("boom")
			case "/abort":
				panic(http.ErrAbortHandler)
			}
			hello(w, r)
		})})
		other := dial(t, addr)
		io.WriteString(other, "GET /before HTTP/1.1\r\nHost: x\r\n\r\n")
		obr := bufio.NewReader(other)
		readResponse(t, obr, "GET")

		c := dial(t, addr)
		io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /panic HTTP/1.1\r\nHost: x\r\n\r\nGET /never HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		_, body := readResponse(t, br, "GET")
		assert.Equal(t, "hello /ok", body)
		resp, _ := readResponse(t, br, "GET")
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		assert.Empty(t, resp.Header.Get("X-Not"))
		_, err := br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "the connection closes; the request after it is not answered")
		assert.Contains(t, logged.String(), "http: panic serving 127.0.0.1:")
		assert.Contains(t, logged.String(), "boom")

		c = dial(t, addr)
		io.WriteString(c, "GET /abort HTTP/1.1\r\nHost: x\r\n\r\n")
		readResponse(t, bufio.NewReader(c), "GET")
		assert.Equal(t, 1, strings.Count(logged.String(), "http: panic serving"), "ErrAbortHandler is not logged")

		io.WriteString(other, "GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
		_, body = readResponse(t, obr, "GET")
		assert.Equal(t, "hello /after", body, "other connections are served on")
	})
}

// TestClientGoneCancelsContext checks that a request's context is
// cancelled when its client closes the connection while the handler
// runs.
func TestClientGoneCancelsContext(t *testing.T) {
	started := make(chan struct{})
	cause := make(chan error, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			cause <- r.Context().Err()
		case <-time.After(deadline):
			cause <- errors.New("never cancelled")
		}
	})})
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	c.Close()
	assert.ErrorIs(t, <-cause, context.Canceled)
}

// TestHeadTooLarge checks MaxHeaderBytes: a head longer than it, and
// net/http's 4 KiB more, is answered 431 and closed, whether it came
// whole or is still coming; one within it is served.
func TestHeadTooLarge(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, MaxHeaderBytes: 1000, Handler: http.HandlerFunc(hello)})
		for _, tc := range []struct {
			name, head string
			code       int
		}{
			{"within", "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 4000) + "\r\n\r\n", http.StatusOK},
			{"whole", "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 6000) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
			{"coming", "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 6000), http.StatusRequestHeaderFieldsTooLarge},
			{"request line", "GET /" + strings.Repeat("u", 6000), http.StatusRequestHeaderFieldsTooLarge},
		} {
			c := dial(t, addr)
			io.WriteString(c, tc.head)
			resp, _ := readResponse(t, bufio.NewReader(c), "GET")
			assert.Equal(t, tc.code, resp.StatusCode, tc.name)
			assert.Equal(t, tc.code != http.StatusOK, resp.Close, tc.name)
		}
	})
}
