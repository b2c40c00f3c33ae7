package sluicehttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// taken is a connection a handler hijacked, handed to the test, with the
// writer that hijacked it: the handler has returned by the time the test
// uses it, as a handler that hands its connection to a goroutine does.
type taken struct {
	conn net.Conn
	rw   *bufio.ReadWriter
	w    http.ResponseWriter
}

// hijackers serves, with net/http's server and this package's (pool and
// inline), a handler that hijacks every connection and hands it to the
// test, and runs scenario against each: client is the client's end,
// conn the server's.
func hijackers(t *testing.T, scenario func(t *testing.T, client net.Conn, h taken)) {
	handler := func(ch chan taken) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if !assert.NoError(t, err) {
				return
			}
			ch <- taken{conn, rw, w}
		}
	}
	chans := map[string]chan taken{"std": make(chan taken, 1), "pool": make(chan taken, 1), "inline": make(chan taken, 1)}
	servers := serveTrio(t, &http.Server{Handler: handler(chans["std"])}, func(inline bool) *Server {
		if inline {
			return &Server{Handler: handler(chans["inline"])}
		}
		return &Server{Handler: handler(chans["pool"])}
	})
	for _, name := range []string{"std", "pool", "inline"} {
		addr := map[string]string{"std": servers.std, "pool": servers.pooled, "inline": servers.inline}[name]
		t.Run(name, func(t *testing.T) {
			client := dial(t, addr)
			_, err := io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
			var h taken
			select {
			case h = <-chans[name]:
			case <-time.After(deadline):
				t.Fatal("the handler did not hijack")
			}
			defer h.conn.Close()
			scenario(t, client, h)
		})
	}
}

// TestHijackedReadDeadline checks a hijacked connection's read deadline
// as a net.Conn's: a Read past it fails even with bytes waiting, and one
// already waiting fails once a deadline set meanwhile passes.
func TestHijackedReadDeadline(t *testing.T) {
	hijackers(t, func(t *testing.T, client net.Conn, h taken) {
		io.WriteString(client, "data")
		b := make([]byte, 1)
		_, err := io.ReadFull(h.conn, b)
		require.NoError(t, err)
		h.conn.SetReadDeadline(time.Now().Add(-time.Second))
		_, err = h.conn.Read(b)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "a Read past the deadline, with bytes waiting")
		h.conn.SetReadDeadline(time.Now().Add(deadline))
		got := make([]byte, 3)
		_, err = io.ReadFull(h.conn, got)
		require.NoError(t, err)
		assert.Equal(t, "ata", string(got))

		errs := make(chan error, 1)
		go func() {
			_, err := h.conn.Read(b)
			errs <- err
		}()
		assert.True(t, holdsFor(20*time.Millisecond, func() bool { return len(errs) == 0 }))
		h.conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		assert.ErrorIs(t, <-errs, os.ErrDeadlineExceeded, "a Read waiting as the deadline is set")
	})
}

// TestHijackedWriteDeadline checks that a Write to a client that reads
// nothing waits, and fails once a write deadline set while it waits
// passes, as a net.Conn's does; the connection's output stays bounded
// meanwhile.
func TestHijackedWriteDeadline(t *testing.T) {
	hijackers(t, func(t *testing.T, client net.Conn, h taken) {
		errs := blockWriter(t, h.conn)
		require.NoError(t, h.conn.SetWriteDeadline(time.Now().Add(20*time.Millisecond)))
		select {
		case err := <-errs:
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		case <-time.After(deadline):
			t.Fatal("a Write waiting as its deadline was set still waits")
		}
	})
}

// TestHijackedCloseEndsWrite checks that Close fails a Write waiting on
// a client that reads nothing, as a net.Conn's Close does.
func TestHijackedCloseEndsWrite(t *testing.T) {
	hijackers(t, func(t *testing.T, client net.Conn, h taken) {
		errs := blockWriter(t, h.conn)
		require.NoError(t, h.conn.Close())
		select {
		case err := <-errs:
			assert.ErrorIs(t, err, net.ErrClosed)
		case <-time.After(deadline):
			t.Fatal("a Write waiting as its connection closed still waits")
		}
	})
}

