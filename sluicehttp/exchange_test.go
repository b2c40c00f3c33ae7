package sluicehttp

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/pool"
)

// TestExchangeKeepsBuffers checks what an exchange keeps of the output
// buffers its answers were written in (exchange.kept) over a real
// connection, on the pool and inline: after answers small and past
// maxKeptOut, at most its two buffers, empty, none bigger than that, so
// that the exchanges a loop keeps hold a bounded amount of memory; and
// every answer whole and its own, whichever buffer it was written in.
// Which buffers the shared pool hands out depends on the tests before:
// TestExchangeKeepsSmallBuffers holds the keeping itself.
func TestExchangeKeepsBuffers(t *testing.T) {
	big := strings.Repeat("b", 4*maxKeptOut)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, "small "+r.URL.Path)
	})
	modes(t, func(t *testing.T, inline bool) {
		s := &Server{Inline: inline, Handler: h}
		c, ls := serveOneLoop(t, s)
		// kept returns the capacities of the buffers the loop's spare
		// exchanges keep, and how many exchanges it has.
		kept := func() (caps []int, spares int) {
			ch := make(chan struct{})
			require.NoError(t, ls.loop.Execute(func() {
				for _, x := range ls.spares {
					for _, b := range x.kept[:x.nkept] {
						require.Empty(t, b.B, "a kept buffer holds bytes")
						caps = append(caps, cap(b.B))
					}
				}
				spares = len(ls.spares)
				close(ch)
			}))
			<-ch
			return caps, spares
		}
		br := bufio.NewReader(c)
		ask := func(path, want string) {
			_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
			_, body := readResponse(t, br, http.MethodGet)
			require.Equal(t, want, body)
		}
		for i := range 4 {
			path := "/" + strings.Repeat("p", i)
			ask(path, "small "+path)
		}
		caps, spares := kept()
		require.Equal(t, 1, spares, "exchanges kept by the loop")
		require.LessOrEqual(t, len(caps), len(exchange{}.kept), "buffers kept")
		for range 3 {
			ask("/big", big)
			ask("/after", "small /after")
		}
		caps, _ = kept()
		for _, n := range caps {
			require.LessOrEqual(t, n, maxKeptOut, "a kept buffer's capacity")
		}
	})
}

// TestExchangeKeepsSmallBuffers checks putBuf and getBuf: an exchange
// keeps two buffers of at most maxKeptOut, emptied, and hands them out
// again before it takes one from the pool; a bigger one, or a third, goes
// back to the pool.
func TestExchangeKeepsSmallBuffers(t *testing.T) {
	x := &exchange{}
	small := func() *pool.Buffer { return &pool.Buffer{B: append(make([]byte, 0, 64), "answer"...)} }
	a, b, c := small(), small(), small()
	x.putBuf(a)
	x.putBuf(b)
	x.putBuf(c)
	x.putBuf(&pool.Buffer{B: make([]byte, 0, maxKeptOut+1)})
	require.Equal(t, 2, x.nkept)
	require.Same(t, b, x.getBuf())
	require.Same(t, a, x.getBuf())
	require.Empty(t, a.B)
	require.Empty(t, b.B)
	x.putBuf(&pool.Buffer{B: make([]byte, 0, maxKeptOut+1)})
	require.Zero(t, x.nkept, "a buffer past maxKeptOut kept")
	require.NotNil(t, x.getBuf(), "the pool's, with none kept")
}
