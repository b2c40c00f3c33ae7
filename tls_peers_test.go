//go:build unix

package sluice

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syncbuf"
)

// holdHandshakes makes every server handshake under cfg wait, after the
// server's flight is sent and before the client's Finished is read, until
// the returned release is called (once or more).
func holdHandshakes(cfg *tls.Config) (release func()) {
	ch := make(chan struct{})
	cfg.VerifyConnection = func(tls.ConnectionState) error { <-ch; return nil }
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// writeInHandshake completes a TLS 1.3 client handshake with addr, whose
// server holdHandshakes holds, and writes first: it reaches the server
// while the server's handshake still runs. Cleanup releases the server's
// handshakes before the engine stops, should the test end first.
func writeInHandshake(t *testing.T, addr string, release func(), first string, d time.Duration) *tls.Conn {
	t.Helper()
	t.Cleanup(release)
	c := tls.Client(dial(t, addr), clientTLS(t, tls.VersionTLS13))
	require.NoError(t, c.SetDeadline(time.Now().Add(d)))
	require.NoError(t, c.Handshake())
	_, err := c.Write([]byte(first))
	require.NoError(t, err)
	return c
}

// waitForEarlyData waits until a connection of eng's loop 0 still in its
// handshake holds whole records the handshake has yet to read: the
// client's first data, come before the server's handshake ended.
func waitForEarlyData(t *testing.T, eng Engine) {
	t.Helper()
	waitFor(t, 5*time.Second, func() bool {
		var fed bool
		eachHandshakeWire(t, eng, func(w *wire) { fed = w.whole > w.read })
		return fed
	}, func() string { return "the first data did not reach the server during its handshake" })
}

// onLoopOf runs fn on eng's loop i and waits for it.
func onLoopOf(t testing.TB, eng Engine, i int, fn func()) {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, eng.Loop(i).Execute(func() { fn(); close(done) }))
	<-done
}

// eachHandshakeWire runs fn on eng's loop 0 with the wire of each of its
// connections still in their handshake, locked.
func eachHandshakeWire(t testing.TB, eng Engine, fn func(w *wire)) {
	t.Helper()
	onLoopOf(t, eng, 0, func() {
		for _, c := range eng.e.loops[0].conns {
			if c != nil && c.state == stateHandshake {
				w := &c.ext.sec.wire
				w.mu.Lock()
				fn(w)
				w.mu.Unlock()
			}
		}
	})
}

// cpuTime is the CPU time the process has used.
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// handshakeSawEnd reports whether a connection of eng's loop 0 in its
// handshake has had the end of its peer's stream fed to its wire.
func handshakeSawEnd(t testing.TB, eng Engine) bool {
	var ended bool
	eachHandshakeWire(t, eng, func(w *wire) { ended = ended || w.eof })
	return ended
}

// TestTLSEndOfStreamWithTheLastFlight: a TLS 1.3 client's handshake ends
// before the server's, so its Finished, its first data and the end of its
// stream (no close_notify, as a client that writes and exits sends it)
// may all reach the server while the server's handshake still runs. The
// handshake succeeds on what it holds; the data is then offered, and the
// end of the stream acted on: the server answers and closes, on every
// driver, rather than waiting for an end it was already told of.
func TestTLSEndOfStreamWithTheLastFlight(t *testing.T) {
	cfg := serverTLS(t)
	release := holdHandshakes(cfg)
	h := newLifetimes()
	eng, addr := serve(t, h, WithTLS(cfg), WithNumEventLoop(1))
	c := writeInHandshake(t, addr, release, "ping", 10*time.Second)
	require.NoError(t, c.NetConn().(*net.TCPConn).CloseWrite())
	waitFor(t, 5*time.Second, func() bool { return handshakeSawEnd(t, eng) },
		func() string { return "the end of the stream did not reach the handshake" })
	// Told of the end, the loop stops reading rather than reading it
	// again and again while the handshake runs.
	before := cpuTime(t)
	assert.True(t, holdsFor(300*time.Millisecond, func() bool { return cpuTime(t)-before < 150*time.Millisecond }),
		"the loop spun on the end of the stream: %v of CPU", cpuTime(t)-before)
	release()

	got, err := io.ReadAll(c)
	require.NoError(t, err, "the server's close_notify ends the stream")
	assert.Equal(t, "ping", string(got))
	_, cerr := h.waitClosed(t, h.next(t))
	assert.NoError(t, cerr)
}