// blockWriter starts a goroutine that writes to conn, whose client reads
// nothing, until a Write fails, and returns once it waits; its error
// comes on the channel. The output the server holds for the client
// meanwhile is checked to stay under the connection's mark and a write.
func blockWriter(t *testing.T, conn net.Conn) <-chan error {
	var written atomic.Int64
	errs := make(chan error, 1)
	go func() {
		chunk := make([]byte, 64<<10)
		for {
			n, err := conn.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	// It waits once what it wrote stops growing.
	waitFor(t, func() bool {
		n := written.Load()
		return n > 0 && holdsFor(100*time.Millisecond, func() bool { return written.Load() == n })
	}, func() string { return "the writer never waited" })
	if hj, ok := conn.(*hijackConn); ok {
		assert.LessOrEqual(t, hj.c.OutboundQueued(), DefaultWriteBufferSize+2*postSize,
			"output queued for a client that reads nothing")
	}
	return errs
}

// TestHijackedControllerDeadlines checks that http.ResponseController's
// deadlines, set after Hijack, even by a goroutine once the handler
// returned, are the hijacked connection's, as with net/http's server.
func TestHijackedControllerDeadlines(t *testing.T) {
	hijackers(t, func(t *testing.T, client net.Conn, h taken) {
		rc := http.NewResponseController(h.w)
		require.NoError(t, rc.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
		_, err := h.conn.Read(make([]byte, 1))
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.NoError(t, rc.SetReadDeadline(time.Time{}))
		require.NoError(t, rc.SetWriteDeadline(time.Now().Add(-time.Second)))
		_, err = h.conn.Write([]byte("x"))
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	})
}

// TestHijackedClose checks Close as a net.Conn's: the client sees the
// end of stream, a Read waiting fails, and so do Read, Write and Close
// after it, with errors that match net.ErrClosed.
func TestHijackedClose(t *testing.T) {
	hijackers(t, func(t *testing.T, client net.Conn, h taken) {
		errs := make(chan error, 1)
		go func() {
			_, err := h.conn.Read(make([]byte, 1))
			errs <- err
		}()
		assert.True(t, holdsFor(20*time.Millisecond, func() bool { return len(errs) == 0 }))
		require.NoError(t, h.conn.Close())
		assert.ErrorIs(t, <-errs, net.ErrClosed, "the Read waiting")
		_, err := h.conn.Read(make([]byte, 1))
		assert.ErrorIs(t, err, net.ErrClosed)
		_, err = h.conn.Write([]byte("x"))
		assert.ErrorIs(t, err, net.ErrClosed)
		assert.ErrorIs(t, h.conn.Close(), net.ErrClosed)
		n, err := client.Read(make([]byte, 1))
		assert.Zero(t, n)
		assert.ErrorIs(t, err, io.EOF)
	})
}

// TestHijackedPeerEnds checks what a hijacked connection's Read returns
// as its client goes: io.EOF after every byte sent, when it finished
// cleanly; the reset, when it reset the connection, which a holder must
// not take for a clean end.
func TestHijackedPeerEnds(t *testing.T) {
	t.Run("finish", func(t *testing.T) {
		hijackers(t, func(t *testing.T, client net.Conn, h taken) {
			io.WriteString(client, "last words")
			client.(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(h.conn)
			assert.NoError(t, err)
			assert.Equal(t, "last words", string(got))
		})
	})
	t.Run("reset", func(t *testing.T) {
		hijackers(t, func(t *testing.T, client net.Conn, h taken) {
			client.(*net.TCPConn).SetLinger(0)
			client.Close()
			_, err := io.ReadAll(h.conn)
			assert.ErrorIs(t, err, syscall.ECONNRESET)
		})
	})
}

// TestHijackTwice checks that a second Hijack fails with
// http.ErrHijacked, and that one after WriteHeader and Flush hands over
// a connection that works, as with net/http's server.
func TestHijackTwice(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			fmt.Fprintf(w, "first: %v", err)
			return
		}
		defer conn.Close()
		_, _, err = http.NewResponseController(w).Hijack()
		fmt.Fprintf(conn, "|second: %v|", err)
		_, err = w.Write([]byte("x"))
		fmt.Fprintf(conn, "write: %v|", err)
	})
	servers := serveTrio(t, &http.Server{Handler: h}, func(bool) *Server { return &Server{Handler: h} })
	for _, addr := range []string{servers.std, servers.pooled, servers.inline} {
		c := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		got, err := io.ReadAll(c)
		require.NoError(t, err)
		_, rest, ok := strings.Cut(string(got), "\r\n\r\n")
		assert.True(t, ok)
		assert.Equal(t, "|second: http: connection has been hijacked|write: http: connection has been hijacked|", rest, addr)
	}
}

// TestHijackAfterReturn checks that Hijack called by a goroutine that
// kept the writer after its handler returned panics, with net/http's
// words, and leaves the connection to the server, which still serves it.
func TestHijackAfterReturn(t *testing.T) {
	kept := make(chan http.ResponseWriter, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/keep" {
			kept <- w
		}
		io.WriteString(w, "answered "+r.URL.Path)
	})
	servers := serveTrio(t, &http.Server{Handler: h}, func(bool) *Server { return &Server{Handler: h} })
	for _, addr := range []string{servers.std, servers.pooled, servers.inline} {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /keep HTTP/1.1\r\nHost: x\r\n\r\n")
		_, body := readResponse(t, br, "GET")
		assert.Equal(t, "answered /keep", body)
		w := <-kept
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			w.(http.Hijacker).Hijack()
		}()
		assert.Equal(t, "net/http: Hijack called after ServeHTTP finished", recovered, addr)
		io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
		_, body = readResponse(t, br, "GET")
		assert.Equal(t, "answered /next", body)
	}
}

