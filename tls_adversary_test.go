//go:build unix

package sluice

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyUpdateFlood has a TLS 1.3 peer of addr, which never reads, send
// KeyUpdates that each ask for one in return, 16 at a time (crypto/tls's
// bound on records that carry no data) between one-byte data records,
// until it has sent total bytes or the server stops reading it. It returns
// the server's connection, its unsent output at its highest, sampled while
// the peer writes, and how much the peer sent.
func keyUpdateFlood(t *testing.T, h *lifetimes, addr string, total int) (id uint64, most, sent int) {
	_, raw, s := rawTLS13(t, addr)
	require.NoError(t, raw.(*net.TCPConn).SetReadBuffer(16<<10))
	require.NoError(t, raw.(*net.TCPConn).SetWriteBuffer(16<<10))
	id = h.next(t)
	sc := h.conn(id)
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sent < total {
			var batch []byte
			for range 16 {
				batch = append(batch, s.keyUpdate(true)...)
			}
			batch = append(batch, s.data([]byte("x"))...)
			raw.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
			n, err := raw.Write(batch)
			sent += n
			if err != nil {
				return // the server stopped reading, or closed
			}
		}
	}()
	for {
		peak.Store(max(peak.Load(), int64(sc.OutboundQueued())))
		select {
		case <-done:
			peak.Store(max(peak.Load(), int64(sc.OutboundQueued())))
			return id, int(peak.Load()), sent
		case <-time.After(time.Millisecond):
		}
	}
}

// TestTLSKeyUpdatesFromAPeerThatNeverReads: each KeyUpdate that asks for
// one back has the record layer write a record the handler never sees,
// so the handler cannot bound it. A peer that sends them and never reads
// holds at most the backpressure mark, or, with backpressure off, at most
// WithMaxOutbound's bound: past it the connection is closed with
// ErrOutboundFull.
func TestTLSKeyUpdatesFromAPeerThatNeverReads(t *testing.T) {
	const bound = 128 << 10
	const slack = 64 << 10 // one read's replies, taken before the loop looks
	discard := func(c Conn) Action { c.Discard(-1); return None }
	t.Run("backpressure", func(t *testing.T) {
		h := newLifetimes()
		h.traffic = discard
		_, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1),
			WithBackpressureMark(bound), WithSocketSendBuffer(16<<10), WithSocketRecvBuffer(16<<10))
		_, most, sent := keyUpdateFlood(t, h, addr, 2<<20)
		assert.Less(t, sent, 2<<20, "the server read all the peer sent")
		assert.LessOrEqual(t, most, bound+slack, "unsent output")
	})
	t.Run("no backpressure", func(t *testing.T) {
		h := newLifetimes()
		h.traffic = discard
		eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1),
			WithBackpressure(false), WithMaxOutbound(bound), WithSocketSendBuffer(16<<10), WithSocketRecvBuffer(16<<10))
		id, most, _ := keyUpdateFlood(t, h, addr, 2<<20)
		assert.LessOrEqual(t, most, bound+slack, "unsent output")
		_, err := h.waitClosed(t, id)
		assert.ErrorIs(t, err, ErrOutboundFull)
		assert.NotZero(t, eng.Stats().OutboundRefused)
	})
}

// openSSL starts `openssl args...` for the test's length, and returns its
// standard input and a reader of its standard output, both as text lines.
func openSSL(t *testing.T, args ...string) (io.Writer, *lineReader) {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed")
	}
	cmd := exec.Command(bin, args...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return in, newLineReader(out)
}

// lineReader hands out the lines a process writes, as they come.
type lineReader struct{ lines chan string }

func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string, 256)}
	go func() {
		defer close(lr.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
	}()
	return lr
}

// waitLine waits for a line that contains s, and returns it.
func (lr *lineReader) waitLine(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case line, ok := <-lr.lines:
			if !ok {
				t.Fatalf("no line with %q; the process ended after %q", s, seen)
			}
			if strings.Contains(line, s) {
				return line
			}
			seen = append(seen, line)
		case <-deadline:
			t.Fatalf("no line with %q in 10s; saw %q", s, seen)
		}
	}
}

// pemFiles writes the test PKI's server certificate and key to files,
// for openssl.
func pemFiles(t *testing.T) (cert, key string) {
	p := newPKI(t)
	dir := t.TempDir()
	der, err := x509.MarshalPKCS8PrivateKey(p.server.PrivateKey)
	require.NoError(t, err)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return cert, key
}