// TestTLSPanicInAConfigCallback: the tls.Config's callbacks
// (GetCertificate, VerifyConnection, ...) run on the handshake's
// goroutine, where a panic would end the process. It fails the handshake
// instead, reported with ErrHandlerPanic and logged, and the engine
// serves on.
func TestTLSPanicInAConfigCallback(t *testing.T) {
	cfg := serverTLS(t)
	cert := cfg.Certificates[0]
	cfg.Certificates = nil
	cfg.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if hello.ServerName == "panic.example" {
			panic("GetCertificate gave up")
		}
		return &cert, nil
	}
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	var logged syncbuf.Buffer
	eng, addr := serve(t, h, WithTLS(cfg), WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))

	bad := clientTLS(t, 0)
	bad.ServerName = "panic.example"
	c := tls.Client(dial(t, addr), bad)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	assert.Error(t, c.Handshake())
	err := <-h.errs
	assert.ErrorIs(t, err, ErrHandlerPanic)
	assert.ErrorContains(t, err, "GetCertificate gave up")
	assert.Contains(t, logged.String(), "GetCertificate gave up")
	assert.EqualValues(t, 1, eng.Stats().TLSHandshakeFailures)

	require.NoError(t, echoOnce(dialTLS(t, addr, clientTLS(t, 0)), []byte("still serving")))
}

// TestTLSHalfClose: in half-close mode a TLS client's close_notify, with
// or without the end of its TCP stream after it, leaves the connection
// open for the answer, which reaches the client whole before the
// server's own close_notify; every byte the client sent is offered before
// OnHalfClose.
func TestTLSHalfClose(t *testing.T) {
	const request = 256 << 10
	big := randomBytes(rand.New(rand.NewPCG(20, 21)), 1<<20)
	payload := randomBytes(rand.New(rand.NewPCG(22, 23)), request)
	for _, v := range tlsVersions {
		for _, fin := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fin=%v", v.name, fin), func(t *testing.T) {
				h := newHalfCloser(func(c Conn, got int) Action {
					c.Write(big)
					c.CloseWrite()
					return None
				})
				_, addr := serve(t, h, WithTLS(serverTLS(t)), WithHalfClose(true), WithNumEventLoop(1))
				raw := dial(t, addr)
				c := tls.Client(raw, clientTLS(t, v.version))
				require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
				require.NoError(t, c.Handshake())
				id := h.next(t)
				go func() {
					c.Write(payload)
					c.CloseWrite()
					if fin {
						raw.(*net.TCPConn).CloseWrite()
					}
				}()
				got, err := io.ReadAll(c)
				require.NoError(t, err, "after %d bytes", len(got))
				require.True(t, bytes.Equal(big, got), "got %d bytes, want %d; differs at byte %d",
					len(got), len(big), firstDiff(got, big))
				_, cerr := h.waitClosed(t, id)
				assert.NoError(t, cerr)
				assert.EqualValues(t, 1, h.halfCloses.Load(), "OnHalfClose calls")
				assert.EqualValues(t, request, h.gotAtHalf.Load(), "bytes offered before OnHalfClose")
				assert.Zero(t, h.late.Load(), "OnTraffic calls after OnHalfClose")
			})
		}
	}
}

