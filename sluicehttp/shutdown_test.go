package sluicehttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/internal/leakcheck"
)

// TestShutdown checks Shutdown: connections waiting for a request close
// at once, a request in flight is answered (with Connection: close) and
// its connection then closes, and Shutdown returns after that.
func TestShutdown(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				started <- struct{}{}
				<-release
			}
			hello(w, r)
		})}
		if inline {
			s.Handler = http.HandlerFunc(hello) // an inline handler may not wait
		}
		s.Inline = inline
		addr := serve(t, s)

		idle := dial(t, addr)
		io.WriteString(idle, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
		ibr := bufio.NewReader(idle)
		readResponse(t, ibr, "GET")

		var busy net.Conn
		if !inline {
			busy = dial(t, addr)
			io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			<-started
		}

		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			done <- s.Shutdown(ctx)
		}()
		_, err := ibr.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "the idle connection closes")
		idle.Close() // as clients do: the server's lingering close ends
		if !inline {
			select {
			case err := <-done:
				t.Fatalf("Shutdown returned with a request in flight: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			close(release)
			br := bufio.NewReader(busy)
			resp, body := readResponse(t, br, "GET")
			assert.Equal(t, "hello /slow", body)
			assert.True(t, resp.Close)
			busy.Close()
		}
		require.NoError(t, <-done)
	})
}

// TestStartServe checks that a Server starts once (ErrServerStarted
// after), and that Serve returns once the server is shut down.
func TestStartServe(t *testing.T) {
	s := &Server{Handler: http.HandlerFunc(hello)}
	serve(t, s)
	_, err := s.Start("tcp://127.0.0.1:0")
	assert.ErrorIs(t, err, ErrServerStarted)

	leaks := leakcheck.Start(t, deadline)
	s2 := &Server{Handler: http.HandlerFunc(hello), ErrorLog: testLogger(t)}
	served := make(chan error, 1)
	go func() { served <- s2.Serve("tcp://127.0.0.1:0", sluice.WithPoller(testPoller)) }()
	waitFor(t, func() bool {
		s2.mu.Lock()
		defer s2.mu.Unlock()
		return s2.loops != nil
	}, func() string { return "Serve never started" })
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	require.NoError(t, s2.Shutdown(ctx))
	require.NoError(t, <-served)
	assert.ErrorIs(t, s2.Serve("tcp://127.0.0.1:0"), ErrServerStarted)
	leaks()
}

// TestShutdownLeavesHijacked checks that Shutdown does not wait for a
// hijacked connection: the connection is reset once the rest are done.
func TestShutdownLeavesHijacked(t *testing.T) {
	hijacked := make(chan struct{})
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		require.NoError(t, err)
		_ = conn // kept open by its owner
		close(hijacked)
	})}
	addr := serve(t, s)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-hijacked
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	assert.NoError(t, s.Shutdown(ctx))
	_, err := c.Read(make([]byte, 1))
	assert.Error(t, err, "the hijacked connection is cut")
}

// TestShutdownIdleClientStays checks that Shutdown does not wait for an
// idle keep-alive client that neither reads nor closes: as net/http's
// Shutdown, it closes the idle connection at once (the client reads its
// end of stream), rather than lingering for the client's own.
func TestShutdownIdleClientStays(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		s := &Server{Handler: http.HandlerFunc(hello), Inline: inline}
		addr := serve(t, s)
		idle := dial(t, addr)
		io.WriteString(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		ibr := bufio.NewReader(idle)
		readResponse(t, ibr, "GET")

		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		began := time.Now()
		require.NoError(t, s.Shutdown(ctx))
		assert.Less(t, time.Since(began), sluice.DefaultLingerTimeout/2,
			"Shutdown waited for the idle client's lingering close")
		_, err := ibr.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "the idle connection closes")
		idle.Close()
	})
}