// TestTLSOpenSSLKeyUpdateAndRenegotiation: openssl's client, a peer that
// does what crypto/tls's never does, updates its keys in TLS 1.3 (K asks
// for the server's update too, k does not), and the echo goes on; in TLS
// 1.2 it tries to renegotiate (R), which the server refuses: that
// connection closes with crypto/tls's error, and the engine serves on.
func TestTLSOpenSSLKeyUpdateAndRenegotiation(t *testing.T) {
	t.Run("TLS1.3 key updates", func(t *testing.T) {
		h := newLifetimes()
		eng, _ := serve(t, h, WithTLS(serverTLS(t)))
		in, out := openSSL(t, "s_client", "-tls1_3", "-connect", eng.Addrs()[0].String())
		id := h.next(t)
		for _, step := range []string{"echo-one", "K", "echo-two", "k", "echo-three", "K", "K", "echo-four"} {
			_, err := io.WriteString(in, step+"\n")
			require.NoError(t, err)
			if len(step) == 1 {
				// openssl takes a command only as a line read alone.
				step = "KEYUPDATE"
			}
			out.waitLine(t, step)
		}
		_, closed := h.closing(id)
		assert.False(t, closed)
	})
	t.Run("TLS1.2 renegotiation", func(t *testing.T) {
		h := newLifetimes()
		eng, addr := serve(t, h, WithTLS(serverTLS(t)))
		in, out := openSSL(t, "s_client", "-tls1_2", "-connect", eng.Addrs()[0].String())
		id := h.next(t)
		_, err := io.WriteString(in, "echo-one\n")
		require.NoError(t, err)
		out.waitLine(t, "echo-one")
		_, err = io.WriteString(in, "R\n")
		require.NoError(t, err)
		_, cerr := h.waitClosed(t, id)
		assert.ErrorContains(t, cerr, "tls: ")
		assert.EqualValues(t, 1, closedStats(t, eng).ClosedByError)
		require.NoError(t, echoOnce(dialTLS(t, addr, clientTLS(t, tls.VersionTLS12)), []byte("still serving")))
	})
}

// TestTLSStopDuringHandshakes: a stop with handshakes under way, of
// clients that say nothing, that sent part of a ClientHello, and whose
// handshakes wait in a GetCertificate, returns at once rather than after
// the handshake timeout, closes each, reports none as failed, and leaves
// no goroutine once the held callbacks return (serve's check).
func TestTLSStopDuringHandshakes(t *testing.T) {
	cfg, release := heldServerTLS(t)
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 64)}
	eng, addr := serve(t, h, WithTLS(cfg), WithTLSHandshakeTimeout(time.Minute), WithNumEventLoop(2))
	t.Cleanup(func() { close(release) })
	var conns []net.Conn
	for range 10 {
		conns = append(conns, dial(t, addr))
		partial := dial(t, addr)
		partial.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
		conns = append(conns, partial)
	}
	held := make(chan error, 2)
	for range 2 {
		go func() {
			c := tls.Client(dial(t, addr), clientTLS(t, 0))
			c.SetDeadline(time.Now().Add(30 * time.Second))
			held <- c.Handshake()
		}()
	}
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 22 }, func() string {
		return fmt.Sprintf("%d of 22 handshakes under way", eng.e.handshakes.Load())
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, eng.Stop(ctx))
	assert.Less(t, time.Since(start), 10*time.Second, "the stop waited for the handshakes")
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.Copy(io.Discard, c)
		assert.NoError(t, err, "not closed, or reset")
	}
	for range 2 {
		assert.Error(t, <-held)
	}
	s := eng.Stats()
	assert.Zero(t, s.TLSHandshakeFailures+s.TLSHandshakeTimeouts)
	assert.Empty(t, h.errs)
}

// dripConn writes what it is given a few bytes at a time, pausing between
// them, as a client on a poor link does.
type dripConn struct {
	net.Conn
	chunk int
	pause time.Duration
}

func (d *dripConn) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		m, err := d.Conn.Write(p[:min(d.chunk, len(p))])
		n += m
		if err != nil {
			return n, err
		}
		p = p[m:]
		time.Sleep(d.pause)
	}
	return n, nil
}

// TestTLSSlowClientHello: the handshake timeout runs from the connection's
// admission, however the bytes come: a ClientHello that arrives a little
// at a time within it completes, and one still arriving when it passes is
// closed then, reported and counted as a timeout, for all that each byte
// came in time.
func TestTLSSlowClientHello(t *testing.T) {
	const timeout = 3 * time.Second
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithTLSHandshakeTimeout(timeout))
	hello := func(pause time.Duration) (*tls.Conn, time.Time) {
		raw := dial(t, addr)
		start := time.Now()
		cfg := clientTLS(t, tls.VersionTLS13)
		cfg.CurvePreferences = []tls.CurveID{tls.X25519} // a ClientHello of about 250 bytes
		c := tls.Client(&dripConn{Conn: raw, chunk: 8, pause: pause}, cfg)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		return c, start
	}

	c, _ := hello(timeout / 3 / 32) // 32 pauses or more, a third of the timeout
	require.NoError(t, c.Handshake())
	require.NoError(t, echoOnce(c, []byte("slow but in time")))

	c, start := hello(timeout / 16) // twice the timeout, or more
	assert.Error(t, c.Handshake())
	took := time.Since(start)
	assert.ErrorIs(t, <-h.errs, ErrTLSHandshakeTimeout)
	assert.GreaterOrEqual(t, took, timeout)
	assert.Less(t, took, 3*timeout, "the timeout ran from the last byte, not the first")
	assert.EqualValues(t, 1, eng.Stats().TLSHandshakeTimeouts)
}

