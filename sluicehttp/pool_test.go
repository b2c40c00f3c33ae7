//go:build !sluice_std

// The development backend (sluice_std) serves each connection's reads
// from a goroutine of its own, whose turns are not the pollers': this
// holds the pollers' loops.

package sluicehttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// TestPoolGoroutinesStayFew checks that a loop whose turns bring hundreds
// of requests at once hands them to a few dozen of the pool's goroutines,
// reused, rather than to one each: it yields to them every yieldEvery
// hand-offs. Five hundred connections each send a request, round after
// round, on one loop and one P.
func TestPoolGoroutinesStayFew(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := &Server{Handler: http.HandlerFunc(hello)}
	addr := serve(t, s, sluice.WithNumEventLoop(1))
	const conns = 500
	cs := make([]net.Conn, conns)
	brs := make([]*bufio.Reader, conns)
	for i := range cs {
		cs[i] = dial(t, addr)
		brs[i] = bufio.NewReader(cs[i])
	}
	most := 0
	for range 20 {
		for _, c := range cs {
			_, err := io.WriteString(c, "GET /few HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
		}
		for _, br := range brs {
			_, body := readResponse(t, br, http.MethodGet)
			require.Equal(t, "hello /few", body)
		}
		most = max(most, s.Pool.Running())
	}
	t.Logf("at most %d of the pool's goroutines for %d connections", most, conns)
	assert.LessOrEqual(t, most, 4*yieldEvery, "the pool's goroutines")
}
