//go:build linux

package sluice

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The engine as a TLS client (DialTLS): against crypto/tls's own server,
// and against the engine's. Each test runs on the poller of the pass:
// epoll, io_uring (SLUICE_TEST_POLLER=uring) and the development backend
// (-tags sluice_std).

// goTLS is a crypto/tls server (tls.Listen) that echoes, for the engine to
// dial. What each handshake agreed, or why it failed, as the server saw
// it, comes on its channels.
type goTLS struct {
	addr   string // with its scheme, as Dial takes it
	states chan tls.ConnectionState
	errs   chan error
}

// goTLSServer listens on loopback with cfg until the test ends; cleanup
// closes the listener and every connection, and waits for its goroutines.
func goTLSServer(t testing.TB, cfg *tls.Config) *goTLS {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	s := &goTLS{addr: "tcp://" + ln.Addr().String(), states: make(chan tls.ConnectionState, 16), errs: make(chan error, 16)}
	serveEach(t, ln, func(c net.Conn) {
		defer c.Close()
		tc := c.(*tls.Conn)
		tc.SetDeadline(time.Now().Add(30 * time.Second))
		if err := tc.Handshake(); err != nil {
			s.errs <- err
			return
		}
		s.states <- tc.ConnectionState()
		io.CopyBuffer(struct{ io.Writer }{tc}, struct{ io.Reader }{tc}, make([]byte, 32<<10))
	})
	return s
}

// silentListener accepts connections and never says a word: a TLS
// server whose handshake never comes.
func silentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveEach(t, ln, func(c net.Conn) { io.Copy(io.Discard, c) })
	return "tcp://" + ln.Addr().String()
}

// tlsTripper is a tripper that keeps what OnOpen's ConnectionState said.
func tlsTripper() (*tripper, chan tlsSeen) {
	seen := make(chan tlsSeen, 16)
	return &tripper{onOpen: func(c Conn, _ *trip) {
		s, ok := c.ConnectionState()
		seen <- tlsSeen{s, ok}
	}}, seen
}

// TestTLSDialGoServer dials crypto/tls's server and echoes through it. The
// name verified is the host dialed, an IP address or a name, since the
// configuration gives none; the caller's configuration is left as it was.
func TestTLSDialGoServer(t *testing.T) {
	for _, v := range tlsVersions {
		for _, host := range []string{"127.0.0.1", "localhost"} {
			t.Run(v.name+"/"+host, func(t *testing.T) {
				h, seen := tlsTripper()
				eng := runClient(t, h, WithNumEventLoop(2))
				srv := goTLSServer(t, &tls.Config{Certificates: []tls.Certificate{newPKI(t).server}, MaxVersion: v.version})
				_, port, _ := net.SplitHostPort(hostPort(srv.addr))
				cfg := &tls.Config{RootCAs: newPKI(t).pool, MinVersion: v.version}
				tr := newTrip(tripMessage(256<<10, 1))
				require.NoError(t, eng.Dial("tcp://"+net.JoinHostPort(host, port), tr, DialTLS(cfg)))
				tr.wait(t)
				require.True(t, tr.opened, "no OnOpen: %v", tr.err)
				assert.NoError(t, tr.err)
				assert.Equal(t, Dialed, tr.origin)
				assert.Equal(t, tr.msg, tr.got, "the echo differs")
				s := <-seen
				require.True(t, s.ok, "ConnectionState in OnOpen")
				assert.True(t, s.state.HandshakeComplete)
				assert.Equal(t, v.version, s.state.Version)
				require.NotEmpty(t, s.state.PeerCertificates)
				assert.Equal(t, "localhost", s.state.PeerCertificates[0].Subject.CommonName)
				sniWant := host
				if host == "127.0.0.1" {
					sniWant = "" // an IP address is verified, never sent as SNI
				}
				assert.Equal(t, sniWant, (<-srv.states).ServerName)
				assert.Empty(t, cfg.ServerName, "the caller's configuration changed")
				st := closedStats(t, eng)
				assert.EqualValues(t, 1, st.Dialed)
				assert.Zero(t, st.DialFailed+st.TLSHandshakeFailures+st.TLSHandshakeTimeouts)
			})
		}
	}
}

