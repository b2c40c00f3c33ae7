package sluicehttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShutdown checks Shutdown: connections waiting for a request close
// at once, a request in flight is answered (with Connection: close) and
// its connection then closes, and Shutdown returns after that.
func TestShutdown(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				started <- struct{}{}
				<-release
			}
			hello(w, r)
		})}
		if inline {
			s.Handler = http.HandlerFunc(hello) // an inline handler may not wait
		}
		s.Inline = inline
		addr := serve(t, s)

		idle := dial(t, addr)
		io.WriteString(idle, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
		ibr := bufio.NewReader(idle)
		readResponse(t, ibr, "GET")

		var busy net.Conn
		if !inline {
			busy = dial(t, addr)
			io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			<-started
		}

		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			done <- s.Shutdown(ctx)
		}()
		_, err := ibr.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "the idle connection closes")
		idle.Close() // as clients do: the server's lingering close ends
		if !inline {
			select {
			case err := <-done:
				t.Fatalf("Shutdown returned with a request in flight: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			close(release)
			br := bufio.NewReader(busy)
			resp, body := readResponse(t, br, "GET")
			assert.Equal(t, "hello /slow", body)
			assert.True(t, resp.Close)
			busy.Close()
		}
		require.NoError(t, <-done)
	})
}
