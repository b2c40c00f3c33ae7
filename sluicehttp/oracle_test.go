package sluicehttp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The oracle: net/http's own server, fed one input in memory, and this
// package's parser fed the same, each describing the first request it
// reads as the same text, so that a test can say they agree.

// describe writes what a handler sees of r, its URL field for field and
// its body read to the end: the same text from both servers means both
// framed the request alike.
func describe(w io.Writer, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fmt.Fprintf(w, "body error\n")
		return
	}
	fmt.Fprintf(w, "%s %q %q %s %d.%d host=%q close=%v\n", r.Method, r.RequestURI, r.URL.String(),
		r.Proto, r.ProtoMajor, r.ProtoMinor, r.Host, r.Close)
	u := r.URL
	fmt.Fprintf(w, "url scheme=%q opaque=%q user=%v host=%q path=%q rawpath=%q forcequery=%v query=%q fragment=%q\n",
		u.Scheme, u.Opaque, u.User, u.Host, u.Path, u.RawPath, u.ForceQuery, u.RawQuery, u.Fragment)
	fmt.Fprintf(w, "length=%d te=%q\n", r.ContentLength, r.TransferEncoding)
	writeSorted(w, "header", r.Header)
	writeSorted(w, "trailer", r.Trailer)
	fmt.Fprintf(w, "body=%q\n", body)
}

func writeSorted(w io.Writer, what string, h http.Header) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		fmt.Fprintf(w, "%s %q=%q\n", what, k, h[k])
	}
}

// describeHandler answers each request with its description, or 400 when
// its body cannot be read.
var describeHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	describe(&b, r)
	if b.String() == "body error\n" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Description", strconv.Quote(b.String())) // HEAD's answer has no body
	io.WriteString(w, b.String())
})

// netHTTPAnswer returns what net/http's server answers to raw, followed by
// the end of the stream: "status N" and, for a request it read, the
// description, or for one it refused, the body that says why; "closed"
// when it answers nothing.
func netHTTPAnswer(raw []byte) string {
	c := &memConn{in: bytes.NewReader(raw), closed: make(chan struct{})}
	srv := &http.Server{Handler: describeHandler, ErrorLog: log.New(io.Discard, "", 0)}
	ln := &oneConnListener{c: c}
	go srv.Serve(ln)
	<-c.closed
	srv.Close()
	return answerFrom(bufio.NewReader(bytes.NewReader(c.out.Bytes())))
}

// answerFrom reads the first final answer from br and describes it:
// "status N", the request's description for a 200 or the body of any
// other, "closed" for none.
func answerFrom(br *bufio.Reader) string {
	resp, err := http.ReadResponse(br, nil)
	for err == nil && resp.StatusCode < 200 { // 100 Continue
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		return "closed"
	}
	if resp.StatusCode != http.StatusOK {
		// The server's own refusal says why in its body: which of its
		// checks refused the request.
		why, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return fmt.Sprintf("status %d %q", resp.StatusCode, why)
	}
	resp.Body.Close()
	desc, _ := strconv.Unquote(resp.Header.Get("X-Description"))
	return fmt.Sprintf("status %d\n%s", resp.StatusCode, desc)
}

// ourAnswer returns what this package's parser makes of raw, followed by
// the end of the stream, in netHTTPAnswer's terms.
func ourAnswer(raw []byte) string {
	const limit = http.DefaultMaxHeaderBytes + 4096 // net/http's bound on a head
	end := headEnd(raw, 0)
	switch {
	case end > limit || end < 0 && len(raw) > limit:
		return refusal(errTooLarge)
	case end < 0 && len(raw) == 0:
		return "closed"
	case end < 0:
		return refusal(errBadRequest) // cut short by the end of the stream
	}
	b := append([]byte(nil), raw[:end]...)
	r := new(http.Request)
	var h head
	if e := parseHead(b, r, &h, nil); e != nil {
		return refusal(e)
	}
	if r.Method == "OPTIONS" && r.RequestURI == "*" {
		return fmt.Sprintf("status %d\n", http.StatusOK) // net/http's own answer, no handler's
	}
	var d decoder
	d.chunked, d.left = h.chunked, uint64(max(h.length, 0))
	data, _, err := d.decode(raw[end:], nil, 1<<30)
	if err == nil && !d.done() {
		err = errBodyCut
	}
	r.Body = io.NopCloser(&errReader{data: data, err: err})
	if d.trailer != nil {
		r.Trailer = mergeTrailer(r.Trailer, d.trailer)
	}
	var sb strings.Builder
	describe(&sb, r)
	if sb.String() == "body error\n" {
		return fmt.Sprintf("status %d %q", http.StatusBadRequest, "") // describeHandler's
	}
	return fmt.Sprintf("status %d\n%s", http.StatusOK, sb.String())
}

// errReader returns data, then err (io.EOF when nil).
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// memConn is a connection whose peer sent in and then finished; what the
// server writes is kept in out.
type memConn struct {
	in     *bytes.Reader
	mu     sync.Mutex
	out    bytes.Buffer
	once   sync.Once
	closed chan struct{}
}

func (c *memConn) Read(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	return c.in.Read(p)
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *memConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener accepts c once, then blocks until closed.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	done := l.done
	l.mu.Unlock()
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-done
	return nil, errors.New("listener closed")
}

func (l *oneConnListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// refusal describes the answer errorResponse makes of e as answerFrom
// does: its status and its body.
func refusal(e *reqError) string {
	_, body, _ := strings.Cut(string(errorResponse(e)), "\r\n\r\n")
	return fmt.Sprintf("status %d %q", e.code, body)
}