// TestTLSDialVerificationFails: a server whose certificate does not name
// the host, or comes from an unknown authority, fails the dial with
// crypto/tls's error, which errors.As finds; the connection is closed,
// the server hears the client's alert, and both counters count it.
func TestTLSDialVerificationFails(t *testing.T) {
	tests := []struct {
		name  string
		cfg   *tls.Config
		cause any // a pointer to the x509 error errors.As must find
	}{
		{"wrong name", &tls.Config{RootCAs: newPKI(t).pool, ServerName: "sluice.invalid"}, new(x509.HostnameError)},
		{"unknown authority", nil, new(x509.UnknownAuthorityError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &tripper{}
			eng := runClient(t, h, WithNumEventLoop(1))
			srv := goTLSServer(t, serverTLS(t))
			tr := newTrip([]byte("never sent"))
			require.NoError(t, eng.Dial(srv.addr, tr, DialTLS(tt.cfg)))
			tr.wait(t)
			assert.False(t, tr.opened, "opened with an unverified server")
			var oe *net.OpError
			require.ErrorAs(t, tr.err, &oe)
			assert.Equal(t, "dial", oe.Op)
			var cve *tls.CertificateVerificationError
			require.ErrorAs(t, tr.err, &cve)
			assert.ErrorAs(t, tr.err, tt.cause)
			assert.Equal(t, srv.addr, tr.addr)
			select {
			case err := <-srv.errs:
				assert.ErrorContains(t, err, "bad certificate", "the server did not hear the client's alert")
			case <-time.After(10 * time.Second):
				t.Fatal("the server's handshake did not fail")
			}
			st := closedStats(t, eng)
			assert.EqualValues(t, 1, st.DialFailed)
			assert.EqualValues(t, 1, st.TLSHandshakeFailures)
			assert.Zero(t, st.Dialed)
			assert.Zero(t, h.opens.Load())
		})
	}
}

// TestTLSDialClientCertificate: a server that requires a client
// certificate sees the one DialTLS's configuration holds. Without one,
// TLS 1.2's handshake fails, so the dial does; TLS 1.3's client ends its
// handshake before the server refuses, so the connection opens and
// closes with the server's alert, as with crypto/tls.
func TestTLSDialClientCertificate(t *testing.T) {
	p := newPKI(t)
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			h := &tripper{}
			eng := runClient(t, h, WithNumEventLoop(1))
			cfg := serverTLS(t)
			cfg.ClientAuth, cfg.ClientCAs, cfg.MaxVersion = tls.RequireAndVerifyClientCert, p.pool, v.version
			srv := goTLSServer(t, cfg)

			ccfg := clientTLS(t, v.version)
			ccfg.Certificates = []tls.Certificate{p.client}
			tr := newTrip(tripMessage(1000, 2))
			require.NoError(t, eng.Dial(srv.addr, tr, DialTLS(ccfg)))
			tr.wait(t)
			require.True(t, tr.opened, "no OnOpen: %v", tr.err)
			assert.Equal(t, tr.msg, tr.got)
			s := <-srv.states
			require.Len(t, s.PeerCertificates, 1)
			assert.Equal(t, "client", s.PeerCertificates[0].Subject.CommonName)

			without := newTrip(tripMessage(1000, 3))
			require.NoError(t, eng.Dial(srv.addr, without, DialTLS(clientTLS(t, v.version))))
			without.wait(t)
			assert.Equal(t, v.version == tls.VersionTLS13, without.opened)
			assert.ErrorContains(t, without.err, "remote error: tls: ")
			assert.Error(t, <-srv.errs)
			st := closedStats(t, eng)
			if v.version == tls.VersionTLS13 {
				assert.EqualValues(t, 2, st.Dialed)
				assert.Zero(t, st.DialFailed+st.TLSHandshakeFailures)
			} else {
				assert.EqualValues(t, 1, st.Dialed)
				assert.EqualValues(t, 1, st.DialFailed)
				assert.EqualValues(t, 1, st.TLSHandshakeFailures)
			}
		})
	}
}

// TestTLSDialALPNAndResumption: the protocol agreed by ALPN shows in
// ConnectionState, and a second dial with the same ClientSessionCache
// resumes the first's session.
func TestTLSDialALPNAndResumption(t *testing.T) {
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			h, seen := tlsTripper()
			eng := runClient(t, h, WithNumEventLoop(1))
			srv := goTLSServer(t, serverTLS(t))
			cfg := clientTLS(t, v.version)
			cfg.NextProtos = []string{"sluice"}
			cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			for i, resumed := range []bool{false, true} {
				// The echo has the client read what follows the handshake,
				// a TLS 1.3 server's ticket among it.
				tr := newTrip([]byte("ping"))
				require.NoError(t, eng.Dial(srv.addr, tr, DialTLS(cfg)))
				tr.wait(t)
				require.True(t, tr.opened, "no OnOpen: %v", tr.err)
				s := <-seen
				assert.Equal(t, "sluice", s.state.NegotiatedProtocol)
				assert.Equal(t, resumed, s.state.DidResume, "dial %d", i)
				assert.Equal(t, resumed, (<-srv.states).DidResume, "dial %d, as the server saw it", i)
			}
		})
	}
}

