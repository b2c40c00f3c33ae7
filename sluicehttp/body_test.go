package sluicehttp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChunkedUpload sends bodies of unknown length with Go's client,
// which chunks them, small and large, and checks that the handler reads
// every byte, with the trailers sent after them.
func TestChunkedUpload(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			echoHandler(w, r)
			fmt.Fprintf(w, " trailer=%s", r.Trailer.Get("X-Check"))
		})})
		c := client(t)
		for _, size := range []int{0, 1, 1000, 300 << 10} {
			if inline && size > inlineBodyLimit {
				continue
			}
			data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
			pr, pw := io.Pipe()
			go func() {
				for p := data; len(p) > 0; {
					n := min(len(p), 7000)
					pw.Write(p[:n])
					p = p[n:]
				}
				pw.Close()
			}()
			req, err := http.NewRequest("PUT", "http://"+addr+"/up", pr)
			require.NoError(t, err)
			req.Trailer = http.Header{"X-Check": nil}
			req.Trailer.Set("X-Check", "done")
			resp, err := c.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, fmt.Sprintf("PUT /up %d %s trailer=done", size, sum(data)), string(b))
		}
	})
}

// TestLargeUploadStreams checks that a body much larger than the window
// reaches a slow handler on the pool whole, while the server holds no
// more than about the window of it: the connection is not read while the
// handler is behind.
func TestLargeUploadStreams(t *testing.T) {
	const size = 64 << 20
	var peak atomic.Uint64
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := make([]byte, 32<<10)
		var n int
		for i := 0; ; i++ {
			k, err := r.Body.Read(h)
			n += k
			if i%256 == 0 {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak.Store(max(peak.Load(), m.HeapInuse))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		fmt.Fprint(w, n)
	})})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := client(t).Post("http://"+addr+"/", "application/octet-stream", io.LimitReader(zeros{}, size))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, fmt.Sprint(size), string(b))
	assert.Less(t, int64(peak.Load())-int64(before.HeapInuse), int64(size/4), "the body never sat in memory whole")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestExpectContinue checks 100 Continue: sent once the handler reads
// the body, not sent when it answers without reading it (and then the
// connection closes, as the client may or may not send the body).
func TestExpectContinue(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/reject" {
				http.Error(w, "no", http.StatusForbidden)
				return
			}
			echoHandler(w, r)
		})})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "POST /read HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		resp, _ := readResponse(t, br, "POST")
		require.Equal(t, http.StatusContinue, resp.StatusCode)
		io.WriteString(c, "hello")
		resp, body := readResponse(t, br, "POST")
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "POST /read 5 "+sum([]byte("hello")), body)

		if inline {
			return // an inline handler runs once the body has come: it cannot refuse it first
		}
		io.WriteString(c, "POST /reject HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		resp, _ = readResponse(t, br, "POST")
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.True(t, resp.Close)
	})
}

// TestBodyLimit checks MaxBodyBytes: a declared length past it is
// refused with 413 before the handler runs; a chunked body that grows
// past it fails its Read with *http.MaxBytesError, and is answered 413
// when the handler answers nothing; either way the connection closes.
func TestBodyLimit(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		ran := make(chan error, 10)
		addr := serve(t, &Server{Inline: inline, MaxBodyBytes: 1000, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			ran <- err
			if err == nil {
				io.WriteString(w, "ok")
			}
		})})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"+strings.Repeat("a", 1000))
		resp, body := readResponse(t, br, "POST")
		assert.Equal(t, "ok", body)
		require.NoError(t, <-ran)

		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n")
		resp, _ = readResponse(t, br, "POST")
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		assert.True(t, resp.Close)
		assert.Empty(t, ran, "the handler never ran")

		c = dial(t, addr)
		br = bufio.NewReader(c)
		chunk := strings.Repeat("b", 600)
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n%s\r\n258\r\n%s\r\n0\r\n\r\n", chunk, chunk)
		resp, _ = readResponse(t, br, "POST")
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		assert.True(t, resp.Close)
		var mb *http.MaxBytesError
		require.ErrorAs(t, <-ran, &mb)
		assert.Equal(t, int64(1000), mb.Limit)
	})
}

// TestStreamingAnswer checks a handler that streams a long answer with
// Flush: while its client reads nothing, the handler waits, having
// written no more than the connection's mark and the sockets' buffers
// hold, rather than queueing the answer whole; once the client reads,
// every byte arrives.
func TestStreamingAnswer(t *testing.T) {
	const size = 64 << 20
	chunk := bytes.Repeat([]byte("s"), 32<<10)
	var written atomic.Int64
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < size/len(chunk); i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
			if i%64 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	})})
	resp, err := client(t).Get("http://" + addr + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	waitFor(t, func() bool { return written.Load() > 0 }, func() string { return "the handler never wrote" })
	assert.True(t, holdsFor(300*time.Millisecond, func() bool { return written.Load() < size/4 }),
		"the handler wrote %d bytes to a client that reads nothing", written.Load())
	n, err := io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	assert.Equal(t, int64(size), n)
}

// TestHandlerLeavesBody checks that a handler that answers without
// reading its body keeps the connection when little is left (the server
// reads and drops it), and closes it when much is.
func TestHandlerLeavesBody(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(hello)})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 3000\r\n\r\n%s", strings.Repeat("x", 3000))
		resp, body := readResponse(t, br, "POST")
		assert.Equal(t, "hello /small", body)
		assert.False(t, resp.Close)
		io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
		_, body = readResponse(t, br, "GET")
		assert.Equal(t, "hello /next", body)

		if inline {
			return // inline bodies come whole before the handler runs
		}
		fmt.Fprintf(c, "POST /large HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 10<<20)
		resp, body = readResponse(t, br, "POST")
		assert.Equal(t, "hello /large", body)
		assert.True(t, resp.Close)
	})
}