// TestTLSPauseInOnOpenWithTheFirstData: a client's first data that came
// with its Finished, while the server's handshake ran, is held while
// OnOpen has paused reading, and offered once reading resumes, with no
// more input from the client.
func TestTLSPauseInOnOpenWithTheFirstData(t *testing.T) {
	cfg := serverTLS(t)
	release := holdHandshakes(cfg)
	var offered atomic.Int64
	h := newLifetimes()
	h.onOpen = func(c Conn) { c.PauseRead() }
	h.traffic = func(c Conn) Action {
		offered.Add(1)
		return echoHandler{}.OnTraffic(c)
	}
	eng, addr := serve(t, h, WithTLS(cfg), WithNumEventLoop(1))
	c := writeInHandshake(t, addr, release, "first", 10*time.Second)
	waitForEarlyData(t, eng)
	release()
	sc := h.conn(h.next(t))
	assert.True(t, holdsFor(200*time.Millisecond, func() bool { return offered.Load() == 0 }), "offered while paused")
	var held int
	onConnLoop(t, sc, func() { held = sc.InboundBuffered() })
	assert.Equal(t, len("first"), held, "the plaintext held while paused")
	onConnLoop(t, sc, func() { sc.ResumeRead() })
	got := make([]byte, 5)
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "first", string(got))
}

// sealer seals records as a TLS 1.3 client with TLS_AES_128_GCM_SHA256,
// from its traffic secret (KeyLogWriter), for what crypto/tls's client
// never sends: a KeyUpdate. Once a test seals with it, the crypto/tls
// client it took the secret from only reads.
type sealer struct {
	t      testing.TB
	secret []byte
	aead   cipher.AEAD
	iv     []byte
	seq    uint64
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context.
func expandLabel(t testing.TB, secret []byte, label string, n int) []byte {
	full := "tls13 " + label
	info := append([]byte{byte(n >> 8), byte(n), byte(len(full))}, full...)
	info = append(info, 0)
	out, err := hkdf.Expand(sha256.New, secret, string(info), n)
	require.NoError(t, err)
	return out
}

// newSealer reads the client's first application traffic secret from
// keyLog, what a KeyLogWriter wrote for one connection.
func newSealer(t testing.TB, keyLog string) *sealer {
	for line := range strings.Lines(keyLog) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "CLIENT_TRAFFIC_SECRET_0" {
			secret, err := hex.DecodeString(f[2])
			require.NoError(t, err)
			s := &sealer{t: t}
			s.rekey(secret)
			return s
		}
	}
	t.Fatal("no client traffic secret logged")
	return nil
}

func (s *sealer) rekey(secret []byte) {
	s.secret = secret
	block, err := aes.NewCipher(expandLabel(s.t, secret, "key", 16))
	require.NoError(s.t, err)
	s.aead, err = cipher.NewGCM(block)
	require.NoError(s.t, err)
	s.iv, s.seq = expandLabel(s.t, secret, "iv", 12), 0
}

// seal returns a record of content type typ holding content.
func (s *sealer) seal(typ byte, content []byte) []byte {
	inner := append(bytes.Clone(content), typ)
	nonce := bytes.Clone(s.iv)
	for i := range 8 {
		nonce[4+i] ^= byte(s.seq >> (56 - 8*i))
	}
	s.seq++
	n := len(inner) + s.aead.Overhead()
	hdr := []byte{23, 3, 3, byte(n >> 8), byte(n)}
	return s.aead.Seal(hdr, nonce, inner, hdr)
}

// data seals p as application data.
func (s *sealer) data(p []byte) []byte { return s.seal(23, p) }

// keyUpdate seals a KeyUpdate, asking the peer to update its keys too if
// requested, and moves on to the next secret.
func (s *sealer) keyUpdate(requested bool) []byte {
	req := byte(0)
	if requested {
		req = 1
	}
	rec := s.seal(22, []byte{24, 0, 0, 1, req})
	s.rekey(expandLabel(s.t, s.secret, "traffic upd", 32))
	return rec
}

// rawTLS13 connects to addr as a TLS 1.3 client and returns the client,
// to read with, the socket under it, and a sealer to write with.
func rawTLS13(t testing.TB, addr string) (*tls.Conn, net.Conn, *sealer) {
	var keyLog bytes.Buffer
	cfg := clientTLS(t, tls.VersionTLS13)
	cfg.KeyLogWriter = &keyLog
	raw := dial(t, addr)
	c := tls.Client(raw, cfg)
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	require.NoError(t, c.Handshake())
	if c.ConnectionState().CipherSuite != tls.TLS_AES_128_GCM_SHA256 {
		t.Skip("the sealer does AES-128-GCM only; crypto/tls chose another suite")
	}
	return c, raw, newSealer(t, keyLog.String())
}