// TestTLSDialSluiceServer: the engine as client and as server, dialed and
// enrolled; an enrolled socket is verified against the ServerName given,
// and without one fails as tls.Client does.
func TestTLSDialSluiceServer(t *testing.T) {
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			h, seen := tlsTripper()
			eng := runClient(t, h, WithNumEventLoop(2))
			srv := newLifetimes()
			served := make(chan tlsSeen, 4)
			srv.onOpen = func(c Conn) {
				s, ok := c.ConnectionState()
				served <- tlsSeen{s, ok}
			}
			_, addr := serve(t, srv, WithTLS(serverTLS(t)), WithNumEventLoop(2))

			cfg := clientTLS(t, v.version)
			cfg.ServerName = "" // the host dialed: 127.0.0.1, in the certificate's addresses
			cfg.NextProtos = []string{"sluice"}
			dialed := newTrip(tripMessage(1<<20, 4))
			require.NoError(t, eng.Dial(addr, dialed, DialTLS(cfg)))

			enrolled := newTrip(tripMessage(64<<10, 5))
			require.NoError(t, eng.Enroll(dial(t, addr), enrolled, DialTLS(clientTLS(t, v.version))))

			for _, tr := range []*trip{dialed, enrolled} {
				tr.wait(t)
				require.True(t, tr.opened, "no OnOpen: %v", tr.err)
				assert.NoError(t, tr.err)
				assert.Equal(t, tr.msg, tr.got, "the echo differs")
			}
			assert.Equal(t, Dialed, dialed.origin)
			assert.Equal(t, Enrolled, enrolled.origin)
			for range 2 {
				c, s := <-seen, <-served
				require.True(t, c.ok && s.ok)
				assert.Equal(t, v.version, c.state.Version)
				assert.Equal(t, v.version, s.state.Version)
			}

			unnamed := newTrip(nil)
			require.NoError(t, eng.Enroll(dial(t, addr), unnamed, DialTLS(&tls.Config{RootCAs: newPKI(t).pool})))
			unnamed.wait(t)
			assert.False(t, unnamed.opened)
			var oe *net.OpError
			require.ErrorAs(t, unnamed.err, &oe)
			assert.Equal(t, "enroll", oe.Op)
			assert.ErrorContains(t, unnamed.err, "ServerName")

			st := closedStats(t, eng)
			assert.EqualValues(t, 1, st.Dialed)
			assert.EqualValues(t, 1, st.Enrolled, "an enrollment counts once its handshake is over")
			assert.EqualValues(t, 1, st.DialFailed)
			assert.EqualValues(t, 1, st.TLSHandshakeFailures)
		})
	}
}

// TestTLSDialHandshakeBounds: the handshake timeout and the bound on
// handshakes under way hold for dials as for accepted connections, and
// fail the dial with their errors.
func TestTLSDialHandshakeBounds(t *testing.T) {
	h := &tripper{}
	eng := runClient(t, h, WithNumEventLoop(1), WithTLSMaxHandshakes(1),
		WithTLSHandshakeTimeout(300*time.Millisecond))
	target := silentListener(t) // closed first: the engine's leak check counts its sockets
	cfg := clientTLS(t, 0)
	slow, refused := newTrip(nil), newTrip(nil)
	require.NoError(t, eng.Dial(target, slow, DialTLS(cfg)))
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 1 },
		func() string { return "the first handshake did not start" })
	require.NoError(t, eng.Dial(target, refused, DialTLS(cfg)))
	refused.wait(t)
	assert.ErrorIs(t, refused.err, ErrTooManyHandshakes)
	slow.wait(t)
	assert.ErrorIs(t, slow.err, ErrTLSHandshakeTimeout)
	assert.GreaterOrEqual(t, slow.endedAt.Sub(slow.started), 300*time.Millisecond)
	st := closedStats(t, eng)
	assert.EqualValues(t, 2, st.DialFailed)
	assert.EqualValues(t, 1, st.TLSHandshakeFailures)
	assert.EqualValues(t, 1, st.TLSHandshakeTimeouts)
	assert.Zero(t, h.opens.Load())
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 0 },
		func() string { return "a handshake goroutine is still counted" })
}

