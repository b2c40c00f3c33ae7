// The development backend (sluice_std) allocates in the engine itself,
// for each read and write: the budget holds on the pollers.

//go:build !sluice_std

package sluicehttp

import (
	"strings"
	"testing"

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
