package sluicehttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/pool"
)

// TestProxyRemoteAddr checks that behind a balancer that sends a PROXY
// header (sluice.WithProxyProtocol), RemoteAddr is the client it names.
func TestProxyRemoteAddr(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.RemoteAddr)
	})}, sluice.WithProxyProtocol(sluice.ProxyRequired, 0))
	c := dial(t, addr)
	io.WriteString(c, "PROXY TCP4 203.0.113.7 198.51.100.1 40000 80\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_, body := readResponse(t, bufio.NewReader(c), "GET")
	assert.Equal(t, "203.0.113.7:40000", body)
}

// TestControllerDeadlines checks http.ResponseController's deadlines: a
// read deadline fails a body Read that waits past it, and a write
// deadline resets a connection whose answer is not done by then.
func TestControllerDeadlines(t *testing.T) {
	readErr := make(chan error, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		switch r.URL.Path {
		case "/read":
			require.NoError(t, rc.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
			_, err := io.ReadAll(r.Body)
			readErr <- err
			w.WriteHeader(http.StatusRequestTimeout)
		case "/write":
			require.NoError(t, rc.SetWriteDeadline(time.Now().Add(100*time.Millisecond)))
			<-r.Context().Done()
		}
	})})
	c := dial(t, addr)
	io.WriteString(c, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	assert.ErrorIs(t, <-readErr, os.ErrDeadlineExceeded)
	resp, _ := readResponse(t, bufio.NewReader(c), "POST")
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)

	c = dial(t, addr)
	io.WriteString(c, "GET /write HTTP/1.1\r\nHost: x\r\n\r\n")
	_, err := c.Read(make([]byte, 1))
	assert.Error(t, err, "the connection is reset")
}

// TestFullDuplex checks that a handler can answer each part of a body
// as it comes, the client waiting for each answer before it sends the
// next part.
func TestFullDuplex(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		require.NoError(t, rc.EnableFullDuplex())
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			io.WriteString(w, strings.ToUpper(line))
			if err := rc.Flush(); err != nil {
				return
			}
		}
	})})
	c := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	br := bufio.NewReader(c)
	var resp *http.Response
	for i := range 3 {
		line := fmt.Sprintf("line %d\n", i)
		fmt.Fprintf(c, "%x\r\n%s\r\n", len(line), line)
		if i == 0 {
			var err error
			resp, err = http.ReadResponse(br, nil)
			require.NoError(t, err)
		}
		got, err := bufio.NewReader(io.LimitReader(resp.Body, int64(len(line)))).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, strings.ToUpper(line), got)
	}
	io.WriteString(c, "0\r\n\r\n")
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Empty(t, rest)
}

// TestPoolBusy checks that a request that finds every worker of the pool
// busy is answered 503 and its connection closed, while the requests
// already running are answered.
func TestPoolBusy(t *testing.T) {
	p, err := pool.New(pool.WithSize(1))
	require.NoError(t, err)
	t.Cleanup(p.Release)
	release := make(chan struct{})
	started := make(chan struct{})
	addr := serve(t, &Server{Pool: p, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		hello(w, r)
	})})
	busy := dial(t, addr)
	io.WriteString(busy, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	c := dial(t, addr)
	io.WriteString(c, "GET /more HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, _ := readResponse(t, bufio.NewReader(c), "GET")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.True(t, resp.Close)
	close(release)
	_, body := readResponse(t, bufio.NewReader(busy), "GET")
	assert.Equal(t, "hello /busy", body)
}

// TestDefaultPoolTakesManyBusyHandlers: a Server's own pool runs a
// handler for each of more busy connections than the pool package's
// default allows (DefaultSizePerCPU per CPU), none of them refused.
func TestDefaultPoolTakesManyBusyHandlers(t *testing.T) {
	conns := pool.DefaultSizePerCPU*runtime.GOMAXPROCS(0) + 100
	var started atomic.Int64
	release := make(chan struct{})
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		<-release
		hello(w, r)
	})})
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = dial(t, addr)
		io.WriteString(cs[i], "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	waitFor(t, func() bool { return started.Load() == int64(conns) },
		func() string { return fmt.Sprintf("%d of %d handlers started", started.Load(), conns) })
	close(release)
	for _, c := range cs {
		resp, _ := readResponse(t, bufio.NewReader(c), "GET")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
}