// TestTLSDialKillAndStopDuringHandshake: a dial killed, or caught by a
// stop, in its handshake fails with ErrKilled or ErrEngineStopped, as one
// still connecting does, and its handshake goroutine ends.
func TestTLSDialKillAndStopDuringHandshake(t *testing.T) {
	h := &tripper{}
	eng, wait := runEngine(t, "", h, WithNumEventLoop(1))
	target := silentListener(t)
	cfg := clientTLS(t, 0)
	handshaking := func() {
		t.Helper()
		waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 1 },
			func() string { return "the handshake did not start" })
	}
	killed := newTrip(nil)
	require.NoError(t, eng.Dial(target, killed, DialTLS(cfg)))
	handshaking()
	ids := slices.Collect(eng.ConnIDs())
	require.Len(t, ids, 1)
	require.NoError(t, eng.Kill(ids[0]))
	killed.wait(t)
	assert.ErrorIs(t, killed.err, ErrKilled)

	stopped := newTrip(nil)
	require.NoError(t, eng.Dial(target, stopped, DialTLS(cfg)))
	handshaking()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, eng.Stop(ctx))
	require.NoError(t, wait())
	stopped.wait(t)
	assert.ErrorIs(t, stopped.err, ErrEngineStopped)

	assert.Zero(t, h.opens.Load())
	st := eng.Stats()
	assert.EqualValues(t, 2, st.DialFailed)
	assert.EqualValues(t, 1, st.Killed)
	assert.Zero(t, st.TLSHandshakeFailures+st.TLSHandshakeTimeouts)
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 0 },
		func() string { return "a handshake goroutine is still counted" })
}

// TestDialTLSConfigIsCopied: each dial takes its own copy of the
// configuration, with renegotiation off whatever it said, so that what
// the caller changes after Dial, and the ServerName the dial fills in,
// touch neither the other; nil is the zero configuration.
func TestDialTLSConfigIsCopied(t *testing.T) {
	cfg := &tls.Config{Renegotiation: tls.RenegotiateFreelyAsClient, NextProtos: []string{"a"}}
	opt := DialTLS(cfg)
	e := &engine{}
	d := e.newDial(nil, []DialOption{opt})
	cfg.NextProtos = []string{"changed"}
	require.NotSame(t, cfg, d.tls)
	assert.Equal(t, tls.RenegotiateNever, d.tls.Renegotiation)
	assert.Equal(t, []string{"a"}, d.tls.NextProtos)
	assert.Equal(t, tls.RenegotiateFreelyAsClient, cfg.Renegotiation, "the caller's configuration changed")
	assert.NotSame(t, d.tls, e.newDial(nil, []DialOption{opt}).tls, "two dials share a configuration")

	zero := e.newDial(nil, []DialOption{DialTLS(nil)}).tls
	require.NotNil(t, zero)
	assert.Equal(t, tls.RenegotiateNever, zero.Renegotiation)
}

// TestTLSDialPanicInAConfigCallback: a DialTLS configuration's callback
// that panics on the handshake's goroutine fails the dial with
// ErrHandlerPanic, not the process.
func TestTLSDialPanicInAConfigCallback(t *testing.T) {
	h := &tripper{}
	eng := runClient(t, h, WithNumEventLoop(1), WithLogger(discardLogger()))
	srv := goTLSServer(t, serverTLS(t))
	cfg := clientTLS(t, 0)
	cfg.VerifyPeerCertificate = func([][]byte, [][]*x509.Certificate) error { panic("verifier gave up") }
	tr := newTrip(nil)
	require.NoError(t, eng.Dial(srv.addr, tr, DialTLS(cfg)))
	tr.wait(t)
	assert.False(t, tr.opened)
	assert.ErrorIs(t, tr.err, ErrHandlerPanic)
	assert.ErrorContains(t, tr.err, "verifier gave up")
	st := closedStats(t, eng)
	assert.EqualValues(t, 1, st.DialFailed)
	assert.EqualValues(t, 1, st.TLSHandshakeFailures)
}

