package sluicehttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// idleConns is how many connections the memory test keeps open.
const idleConns = 2000

// heapWith returns the heap in use, after a collection, while idleConns
// clients are connected to the server start starts, each having done
// what client does with its connection. The clients live in this
// process too: a caller compares two such measures, whose clients cost
// the same. The server and the clients are gone when it returns.
func heapWith(t *testing.T, start func(t *testing.T) string, client func(c net.Conn)) (heap uint64) {
	t.Run("", func(t *testing.T) { // the server's cleanup runs at the subtest's end
		addr := start(t)
		conns := make([]net.Conn, 0, idleConns)
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range idleConns {
			c, err := net.DialTimeout("tcp", addr, deadline)
			require.NoError(t, err)
			conns = append(conns, c)
			client(c)
		}
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap = m.HeapInuse
	})
	return heap
}

// idleEngine is an engine whose handler does nothing.
type idleEngine struct{ sluice.BuiltinEventEngine }

// TestIdleConnectionMemory measures what an idle keep-alive connection
// costs this package beyond the engine's own connection: the heap with
// connections that have each had one request answered and wait for the
// next (with an idle timeout set, so that each holds a timer), against
// the heap with as many connections to an engine that does nothing. It
// must stay well under 1.4 KB.
func TestIdleConnectionMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	request := []byte("GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
	connected := func(net.Conn) {}
	answered := func(c net.Conn) {
		c.SetDeadline(time.Now().Add(deadline))
		_, err := c.Write(request)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
	}
	// The first engine and server of the process make what they make once
	// (pools, tables): a first round measures them, and is dropped.
	for round, inline := range []bool{false, true, false} {
		base := heapWith(t, func(t *testing.T) string {
			eng, err := sluice.Start(idleEngine{}, "tcp://127.0.0.1:0", sluice.WithPoller(testPoller), sluice.WithNumEventLoop(2))
			require.NoError(t, err)
			t.Cleanup(func() { eng.Stop(t.Context()) })
			return eng.Addrs()[0].String()
		}, connected)
		withHTTP := heapWith(t, func(t *testing.T) string {
			return serve(t, &Server{Inline: inline, IdleTimeout: time.Minute, Handler: http.HandlerFunc(hello)})
		}, answered)
		per := (int64(withHTTP) - int64(base)) / idleConns
		if round == 0 {
			continue
		}
		t.Logf("inline %v: heap per idle keep-alive connection beyond the engine's: %d bytes (%d connections)",
			inline, per, idleConns)
		assert.Less(t, per, int64(1024))
	}
}
