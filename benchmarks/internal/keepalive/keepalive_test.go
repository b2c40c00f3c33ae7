package keepalive

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/loadgen"
)

// plaintext is the request every test makes of a server at addr.
func plaintext(addr string) Request {
	return Request{Addr: addr, Path: hello.PlaintextPath, Want: hello.Plaintext, Timeout: 2 * time.Second}
}

func TestOpenHoldsIdleConnections(t *testing.T) {
	states := make(chan http.ConnState, 1000)
	srv := httptest.NewUnstartedServer(hello.Handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) { states <- s }
	srv.Start()
	defer srv.Close()
	held, errs := Open(plaintext(srv.Listener.Addr().String()), 50, 8)
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	assert.Zero(t, errs.Total(), "%+v", errs)
	require.Len(t, held, 50)
	idle := 0
	for idle < 50 {
		select {
		case s := <-states:
			if s == http.StateIdle {
				idle++
			}
			assert.NotEqual(t, http.StateClosed, s, "a connection closed")
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 50 connections idle at the server", idle)
		}
	}
}

// TestOpenCountsWhatWentWrong tries each way an answer can fail: each
// connection that meets one is counted, and none is held.
func TestOpenCountsWhatWentWrong(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    loadgen.Errors
	}{
		{"status", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, hello.Plaintext, http.StatusInternalServerError)
		}, loadgen.Errors{Mismatch: 3}},
		{"body", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("Hello, World?")) }, loadgen.Errors{Mismatch: 3}},
		{"close", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			w.Write([]byte(hello.Plaintext))
		}, loadgen.Errors{Mismatch: 3}},
		{"hang up", func(w http.ResponseWriter, _ *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		}, loadgen.Errors{Closed: 3}},
		{"not HTTP", func(w http.ResponseWriter, _ *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Write([]byte("+PONG\r\n"))
				c.Close()
			}
		}, loadgen.Errors{Mismatch: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			held, errs := Open(plaintext(srv.Listener.Addr().String()), 3, 2)
			assert.Empty(t, held)
			assert.Equal(t, tc.want, errs)
		})
	}
}

func TestOpenTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() { // accepts and never answers
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	r := plaintext(ln.Addr().String())
	r.Timeout = 100 * time.Millisecond
	held, errs := Open(r, 2, 2)
	assert.Empty(t, held)
	assert.Equal(t, loadgen.Errors{Timeout: 2}, errs)
}

func TestOpenCountsFailedDials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	held, errs := Open(plaintext(addr), 2, 1)
	assert.Empty(t, held)
	assert.Equal(t, loadgen.Errors{Dial: 2}, errs)
}