// TestTLSKeyUpdateBehindALargeWrite: the server has 8 MiB queued for a
// client that reads slowly when the client asks it to update its keys.
// The server's KeyUpdate goes after every record it sealed before it, and
// what it seals after with its new keys after that: the client reads the
// 8 MiB and the answers to what it sent under its own new keys, in order.
func TestTLSKeyUpdateBehindALargeWrite(t *testing.T) {
	const size = 8 << 20
	big := randomBytes(rand.New(rand.NewPCG(30, 31)), size)
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		b, _ := c.Next(-1)
		if string(b) == "go" {
			c.Write(big)
			return None
		}
		c.Write(b)
		return None
	}
	_, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1))
	c, raw, s := rawTLS13(t, addr)
	sc := h.conn(h.next(t))
	_, err := raw.Write(s.data([]byte("go")))
	require.NoError(t, err)
	waitFor(t, 5*time.Second, func() bool { return sc.OutboundQueued() > size/2 },
		func() string { return fmt.Sprintf("%d bytes queued", sc.OutboundQueued()) })

	got := make([]byte, 0, size+16)
	read := func(n int) {
		t.Helper()
		buf := make([]byte, 4<<10)
		for len(got) < n {
			m, err := c.Read(buf[:min(len(buf), n-len(got))])
			require.NoError(t, err, "after %d bytes", len(got))
			got = append(got, buf[:m]...)
		}
	}
	read(1 << 20)
	_, err = raw.Write(slices.Concat(s.keyUpdate(true), s.data([]byte("ping"))))
	require.NoError(t, err)
	read(4 << 20)
	_, err = raw.Write(slices.Concat(s.keyUpdate(false), s.data([]byte("pong"))))
	require.NoError(t, err)
	read(size + 8)
	require.True(t, bytes.Equal(big, got[:size]), "the 8 MiB differ at byte %d", firstDiff(got[:size], big))
	assert.Equal(t, "pingpong", string(got[size:]))
}

// TestTLSRecordsSplitAtEveryByte: records arrive one byte per read, a
// KeyUpdate among them: each record's plaintext is offered once the record
// is whole, and not before, and the echo comes back in order.
func TestTLSRecordsSplitAtEveryByte(t *testing.T) {
	var offered atomic.Int64
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		offered.Add(int64(c.InboundBuffered()))
		return echoHandler{}.OnTraffic(c)
	}
	h.onOpen = func(c Conn) { c.SetNoDelay(true) }
	_, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1))
	c, raw, s := rawTLS13(t, addr)
	raw.(*net.TCPConn).SetNoDelay(true)
	sc := h.conn(h.next(t)).(*conn)
	fed := func() int64 {
		var n int64
		onConnLoop(t, sc, func() {
			w := &sc.ext.sec.wire
			w.mu.Lock()
			n = w.fed
			w.mu.Unlock()
		})
		return n
	}
	start := fed()
	records := [][]byte{s.data([]byte("one")), s.keyUpdate(true), s.data([]byte("two")), s.keyUpdate(false), s.data([]byte("three"))}
	plain := []int{3, 0, 3, 0, 5}
	var sent int64
	want := int64(0)
	for i, rec := range records {
		for j := range rec {
			_, err := raw.Write(rec[j : j+1])
			require.NoError(t, err)
			sent++
			waitFor(t, 5*time.Second, func() bool { return fed()-start == sent },
				func() string { return fmt.Sprintf("the server fed %d of %d bytes", fed()-start, sent) })
			if j < len(rec)-1 {
				assert.Equal(t, want, offered.Load(), "record %d offered at byte %d of %d", i, j+1, len(rec))
			}
		}
		want += int64(plain[i])
		waitFor(t, 5*time.Second, func() bool { return offered.Load() == want },
			func() string { return fmt.Sprintf("record %d: %d bytes offered, want %d", i, offered.Load(), want) })
	}
	got := make([]byte, 11)
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "onetwothree", string(got))
}

