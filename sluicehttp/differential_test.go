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
// handlers on the pool and inline, answering with h.
func differentialServers(t *testing.T, h http.Handler) trio {
	return serveTrio(t, &http.Server{Handler: describeHandler, ReadTimeout: deadline}, func(inline bool) *Server {
		s := &Server{Handler: h, ReadTimeout: deadline}
		if inline {
			s.MaxBodyBytes = math.MaxInt64 // inline bodies are bounded by default; net/http's are not
		}
		return s
	})
}

// trio is the addresses of three servers to compare: net/http's, and this
// package's with handlers on the pool and inline.
type trio struct{ std, pooled, inline string }

// serveTrio starts std, net/http's server, and two of this package's that
// ours makes, one for handlers on the pool and one inline; none logs.
func serveTrio(t *testing.T, std *http.Server, ours func(inline bool) *Server) trio {
	quiet := log.New(io.Discard, "", 0)
	std.ErrorLog = quiet
	addrs := trio{std: serveStd(t, std)}
	for _, inline := range []bool{false, true} {
		s := ours(inline)
		s.Inline, s.ErrorLog = inline, quiet
		if inline {
			addrs.inline = serve(t, s)
		} else {
			addrs.pooled = serve(t, s)
		}
	}
	return addrs
}

// answers is what each of the differential servers answered to one
// vector.
type answers struct{ std, pooled, inline string }

// askEach sends raw(v) for each of vs to each of the differential servers,
// this package's answering with h, sixteen vectors at a time, and returns
// what ask found each answered.
func askEach(t *testing.T, h http.Handler, vs []vector, raw func(vector) string, ask func(addr, raw string) string) []answers {
	servers := differentialServers(t, h)
	results := make([]answers, len(vs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, v := range vs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := raw(v)
			results[i] = answers{std: ask(servers.std, r), pooled: ask(servers.pooled, r), inline: ask(servers.inline, r)}
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
