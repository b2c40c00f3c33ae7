package sluicehttp

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoopHandlerOffered checks which requests ServeLoop is offered: each
// without a body, whatever its method (a Content-Length of zero, or none,
// is no body), and not one with a body (a Content-Length above zero, or
// Transfer-Encoding, even a chunked body that is empty), nor "OPTIONS *",
// which go to ServeHTTP; pipelined together, in order.
func TestLoopHandlerOffered(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			w.WriteString("loop " + r.Method() + " " + r.Target())
			return true
		})
		c := dial(t, serve(t, &Server{Handler: h, Inline: inline}))
		type want struct{ req, method, answer string }
		wants := []want{
			{"GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "GET", "loop GET /a"},
			{"POST /b HTTP/1.1\r\nHost: x\r\n\r\n", "POST", "loop POST /b"},
			{"POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 000\r\n\r\n", "POST", "loop POST /c"},
			{"DELETE /d HTTP/1.1\r\nHost: x\r\n\r\n", "DELETE", "loop DELETE /d"},
			{"OPTIONS /e HTTP/1.1\r\nHost: x\r\n\r\n", "OPTIONS", "loop OPTIONS /e"},
			{"HEAD /f HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD", ""},
			{"GET /g HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "GET", "hello /g"},
			{"POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "POST", "hello /h"},
			{"PUT /i HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "PUT", "hello /i"},
			// As net/http's, the server answers OPTIONS * itself.
			{"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", "OPTIONS", ""},
			{"GET /j HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET", "loop GET /j"},
		}
		var all strings.Builder
		for _, w := range wants {
			all.WriteString(w.req)
		}
		_, err := io.WriteString(c, all.String())
		require.NoError(t, err)
		br := bufio.NewReader(c)
		for _, w := range wants {
			resp, body := readResponse(t, br, w.method)
			assert.Equal(t, http.StatusOK, resp.StatusCode, w.req)
			assert.Equal(t, w.answer, body, w.req)
			if w.method == "HEAD" {
				assert.Equal(t, int64(len("loop HEAD /f")), resp.ContentLength, "HEAD is the loop's")
			}
		}
	})
}

// TestLoopResponseAnyOrder checks LoopResponse's calls in the orders an
// http.ResponseWriter would refuse: a status set after the body, set
// twice (the last one counts), and a header field added after the body
// all make the answer, since nothing goes out before ServeLoop returns.
func TestLoopResponseAnyOrder(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
			w.WriteString("body first")
			w.WriteHeader(http.StatusTeapot)
			w.AddHeader("X-After", "the body")
			w.WriteHeader(http.StatusAccepted)
			return true
		})
		c := dial(t, serve(t, &Server{Handler: h, Inline: inline}))
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, body := readResponse(t, bufio.NewReader(c), http.MethodGet)
		assert.Equal(t, http.StatusAccepted, resp.StatusCode)
		assert.Equal(t, "the body", resp.Header.Get("X-After"))
		assert.Equal(t, "body first", body)
	})
}