// TestTLSWritesAroundTheHandshake: what OnOpen writes goes first, before
// the answer to the client's first data (which came with its Finished),
// and what another goroutine, started in OnOpen, posts with AsyncWrite
// at once and on and on arrives whole and in its order, interleaved with
// the echoes.
func TestTLSWritesAroundTheHandshake(t *testing.T) {
	const posts = 500
	cfg := serverTLS(t)
	release := holdHandshakes(cfg)
	h := newLifetimes()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	h.onOpen = func(c Conn) {
		c.Write([]byte("<open>"))
		wg.Go(func() {
			for i := range posts {
				if c.AsyncWrite(fmt.Appendf(nil, "<a%04d>", i), nil) != nil {
					return
				}
			}
		})
	}
	h.traffic = func(c Conn) Action {
		b, _ := c.Next(-1)
		c.Write(slices.Concat([]byte("<e"), b, []byte(">")))
		return None
	}
	eng, addr := serve(t, h, WithTLS(cfg), WithNumEventLoop(1))
	c := writeInHandshake(t, addr, release, "x", 20*time.Second)
	waitForEarlyData(t, eng)
	release()

	var got []byte
	buf := make([]byte, 4096)
	next := 0 // the next AsyncWrite expected
	echoes := 0
	opened := false
	for next < posts || echoes < 10 {
		if echoes < 10 && next > echoes*posts/10 {
			_, err := c.Write([]byte("x"))
			require.NoError(t, err)
			echoes++
		}
		n, err := c.Read(buf)
		require.NoError(t, err, "after %q", got)
		got = append(got, buf[:n]...)
		for {
			start := bytes.IndexByte(got, '<')
			end := bytes.IndexByte(got, '>')
			if start < 0 || end < 0 {
				break
			}
			item := string(got[start+1 : end])
			got = got[end+1:]
			switch {
			case item == "open":
				require.Zero(t, next, "OnOpen's write came after an AsyncWrite")
				opened = true
			case strings.Trim(item, "x") == "e": // echoes of writes read together
				require.True(t, opened, "an echo came before OnOpen's write")
			case strings.HasPrefix(item, "a"):
				require.Equal(t, fmt.Sprintf("a%04d", next), item, "AsyncWrites out of order")
				next++
			default:
				t.Fatalf("unexpected %q", item)
			}
		}
	}
}

// TestTLSResetDuringTheHandshake: a client that resets its connection in
// the handshake has failed it, as one that ends its stream there has:
// counted, reported with the read's error, and its goroutine gone.
func TestTLSResetDuringTheHandshake(t *testing.T) {
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1))
	raw := dial(t, addr)
	_, err := raw.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00}) // a ClientHello begun
	require.NoError(t, err)
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 1 },
		func() string { return "the handshake did not start" })
	require.NoError(t, raw.(*net.TCPConn).SetLinger(0))
	require.NoError(t, raw.Close())
	select {
	case err := <-h.errs:
		assert.ErrorIs(t, err, syscall.ECONNRESET)
	case <-time.After(10 * time.Second):
		t.Fatal("the reset handshake was not reported")
	}
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 0 },
		func() string { return "the handshake goroutine is still counted" })
	s := eng.Stats()
	assert.EqualValues(t, 1, s.TLSHandshakeFailures)
	assert.Zero(t, s.Conns)
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Empty(t, h.opened)
}

