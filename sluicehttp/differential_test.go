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
	vs := vectors()
	require.GreaterOrEqual(t, len(vs), 200)
	results := askEach(t, describeHandler, vs, func(v vector) string { return v.raw }, answerOver)
	for i, v := range vs {
		r := results[i]
		assert.Equal(t, r.std, r.pooled, "vector %q (pool): %.200q", v.name, v.raw)
		assert.Equal(t, r.std, r.inline, "vector %q (inline): %.200q", v.name, v.raw)
	}
}

// differentialServers starts the servers the differential tests compare:
// net/http's, answering with describeHandler, and this package's with
// handlers on the pool and inline, answering with h; it returns their
// addresses.
func differentialServers(t *testing.T, h http.Handler) (std, pooled, inline string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: describeHandler, ErrorLog: log.New(io.Discard, "", 0), ReadTimeout: deadline}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	quiet := log.New(io.Discard, "", 0)
	pooled = serve(t, &Server{Handler: h, ErrorLog: quiet, ReadTimeout: deadline})
	// Inline bodies are bounded by default; net/http's are not.
	inline = serve(t, &Server{Handler: h, ErrorLog: quiet, ReadTimeout: deadline,
		Inline: true, MaxBodyBytes: math.MaxInt64})
	return ln.Addr().String(), pooled, inline
}

// answers is what each of the differential servers answered to one
// vector.
type answers struct{ std, pooled, inline string }

// askEach sends raw(v) for each of vs to each of the differential servers,
// this package's answering with h, sixteen vectors at a time, and returns
// what ask found each answered.
func askEach(t *testing.T, h http.Handler, vs []vector, raw func(vector) string, ask func(addr, raw string) string) []answers {
	std, pooled, inline := differentialServers(t, h)
	results := make([]answers, len(vs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, v := range vs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := raw(v)
			results[i] = answers{std: ask(std, r), pooled: ask(pooled, r), inline: ask(inline, r)}
		})
	}
	wg.Wait()
	return results
}

// answerOver sends raw to addr, finishes sending, and returns the first
// final answer as netHTTPAnswer describes it.
func answerOver(addr, raw string) string {
	c, err := sendAndFinish(addr, raw)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	return answerFrom(bufio.NewReader(c))
}

// sendAndFinish connects to addr, with the differential tests' deadline
// on everything, and sends raw from another goroutine, then finishes
// sending (CloseWrite), so that the caller reads the answers meanwhile:
// a server may answer, or close, before it has read all of raw.
func sendAndFinish(addr, raw string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, deadline)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(deadline))
	go func() {
		io.WriteString(c, raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	return c, nil
}
