// The development backend (sluice_std) allocates in the engine itself,
// for each read and write: the budget holds on the pollers.

//go:build !sluice_std

package sluicehttp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// plainLoop answers the TechEmpower plaintext test below the Handler API.
var plainLoop = loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
	w.AddHeader("Server", "Sluice")
	w.AddHeader("Content-Type", "text/plain")
	w.Write(plainBody)
	return true
})

// TestLoopHandlerAllocates checks that a request a LoopHandler answers
// costs the heap nothing, one at a time and 16 pipelined, with the
// Server's other handlers on the pool and inline, for a head as wrk sends
// it and for a browser's, longer than smallHead and with more fields than
// an ordinary request holds without an allocation.
func TestLoopHandlerAllocates(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what is put back")
	}
	long := "GET /plaintext HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n" +
		"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n" +
		"Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\nConnection: keep-alive\r\n" +
		"Cookie: session=0123456789abcdef0123456789abcdef\r\nReferer: http://x/\r\nDNT: 1\r\n" +
		"Sec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-Site: none\r\nPriority: u=0, i\r\n\r\n"
	require.Greater(t, len(long), smallHead)
	require.Greater(t, strings.Count(long, "\r\n")-2, len(head{}.vals), "header fields")
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: plainLoop}, sluice.WithNumEventLoop(1))
		for _, head := range []string{plainRequest, long} {
			for _, depth := range []int{1, 16} {
				got := loopAllocs(t, addr, depth, head)
				t.Logf("depth %d, head of %d bytes: %.2f heap allocations per request", depth, len(head), got)
				require.Zero(t, got, "heap allocations per request, %d pipelined", depth)
			}
		}
	})
}

// loopAllocs returns the heap allocations per request of a client that
// sends batches of depth pipelined requests to addr over one connection
// and reads their answers, server and client in this process.
func loopAllocs(t *testing.T, addr string, depth int, head string) float64 {
	return testing.AllocsPerRun(2000/depth, pipelinedRound(t, addr, depth, head)) / float64(depth)
}

// TestLoopHandlerAllocatesAtItsBound checks the bound LoopHandler's doc
// gives for a request that costs the heap nothing, at its edge: 32 header
// fields, none repeated, besides Host, looked up by ServeLoop in any case
// (Header, with keys up to 64 bytes), on a Server whose read timeouts
// are set, so that each request moves its connection's timers.
func TestLoopHandlerAllocatesAtItsBound(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what is put back")
	}
	var head strings.Builder
	head.WriteString("GET /plaintext?q=1 HTTP/1.1\r\nHost: x\r\n")
	for i := range loopFields {
		fmt.Fprintf(&head, "X-Field-%02d: value %d\r\n", i, i)
	}
	head.WriteString("\r\n")
	long := strings.Repeat("k", 64)
	h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
		if r.Header("x-field-00") != "value 0" || r.Header("X-FIELD-31") != "value 31" ||
			r.Header(long) != "" || r.Path() != "/plaintext" || r.RawQuery() != "q=1" {
			w.WriteString("the view is wrong") // pipelinedRound wants plainBody
			return true
		}
		w.AddHeader("Content-Type", "text/plain")
		w.Write(plainBody)
		return true
	})
	modes(t, func(t *testing.T, inline bool) {
		s := &Server{Inline: inline, Handler: h, ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute}
		addr := serve(t, s, sluice.WithNumEventLoop(1))
		for _, depth := range []int{1, 16} {
			got := loopAllocs(t, addr, depth, head.String())
			require.Zero(t, got, "heap allocations per request, %d pipelined", depth)
		}
	})
}