// TestHandlerLeavesChunkedBody checks that a handler that answers
// without reading a chunked body, most of which comes after it returned,
// keeps the connection, as net/http's server does: the server drops the
// rest as it comes, up to 256 KiB, and answers the request pipelined
// behind it on the same connection. Past 256 KiB the connection closes
// after the answer.
func TestHandlerLeavesChunkedBody(t *testing.T) {
	returned := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { returned <- struct{}{} }()
		hello(w, r)
	})
	std := serveStd(t, &http.Server{Handler: h})
	ours := serve(t, &Server{Handler: h})
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 1000, strings.Repeat("x", 1000))
	for _, addr := range []string{std, ours} {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "POST /first HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk)
		<-returned
		var resp *http.Response
		var body string
		if addr == ours {
			// net/http reads the rest before it answers; this server
			// answers first, and drops the rest as it comes.
			resp, body = readResponse(t, br, "POST")
		}
		io.WriteString(c, strings.Repeat(chunk, 10)+"0\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n")
		if addr == std {
			resp, body = readResponse(t, br, "POST")
		}
		assert.Equal(t, "hello /first", body)
		assert.False(t, resp.Close, "the answer to the request whose body was left keeps the connection")
		_, body = readResponse(t, br, "GET")
		<-returned
		assert.Equal(t, "hello /second", body)
	}

	// More than the server will drop: the connection closes after the answer.
	c := dial(t, ours)
	br := bufio.NewReader(c)
	io.WriteString(c, "POST /large HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	<-returned
	_, body := readResponse(t, br, "POST")
	assert.Equal(t, "hello /large", body)
	go io.WriteString(c, strings.Repeat(chunk, 300)+"0\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n")
	_, err := br.ReadByte()
	assert.Error(t, err, "nothing answers what follows a body larger than the server drops")
}

// TestBrokenChunkedBody checks that a body whose chunked framing breaks
// fails the handler's Read, and the connection closes after the answer:
// what follows on it cannot be taken for a request.
func TestBrokenChunkedBody(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: echoHandler})
		c := dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := readResponse(t, br, "POST")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, body, "malformed chunked encoding")
		_, err := br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "nothing answers the smuggled request")
	})
}

// TestPipelinedAfterStreamedBody checks that requests pipelined behind
// one whose body is still coming are answered, in order, once it is.
func TestPipelinedAfterStreamedBody(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		started := make(chan struct{}, 1)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case started <- struct{}{}:
			default:
			}
			echoHandler(w, r)
		})})
		c := dial(t, addr)
		io.WriteString(c, "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello")
		if !inline {
			<-started // the body's rest comes once its handler runs
		}
		io.WriteString(c, "world"+"GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		_, body := readResponse(t, br, "POST")
		assert.Equal(t, "POST /first 10 "+sum([]byte("helloworld")), body)
		_, body = readResponse(t, br, "GET")
		assert.Equal(t, "GET /second 0 "+sum(nil), body)
	})
}

// TestInlineBodyLimit checks that an inline handler's body, held whole,
// is bounded at 1 MiB when MaxBodyBytes is not set.
func TestInlineBodyLimit(t *testing.T) {
	addr := serve(t, &Server{Inline: true, Handler: echoHandler})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	go func() {
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := strings.Repeat("c", 64<<10)
		for range 20 {
			if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return
			}
		}
		io.WriteString(c, "0\r\n\r\n")
	}()
	resp, body := readResponse(t, br, "POST")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "the handler's Read failed")
	assert.Contains(t, body, "request body too large")
	assert.True(t, resp.Close)
}

// TestRefusedWhileSending checks that a client still sending a body the
// server refused (413) reads the refusal: the server's close lingers
// rather than resetting what it sent.
func TestRefusedWhileSending(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, MaxBodyBytes: 1000, Handler: echoHandler})
		c := dial(t, addr)
		go func() {
			fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 4<<20)
			c.Write(bytes.Repeat([]byte("z"), 4<<20))
		}()
		resp, _ := readResponse(t, bufio.NewReader(c), "POST")
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		assert.True(t, resp.Close)
	})
}

// TestBodyCutBeforeItsTurn checks that a client that finishes sending
// before the server reached its request's body (behind a full run of
// pipelined requests) has that body fail as cut short, as net/http's
// handler sees it (io.ErrUnexpectedEOF), rather than wait for bytes that
// never come, and that the connection closes after the answer.
func TestBodyCutBeforeItsTurn(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %q cut=%v", r.URL.Path, b, err != nil)
	})
	servers := serveTrio(t, &http.Server{Handler: h}, func(bool) *Server { return &Server{Handler: h} })
	for _, addr := range []string{servers.std, servers.pooled, servers.inline} {
		for _, body := range []string{
			"Content-Length: 10\r\n\r\nabc",
			"Transfer-Encoding: chunked\r\n\r\n5\r\nab",
		} {
			c, err := sendAndFinish(addr, strings.Repeat("GET /p HTTP/1.1\r\nHost: x\r\n\r\n", maxRun)+
				"POST /body HTTP/1.1\r\nHost: x\r\n"+body)
			require.NoError(t, err)
			br := bufio.NewReader(c)
			for range maxRun {
				readResponse(t, br, "GET")
			}
			_, got := readResponse(t, br, "POST")
			assert.Equal(t, `/body "ab" cut=true`, strings.Replace(got, `"abc"`, `"ab"`, 1), "server %s (net/http's is %s)", addr, servers.std)
			_, err = br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "server %s", addr)
			c.Close()
		}
	}
}
