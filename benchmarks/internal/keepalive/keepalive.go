// Package keepalive holds idle HTTP/1.1 keep-alive connections open to a
// server, each having made one request and read its answer, so that the
// benchmarks can read what the server keeps for each while it waits for
// the next request. It runs in its own process (cmd/httpidle), apart from
// the server, since a process may hold only so many descriptors.
package keepalive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/benchmarks/loadgen"
)

// DefaultTimeout is Request.Timeout's default.
const DefaultTimeout = 10 * time.Second

// A Request is what each connection asks and the answer it must get.
type Request struct {
	Addr string // host:port
	Path string // the request's path
	Want string // the body of the answer, whose status must be 200
	// Timeout bounds each connection's dial, request and answer; zero
	// means DefaultTimeout.
	Timeout time.Duration
}

func (r Request) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

// Open opens n connections to r.Addr, parallel at a time, each sending
// one GET r.Path and reading its answer, and returns those it holds open,
// with a count of what went wrong: dials that failed (Dial), answers that
// were not 200 with r.Want as their body, or that were not HTTP
// (Mismatch), or that asked to close the connection (Mismatch: it would
// not stay idle), connections closed before their answer (Closed),
// answers not in within r.Timeout (Timeout). A connection that went wrong
// is not held.
func Open(r Request, n, parallel int) ([]net.Conn, loadgen.Errors) {
	var (
		mu   sync.Mutex
		held = make([]net.Conn, 0, n)
		errs loadgen.Errors
		wg   sync.WaitGroup
	)
	req := []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", r.Path, r.Addr))
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range min(parallel, n) {
		wg.Go(func() {
			for range next {
				c, e := open(r, req)
				mu.Lock()
				errs.Add(e)
				if c != nil {
					held = append(held, c)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return held, errs
}

// open dials one connection, asks req on it and checks the answer.
func open(r Request, req []byte) (net.Conn, loadgen.Errors) {
	c, err := net.DialTimeout("tcp", r.Addr, r.timeout())
	if err != nil {
		return nil, loadgen.Errors{Dial: 1}
	}
	c.SetDeadline(time.Now().Add(r.timeout()))
	e := ask(c, r, req)
	if e.Total() > 0 {
		c.Close()
		return nil, e
	}
	c.SetDeadline(time.Time{})
	return c, e
}

// ask sends req on c and reads and checks its answer.
func ask(c net.Conn, r Request, req []byte) loadgen.Errors {
	if _, err := c.Write(req); err != nil {
		return failed(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return failed(err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return failed(err)
	}
	if res.StatusCode != http.StatusOK || !bytes.Equal(body, []byte(r.Want)) || res.Close {
		return loadgen.Errors{Mismatch: 1}
	}
	return loadgen.Errors{}
}

// failed classifies an error reading or writing a connection.
func failed(err error) loadgen.Errors {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return loadgen.Errors{Timeout: 1}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return loadgen.Errors{Closed: 1}
	}
	return loadgen.Errors{Mismatch: 1} // not HTTP
}
