package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/codec"
)

// errWrongAnswer is the client's error for an answer that does not match
// its request.
var errWrongAnswer = errors.New("wrong answer")

// clientConfig is what the client's flags set.
type clientConfig struct {
	addr     string
	requests int
	conns    int
	size     int // payload bytes per request
}

// report is what a client run saw.
type report struct {
	answered int64 // requests answered, every answer checked
	shed     int64 // requests the server shed
	elapsed  time.Duration
}

func (r report) String() string {
	n := r.answered + r.shed
	return fmt.Sprintf("%d requests in %v: %d answered, %d shed; %.0f requests/s",
		n, r.elapsed.Round(time.Millisecond), r.answered, r.shed, float64(n)/r.elapsed.Seconds())
}

// load is one client run, shared by its connections.
type load struct {
	cfg      clientConfig
	issued   atomic.Int64
	answered atomic.Int64
	shed     atomic.Int64
}

// runClient sends cfg.requests requests over cfg.conns connections, each
// keeping one request in flight, and checks every answer. It stops at the
// first error, and returns it with what it saw until then.
func runClient(ctx context.Context, cfg clientConfig) (report, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l := &load{cfg: cfg}
	start := time.Now()
	var wg sync.WaitGroup
	for range max(cfg.conns, 1) {
		wg.Go(func() {
			if err := l.session(ctx); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	r := report{answered: l.answered.Load(), shed: l.shed.Load(), elapsed: time.Since(start)}
	return r, context.Cause(ctx)
}

// session sends requests over one connection, one at a time, until the run
// has issued them all.
func (l *load) session(ctx context.Context) error {
	network, address := splitAddr(l.cfg.addr)
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Closing the connection when ctx ends unblocks its reads and writes.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	framing := codec.LengthField{Strip: 4}
	answers := frameReader{conn: conn, framing: framing, chunk: make([]byte, 64<<10)}
	var req []byte
	var wire bytes.Buffer
	for i := l.issued.Add(1); i <= int64(l.cfg.requests); i = l.issued.Add(1) {
		req = payload(req[:0], i, l.cfg.size)
		wire.Reset()
		if err := framing.Encode(&wire, req); err != nil {
			return err
		}
		if _, err := conn.Write(wire.Bytes()); err != nil {
			return fmt.Errorf("sending request %d: %w", i, err)
		}
		ans, err := answers.next()
		if err != nil {
			return fmt.Errorf("reading the answer to request %d: %w", i, err)
		}
		if err := l.check(ans, req); err != nil {
			return err
		}
	}
	return nil
}

// check counts ans, the answer to req, as answered or shed, or returns
// errWrongAnswer.
func (l *load) check(ans, req []byte) error {
	switch {
	case len(ans) == 0:
	case ans[0] == statusOK && bytes.Equal(ans[1:], bytes.ToUpper(req)):
		l.answered.Add(1)
		return nil
	case ans[0] == statusShed:
		l.shed.Add(1)
		return nil
	}
	return fmt.Errorf("%w: %.40q to %.40q", errWrongAnswer, ans, req)
}

// frameReader reads frames from a connection.
type frameReader struct {
	conn    net.Conn
	framing codec.LengthField
	in      codec.Buffer
	chunk   []byte // what each read fills
}

// next returns the next frame, valid until the next call.
func (r *frameReader) next() ([]byte, error) {
	for {
		frame, err := r.framing.Decode(&r.in)
		if err != codec.ErrIncomplete {
			return frame, err
		}
		n, err := r.conn.Read(r.chunk)
		if err != nil {
			return nil, err
		}
		_, _ = r.in.Write(r.chunk[:n])
	}
}

// payload appends the payload of request i: size lower-case letters,
// starting from one that depends on i.
func payload(dst []byte, i int64, size int) []byte {
	for j := range int64(size) {
		dst = append(dst, 'a'+byte((i+j)%26))
	}
	return dst
}

// splitAddr splits an address as -addr gives it, such as
// "tcp://127.0.0.1:9001", into what net.Dial takes.
func splitAddr(addr string) (network, address string) {
	network, address, ok := strings.Cut(addr, "://")
	if !ok {
		return "tcp", addr
	}
	return network, address
}
