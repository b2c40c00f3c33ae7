//go:build unix

package sluice

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onLoopOf runs fn on eng's loop i and waits for it.
func onLoopOf(t testing.TB, eng Engine, i int, fn func()) {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, eng.Loop(i).Execute(func() { fn(); close(done) }))
	<-done
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
	onLoopOf(t, eng, 0, func() {
		for _, c := range eng.e.loops[0].conns {
			if c != nil && c.state == stateHandshake {
				w := &c.ext.sec.wire
				w.mu.Lock()
				ended = ended || w.eof
				w.mu.Unlock()
			}
		}
	})
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
	release := make(chan struct{})
	cfg := serverTLS(t)
	// Runs on the server's handshake goroutine after its flight is sent
	// and before the client's Finished is read.
	cfg.VerifyConnection = func(tls.ConnectionState) error { <-release; return nil }
	h := newLifetimes()
	eng, addr := serve(t, h, WithTLS(cfg), WithNumEventLoop(1))
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	raw := dial(t, addr)
	c := tls.Client(raw, clientTLS(t, tls.VersionTLS13))
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	require.NoError(t, c.Handshake())
	_, err := c.Write([]byte("ping"))
	require.NoError(t, err)
	require.NoError(t, raw.(*net.TCPConn).CloseWrite())
	waitFor(t, 5*time.Second, func() bool { return handshakeSawEnd(t, eng) },
		func() string { return "the end of the stream did not reach the handshake" })
	// Told of the end, the loop stops reading rather than reading it
	// again and again while the handshake runs.
	before := cpuTime(t)
	assert.True(t, holdsFor(300*time.Millisecond, func() bool { return cpuTime(t)-before < 150*time.Millisecond }),
		"the loop spun on the end of the stream: %v of CPU", cpuTime(t)-before)
	released = true
	close(release)

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
	var logged syncBuffer
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