// TestTLSWriteAfterClose: an AsyncWrite that the loop takes after Close
// has begun the connection's graceful close is sent before the end of
// the stream, as on plain TCP, or refused with an error; never reported
// sent and dropped.
func TestTLSWriteAfterClose(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", secure), func(t *testing.T) {
			cbErr := make(chan error, 1)
			h := newLifetimes()
			h.traffic = func(c Conn) Action {
				c.Next(-1)
				c.Write([]byte("head;"))
				go func() {
					c.Close()
					if err := c.AsyncWrite([]byte("tail;"), func(_ Conn, err error) { cbErr <- err }); err != nil {
						cbErr <- err
					}
				}()
				return None
			}
			opts := []Option{WithNumEventLoop(1)}
			if secure {
				opts = append(opts, WithTLS(serverTLS(t)))
			}
			_, addr := serve(t, h, opts...)
			var c net.Conn = dial(t, addr)
			if secure {
				c = dialTLS(t, addr, clientTLS(t, 0))
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			_, err := c.Write([]byte("go"))
			require.NoError(t, err)
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			err = <-cbErr
			if err == nil {
				assert.Equal(t, "head;tail;", string(got), "AsyncWrite reported sent")
			} else {
				assert.Equal(t, "head;", string(got))
				assert.ErrorIs(t, err, ErrConnClosed)
			}
		})
	}
}

// TestTLSSmallWritesBehindAFullSocket: a callback's output is sealed in
// full records also when the connection already has output queued
// behind a peer that does not read, rather than one record, 22 or more
// bytes of header and tag, per Write: 1,000 writes of 10 bytes queue
// about 10 KB, not 32 KB, of the bound (WithMaxOutbound).
func TestTLSSmallWritesBehindAFullSocket(t *testing.T) {
	delta := make(chan int, 1)
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		b, _ := c.Next(-1)
		switch string(b) {
		case "fill":
			c.Write(make([]byte, 16<<20))
		case "small":
			before := c.OutboundBuffered()
			if before == 0 {
				delta <- -1 // the socket took everything: nothing to test
				return None
			}
			for range 1000 {
				c.Write(make([]byte, 10))
			}
			c.Flush() // seals, and sends what the full socket takes: nothing
			delta <- c.OutboundBuffered() - before
		}
		return None
	}
	h.onOpen = func(c Conn) { c.SetWriteBuffer(4096) }
	_, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1), WithMaxOutbound(64<<20),
		WithBackpressureMark(64<<20)) // read on while the output waits
	// Small buffers both ends, which the peer does not read: once the
	// fill has queued, nothing more leaves.
	small := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	_, hp, _ := strings.Cut(addr, "://")
	raw, err := small.Dial("tcp", hp)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	c := tls.Client(raw, clientTLS(t, tls.VersionTLS13))
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	require.NoError(t, c.Handshake())
	sc := h.conn(h.next(t))
	_, err = c.Write([]byte("fill"))
	require.NoError(t, err)
	waitFor(t, 5*time.Second, func() bool { return sc.OutboundQueued() > 0 },
		func() string { return "the fill did not queue" })
	_, err = c.Write([]byte("small"))
	require.NoError(t, err)
	var d int
	select {
	case d = <-delta:
	case <-time.After(10 * time.Second):
		t.Fatal("the small writes did not run")
	}
	require.GreaterOrEqual(t, d, 0, "nothing was queued behind the fill")
	assert.Less(t, d, 11000, "10,000 bytes written as 1,000 writes queued %d bytes", d)
}

// helloConn is a net.Conn that keeps what a TLS client writes, its
// ClientHello, and ends its reads at once.
type helloConn struct {
	net.Conn
	hello []byte
}

func (h *helloConn) Write(p []byte) (int, error) { h.hello = append(h.hello, p...); return len(p), nil }
func (h *helloConn) Read([]byte) (int, error)    { return 0, io.EOF }

// clientHello returns the bytes of a ClientHello crypto/tls sends.
func clientHello(t testing.TB) []byte {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	h := &helloConn{Conn: a}
	tls.Client(h, clientTLS(t, 0)).Handshake()
	require.NotEmpty(t, h.hello)
	return h.hello
}

