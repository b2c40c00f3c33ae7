package sluicehttp

import (
	"bufio"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDifferential sends every vector of the corpus (valid requests,
// malformed ones, the published smuggling vectors) over real sockets to
// net/http's server and to this one, with handlers on the pool and
// inline, each client finishing its side once it has sent the vector,
// and checks that the servers answer with the same status and see the
// same request, or refuse it with the same status and words, or both
// close without an answer.
func TestDifferential(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	std := &http.Server{Handler: describeHandler, ErrorLog: log.New(io.Discard, "", 0), ReadTimeout: deadline}
	go std.Serve(ln)
	t.Cleanup(func() { std.Close() })
	quiet := log.New(io.Discard, "", 0)
	pooled := serve(t, &Server{Handler: describeHandler, ErrorLog: quiet, ReadTimeout: deadline})
	// Inline bodies are bounded by default; net/http's are not.
	inline := serve(t, &Server{Handler: describeHandler, ErrorLog: quiet, ReadTimeout: deadline,
		Inline: true, MaxBodyBytes: math.MaxInt64})

	vs := vectors()
	require.GreaterOrEqual(t, len(vs), 200)
	type result struct{ std, pooled, inline string }
	results := make([]result, len(vs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, v := range vs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = result{
				std:    answerOver(ln.Addr().String(), v.raw),
				pooled: answerOver(pooled, v.raw),
				inline: answerOver(inline, v.raw),
			}
		})
	}
	wg.Wait()
	for i, v := range vs {
		r := results[i]
		assert.Equal(t, r.std, r.pooled, "vector %q (pool): %.200q", v.name, v.raw)
		assert.Equal(t, r.std, r.inline, "vector %q (inline): %.200q", v.name, v.raw)
	}
}

// answerOver sends raw to addr, finishes sending, and returns the first
// final answer as netHTTPAnswer describes it.
func answerOver(addr, raw string) string {
	c, err := net.DialTimeout("tcp", addr, deadline)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(deadline))
	go func() {
		io.WriteString(c, raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	return answerFrom(bufio.NewReader(c))
}