// TestTLSNoCommonApplicationProtocol: a client that offers only ALPN
// protocols the server does not serve fails its handshake with the alert
// that says so; the failure is reported, counted, unseen by OnOpen.
func TestTLSNoCommonApplicationProtocol(t *testing.T) {
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)))
	for _, v := range tlsVersions {
		cfg := clientTLS(t, v.version)
		cfg.NextProtos = []string{"spdy/3"}
		c := tls.Client(dial(t, addr), cfg)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		assert.ErrorContains(t, c.Handshake(), "no application protocol", v.name)
		assert.ErrorContains(t, <-h.errs, "application protocol", v.name)
	}
	waitFor(t, 5*time.Second, func() bool { return eng.Stats().TLSHandshakeFailures == 2 },
		func() string { return fmt.Sprintf("%d failures counted", eng.Stats().TLSHandshakeFailures) })
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Empty(t, h.opened)
}

// TestTLSDataAfterCloseNotify: a TLS 1.3 peer sends data, its
// close_notify, then goes on sending records over the open TCP stream,
// as a broken client does. The close_notify is its end of stream: what
// came before it is offered, nothing after it, and the connection ends
// as at a TCP end of stream: closed cleanly, or, in half-close mode, open
// for the answer, which reaches the peer whole before the server's own
// close_notify.
func TestTLSDataAfterCloseNotify(t *testing.T) {
	for _, half := range []bool{false, true} {
		t.Run(fmt.Sprintf("halfclose=%v", half), func(t *testing.T) {
			h := newHalfCloser(func(c Conn, got int) Action {
				c.Write([]byte(fmt.Sprintf("got %d", got)))
				return Close
			})
			_, addr := serve(t, h, WithTLS(serverTLS(t)), WithHalfClose(half), WithNumEventLoop(1))
			c, raw, s := rawTLS13(t, addr)
			id := h.next(t)
			// The records after close_notify in the same write arrive
			// with it; the rest, as they may.
			_, err := raw.Write(slices.Concat(s.data([]byte("before")), s.seal(21, []byte{1, 0}),
				s.data([]byte("after")), s.data([]byte("and after"))))
			require.NoError(t, err)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					raw.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
					_, err := raw.Write(s.data(make([]byte, 1024)))
					if err != nil && !os.IsTimeout(err) {
						return
					}
				}
			}()
			got, err := io.ReadAll(c)
			assert.NoError(t, err, "the server's close_notify ends the stream")
			if half {
				assert.Equal(t, "got 6", string(got))
			} else {
				assert.Empty(t, got)
			}
			_, cerr := h.waitClosed(t, id)
			close(stop)
			<-done
			assert.NoError(t, cerr)
			assert.EqualValues(t, len("before"), h.got.Load(), "bytes offered")
			assert.Zero(t, h.late.Load(), "OnTraffic calls after OnHalfClose")
		})
	}
}

// TestTLSMaxOutboundOfSmallAsyncWrites: what AsyncWrite posts is sealed
// one record per write, each adding a header and a tag to what it
// counted when it was posted, so many small writes posted at once to a
// peer that never reads must not take the output past WithMaxOutbound
// once sealed. The bound is large enough that what it admits, sealed,
// overflows the sockets' buffers, so that some stays queued to be counted.
func TestTLSMaxOutboundOfSmallAsyncWrites(t *testing.T) {
	const bound = 1 << 20
	var accepted atomic.Int64
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		c.Discard(-1)
		for range 4 * bound {
			if c.AsyncWrite([]byte{'x'}, nil) != nil {
				break
			}
			accepted.Add(1)
		}
		return None
	}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1), WithMaxOutbound(bound),
		WithSocketSendBuffer(16<<10))
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			accepted.Store(0)
			raw := dial(t, addr)
			require.NoError(t, raw.(*net.TCPConn).SetReadBuffer(16<<10))
			c := tls.Client(raw, clientTLS(t, v.version))
			c.SetDeadline(time.Now().Add(10 * time.Second))
			_, err := c.Write([]byte("go"))
			require.NoError(t, err)
			sc := h.conn(h.next(t))
			waitFor(t, 10*time.Second, func() bool { return accepted.Load() > 0 && sc.OutboundQueued() > 0 && sc.(*conn).posted.Load() == 0 },
				func() string {
					return fmt.Sprintf("the writes were not sealed: accepted %d queued %d posted %d", accepted.Load(), sc.OutboundQueued(), sc.(*conn).posted.Load())
				})
			var queued int
			onConnLoop(t, sc, func() { queued = sc.(*conn).pending() })
			assert.LessOrEqual(t, queued, bound, "%d writes accepted", accepted.Load())
			assert.NotZero(t, eng.Stats().OutboundRefused)
		})
	}
}