// TestTLSDialResetDuringTheHandshake: a server that resets the connection
// in the handshake fails the dial with the read's error, counted as a
// failed handshake as Stats says of a DialTLS connection's.
func TestTLSDialResetDuringTheHandshake(t *testing.T) {
	h := &tripper{}
	eng := runClient(t, h, WithNumEventLoop(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Read(make([]byte, 5)) // the ClientHello's header
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}()
	t.Cleanup(func() { <-served })
	tr := newTrip(nil)
	require.NoError(t, eng.Dial("tcp://"+ln.Addr().String(), tr, DialTLS(clientTLS(t, 0))))
	tr.wait(t)
	assert.False(t, tr.opened)
	assert.ErrorIs(t, tr.err, syscall.ECONNRESET)
	st := closedStats(t, eng)
	assert.EqualValues(t, 1, st.DialFailed)
	assert.EqualValues(t, 1, st.TLSHandshakeFailures)
}

// TestTLSHandshakeBoundCountsBothSides: WithTLSMaxHandshakes counts the
// handshakes of accepted and dialed connections together.
func TestTLSHandshakeBoundCountsBothSides(t *testing.T) {
	h := &tripper{}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithTLSMaxHandshakes(1), WithNumEventLoop(1))
	dial(t, addr) // an accepted connection whose client says nothing holds the one handshake
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 1 },
		func() string { return "the accepted connection's handshake did not start" })
	tr := newTrip(nil)
	require.NoError(t, eng.Dial(addr, tr, DialTLS(clientTLS(t, 0))))
	tr.wait(t)
	assert.ErrorIs(t, tr.err, ErrTooManyHandshakes)
}

// TestTLSDialUnixSocket: a dial to a unix socket verifies no host of its
// own, so without ServerName (or InsecureSkipVerify) it fails as
// tls.Client does, and with one it is verified against it.
func TestTLSDialUnixSocket(t *testing.T) {
	h := &tripper{}
	eng := runClient(t, h, WithNumEventLoop(1))
	_, addr := serveAddr(t, "unix://"+t.TempDir()+"/tls.sock", echoHandler{}, WithTLS(serverTLS(t)), WithNumEventLoop(1))
	unnamed := newTrip(nil)
	require.NoError(t, eng.Dial(addr, unnamed, DialTLS(&tls.Config{RootCAs: newPKI(t).pool})))
	unnamed.wait(t)
	assert.False(t, unnamed.opened)
	assert.ErrorContains(t, unnamed.err, "ServerName")
	named := newTrip(tripMessage(1000, 7))
	require.NoError(t, eng.Dial(addr, named, DialTLS(clientTLS(t, 0))))
	named.wait(t)
	require.True(t, named.opened, "no OnOpen: %v", named.err)
	assert.Equal(t, named.msg, named.got)
}

// TestTLSCallbackOutlivesItsConnection: a handshake whose connection
// times out while its GetCertificate still runs is reported at once, and
// counts against WithTLSMaxHandshakes until the callback returns; then
// its goroutine ends.
func TestTLSCallbackOutlivesItsConnection(t *testing.T) {
	cfg, release := heldServerTLS(t)
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	eng, addr := serve(t, h, WithTLS(cfg), WithTLSHandshakeTimeout(200*time.Millisecond), WithNumEventLoop(1))
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	raw := dial(t, addr)
	_, err := raw.Write(clientHello(t))
	require.NoError(t, err)
	assert.ErrorIs(t, <-h.errs, ErrTLSHandshakeTimeout)
	assert.True(t, holdsFor(100*time.Millisecond, func() bool { return eng.e.handshakes.Load() == 1 }),
		"the handshake stopped counting while its callback ran")
	goroutines := runtime.NumGoroutine()
	released = true
	close(release)
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 0 && runtime.NumGoroutine() < goroutines },
		func() string {
			return fmt.Sprintf("%d handshakes counted, goroutines %d -> %d", eng.e.handshakes.Load(), goroutines, runtime.NumGoroutine())
		})
}

// TestTLSDialRefusesRenegotiation: a TLS 1.2 server (openssl's) that asks
// the engine's client to renegotiate (HelloRequest) is refused, even
// where the caller's configuration allows it, since a handshake inside a
// record read would block the loop: the connection closes with
// crypto/tls's error, after its alert.
func TestTLSDialRefusesRenegotiation(t *testing.T) {
	cert, key := pemFiles(t)
	in, out := openSSL(t, "s_server", "-tls1_2", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key)
	_, port, ok := strings.Cut(out.waitLine(t, "ACCEPT"), "127.0.0.1:")
	require.True(t, ok)
	h := newLifetimes()
	h.onOpen = func(c Conn) { c.Write([]byte("hello-from-sluice\n")) }
	eng := runClient(t, h)
	cfg := &tls.Config{RootCAs: newPKI(t).pool, ServerName: "localhost", Renegotiation: tls.RenegotiateFreelyAsClient}
	require.NoError(t, eng.Dial("tcp://127.0.0.1:"+strings.TrimSpace(port), nil, DialTLS(cfg)))
	id := h.next(t)
	out.waitLine(t, "hello-from-sluice")
	_, err := io.WriteString(in, "r\n")
	require.NoError(t, err)
	_, cerr := h.waitClosed(t, id)
	assert.ErrorContains(t, cerr, "renegotiation")
}
