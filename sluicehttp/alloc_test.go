// The development backend (sluice_std) allocates in the engine itself,
// for each read and write: the budget holds on the pollers.

//go:build !sluice_std

package sluicehttp

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// plaintext answers as the TechEmpower plaintext test asks, with header
// values set as they are, never changed; /long with a body of 1,000
// bytes more, whose length has four digits.
var plaintext = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Server"] = plainServer
	h["Content-Type"] = plainType
	if r.URL.Path == "/long" {
		w.Write(longBody)
		return
	}
	w.Write(plainBody)
})

// plainRequest is a request as wrk sends it.
const plainRequest = "GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"

var (
	plainServer = []string{"Sluice"}
	plainType   = []string{"text/plain"}
	plainBody   = []byte("Hello, World!")
	longBody    = append([]byte("Hello, World!"), bytes.Repeat([]byte("."), 1000)...)
)

// heapPerRequest returns the heap allocations and bytes per request of a
// client that sends batches of depth pipelined requests over one
// connection and reads their answers, server and client in this process.
func heapPerRequest(t *testing.T, inline bool, depth int, head string) (allocs, size float64) {
	addr := serve(t, &Server{Inline: inline, Handler: plaintext}, sluice.WithNumEventLoop(1))
	round := pipelinedRound(t, addr, depth, head)
	runs := 2000 / depth
	allocs = testing.AllocsPerRun(runs, round) / float64(depth)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		round()
	}
	runtime.ReadMemStats(&after)
	return allocs, float64(after.TotalAlloc-before.TotalAlloc) / float64(runs*depth)
}

// pipelinedRound returns a round of a client over one connection to addr:
// it sends depth pipelined copies of head and reads their answers, each
// of which must be the plaintext one. The round is warmed up (pools,
// buffers) before it is returned.
func pipelinedRound(t *testing.T, addr string, depth int, head string) func() {
	c := dial(t, addr)
	req := bytes.Repeat([]byte(head), depth)
	// Every answer has the same length: learn it from the first.
	_, err := c.Write(req[:len(req)/depth])
	require.NoError(t, err)
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.Contains(t, string(buf[:n]), "Hello, World!")
	buf = make([]byte, n*depth)
	round := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		round()
	}
	return round
}

// maxAllocsPerRequest is what a plaintext request (its only field Host,
// as wrk sends it) costs the heap, on the pool or inline, alone or
// pipelined: the request with its answer's state and its head's copy (its
// strings point into it), its header map (one allocation: empty, since
// Host is not kept in it), and its answer's header map (two: never
// reused, since a handler may keep it past its return, and what it wrote
// there then must not reach another client). Its context, URL, header
// values and exchange cost none. Any other field costs one more, its
// map's room; a head longer than smallHead one more, its own copy.
const maxAllocsPerRequest = 4

// maxBytesPerRequest bounds the bytes those allocations take: the
// response in the 1,024-byte size class (TestResponseSizeClass), two
// empty maps of 48 bytes, and one map's room for eight fields, 352.
const maxBytesPerRequest = 1024 + 48 + 48 + 352

// TestRequestsAllocate holds the heap allocations of a plaintext request,
// and their bytes, over a real connection, one at a time and 16
// pipelined, with handlers on the pool and inline.
func TestRequestsAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what is put back")
	}
	modes(t, func(t *testing.T, inline bool) {
		for _, depth := range []int{1, 16} {
			allocs, size := heapPerRequest(t, inline, depth, plainRequest)
			t.Logf("depth %d: %.2f heap allocations, %.0f bytes per request", depth, allocs, size)
			require.LessOrEqual(t, allocs, float64(maxAllocsPerRequest), "heap allocations per request, %d pipelined", depth)
			// Tens of bytes of slack: a buffer pool's rare refill.
			require.LessOrEqual(t, size, float64(maxBytesPerRequest+64), "heap bytes per request, %d pipelined", depth)
		}
		long := "GET /plaintext HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("v", smallHead) + "\r\n\r\n"
		allocs, _ := heapPerRequest(t, inline, 1, long)
		t.Logf("a head of %d bytes: %.2f heap allocations per request", len(long), allocs)
		require.LessOrEqual(t, allocs, float64(maxAllocsPerRequest+2), "heap allocations per request with a long head")
		// The Content-Length the server writes costs nothing more with
		// more than two digits.
		allocs, _ = heapPerRequest(t, inline, 1, "GET /long HTTP/1.1\r\nHost: x\r\n\r\n")
		t.Logf("an answer of %d bytes: %.2f heap allocations per request", len(longBody), allocs)
		require.LessOrEqual(t, allocs, float64(maxAllocsPerRequest), "heap allocations per request with a long answer")
	})
}

// TestResponseSizeClass holds a response, which every request allocates,
// within the heap's 1,024-byte size class: an object of more than 512
// bytes that holds pointers carries an 8-byte header there, so one byte
// over 1,016 and it takes 1,152.
func TestResponseSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(response{}), uintptr(1024-8))
}