// TestTLSHandshakeHoldsLittle: while the server's handshake does not read
// (here its GetCertificate waits, as one that fetches a certificate
// does), what the client sends beyond its ClientHello is not read from
// the socket without bound into the handshake's buffer: the client's
// writes stop, and the server holds at most a few records' worth for it.
func TestTLSHandshakeHoldsLittle(t *testing.T) {
	cfg, release := heldServerTLS(t)
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	eng, addr := serve(t, h, WithTLS(cfg), WithNumEventLoop(1))
	t.Cleanup(func() { close(release) })
	raw := dial(t, addr)
	_, err := raw.Write(clientHello(t))
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { raw.Close() })
	wg.Go(func() {
		junk := make([]byte, 64<<10)
		for range 256 { // 16 MiB
			if _, err := raw.Write(junk); err != nil {
				return
			}
		}
	})
	held := func() (n int) {
		eachHandshakeWire(t, eng, func(w *wire) { n = max(n, cap(w.in), cap(w.own)) })
		return n
	}
	const bound = 256 << 10
	assert.True(t, holdsFor(500*time.Millisecond, func() bool { return held() <= bound }),
		"the handshake's buffer holds %d bytes", held())
	assert.Zero(t, eng.Stats().InboundTooLarge)
}

// TestTLSRecordHeaderBounds: a record header that announces more than TLS
// allows closes the connection at once, before its body comes; one that
// announces the most TLS allows, its body trickled, is held in the wire
// alone, at most a record's worth, and nothing of it offered until it is
// whole, when it fails to authenticate.
func TestTLSRecordHeaderBounds(t *testing.T) {
	var offered atomic.Int64
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		offered.Add(int64(c.InboundBuffered()))
		return echoHandler{}.OnTraffic(c)
	}
	_, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1))

	_, raw, _ := rawTLS13(t, addr)
	id := h.next(t)
	const tooLong = maxRecordLen + 1
	_, err := raw.Write([]byte{23, 3, 3, tooLong >> 8, tooLong & 0xff})
	require.NoError(t, err)
	_, cerr := h.waitClosed(t, id)
	assert.ErrorIs(t, cerr, errRecordOverflow)

	_, raw, _ = rawTLS13(t, addr)
	id = h.next(t)
	sc := h.conn(id).(*conn)
	const body = 16384 + 256 // TLS 1.3's largest
	_, err = raw.Write([]byte{23, 3, 3, byte(body >> 8), byte(body & 0xff)})
	require.NoError(t, err)
	junk := make([]byte, 128)
	for sent := 0; sent < body-1; {
		n := min(len(junk), body-1-sent)
		_, err := raw.Write(junk[:n])
		require.NoError(t, err)
		sent += n
		var fed int64
		var kept int
		waitFor(t, 5*time.Second, func() bool {
			onConnLoop(t, sc, func() {
				w := &sc.ext.sec.wire
				w.mu.Lock()
				fed, kept = w.fed, max(cap(w.in), cap(w.own))
				w.mu.Unlock()
			})
			return fed >= int64(recordHeaderLen+sent)
		}, func() string { return fmt.Sprintf("%d of %d bytes fed", fed, sent) })
		require.LessOrEqual(t, kept, 2*(recordHeaderLen+body), "the wire holds %d bytes for one record", kept)
	}
	assert.Zero(t, offered.Load(), "offered before the record was whole")
	_, err = raw.Write(junk[:1])
	require.NoError(t, err)
	_, cerr = h.waitClosed(t, id)
	assert.ErrorContains(t, cerr, "bad record MAC")
}

// TestTLSKillDuringTheHandshake: Engine.Kill reaches an accepted
// connection in its handshake: it is reset, counted as killed, not as a
// failed handshake, and its goroutine ends.
func TestTLSKillDuringTheHandshake(t *testing.T) {
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithNumEventLoop(1))
	raw := dial(t, addr)
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 1 },
		func() string { return "the handshake did not start" })
	ids := slices.Collect(eng.ConnIDs())
	require.Len(t, ids, 1)
	require.NoError(t, eng.Kill(ids[0]))
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := raw.Read(make([]byte, 1))
	assert.ErrorIs(t, err, syscall.ECONNRESET)
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 0 },
		func() string { return "the handshake goroutine is still counted" })
	s := eng.Stats()
	assert.EqualValues(t, 1, s.Killed)
	assert.Zero(t, s.TLSHandshakeFailures+s.TLSHandshakeTimeouts)
	assert.Empty(t, h.errs)
}