// TestHijackReaderStartsEmpty checks the package doc's difference from
// net/http: the bufio.Reader Hijack returns holds nothing, and what the
// client pipelined behind the request, though the server had read it,
// comes from the net.Conn itself.
func TestHijackReaderStartsEmpty(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		type result struct {
			buffered int
			got      string
		}
		results := make(chan result, 1)
		const after = "GET /next HTTP/1.1\r\nHost: x\r\n\r\nmore"
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if !assert.NoError(t, err) {
				return
			}
			buffered := rw.Reader.Buffered()
			go func() {
				defer conn.Close()
				got := make([]byte, len(after))
				io.ReadFull(conn, got)
				results <- result{buffered, string(got)}
			}()
		})})
		c := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"+after)
		r := <-results
		assert.Zero(t, r.buffered)
		assert.Equal(t, after, r.got)
	})
}

// TestHijackedAfterStop checks that a hijacked connection fails its
// holder's reads and writes once the engine stops, with errors that
// match net.ErrClosed, rather than look like the client's clean end.
func TestHijackedAfterStop(t *testing.T) {
	for _, forced := range []bool{false, true} {
		t.Run(map[bool]string{false: "graceful", true: "forced"}[forced], func(t *testing.T) {
			hijackedAfterStop(t, forced)
		})
	}
}

// hijackedAfterStop is TestHijackedAfterStop for a Stop that lets
// connections close, or, forced, one whose time is up at once, which
// resets them.
func hijackedAfterStop(t *testing.T, forced bool) {
	modes(t, func(t *testing.T, inline bool) {
		ch := make(chan net.Conn, 1)
		s := &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if assert.NoError(t, err) {
				ch <- conn
			}
		})}
		addr := serve(t, s)
		c := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		conn := <-ch
		defer conn.Close()
		errs := make(chan error, 1)
		go func() {
			_, err := conn.Read(make([]byte, 1))
			errs <- err
		}()
		s.mu.Lock()
		eng := s.eng
		s.mu.Unlock()
		if forced {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			eng.Stop(ctx) // its time is up: it resets what is open
		} else {
			require.NoError(t, eng.Stop(t.Context()))
		}
		err := <-errs
		assert.ErrorIs(t, err, net.ErrClosed, "a Read waiting as the engine stops")
		_, err = conn.Read(make([]byte, 1))
		assert.ErrorIs(t, err, net.ErrClosed)
		_, err = conn.Write([]byte("x"))
		assert.ErrorIs(t, err, net.ErrClosed)
	})
}

// TestHijackedInlineWriterBounded checks that an inline handler, which
// cannot wait on its own loop, writing to the connection it hijacked
// more than its client reads, is refused past sluice.WithMaxOutbound
// rather than fill memory.
func TestHijackedInlineWriterBounded(t *testing.T) {
	const limit = 1 << 20
	result := make(chan error, 1)
	queued := make(chan int, 1)
	addr := serve(t, &Server{Inline: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if !assert.NoError(t, err) {
			return
		}
		chunk := make([]byte, 64<<10)
		for range 4 * limit / len(chunk) {
			if _, err = conn.Write(chunk); err != nil {
				break
			}
		}
		queued <- conn.(*hijackConn).c.OutboundQueued()
		result <- err
		conn.Close()
	})}, sluice.WithMaxOutbound(limit))
	c := dial(t, addr)
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.ErrorIs(t, <-result, sluice.ErrOutboundFull)
	assert.LessOrEqual(t, <-queued, limit)
}
