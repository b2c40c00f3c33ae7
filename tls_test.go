//go:build unix

package sluice

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPKI is a certificate authority and a server and a client certificate
// it signed, made once for the package's tests.
type testPKI struct {
	pool   *x509.CertPool
	server tls.Certificate
	client tls.Certificate
}

var (
	pkiOnce sync.Once
	pki     testPKI
)

func newPKI(t testing.TB) testPKI {
	t.Helper()
	pkiOnce.Do(func() {
		caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		caTmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "sluice test CA"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign,
		}
		caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
		if err != nil {
			panic(err)
		}
		ca, _ := x509.ParseCertificate(caDER)
		pki.pool = x509.NewCertPool()
		pki.pool.AddCert(ca)
		leaf := func(serial int64, name string, usage x509.ExtKeyUsage) tls.Certificate {
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			tmpl := &x509.Certificate{
				SerialNumber: big.NewInt(serial),
				Subject:      pkix.Name{CommonName: name},
				DNSNames:     []string{name},
				IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
				NotBefore:    time.Now().Add(-time.Hour),
				NotAfter:     time.Now().Add(24 * time.Hour),
				KeyUsage:     x509.KeyUsageDigitalSignature,
				ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
			if err != nil {
				panic(err)
			}
			return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
		}
		pki.server = leaf(2, "localhost", x509.ExtKeyUsageServerAuth)
		pki.client = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	})
	return pki
}

// serverTLS is a server configuration with the test certificate.
func serverTLS(t testing.TB) *tls.Config {
	p := newPKI(t)
	return &tls.Config{Certificates: []tls.Certificate{p.server}, NextProtos: []string{"h2", "sluice"}}
}

// heldServerTLS is serverTLS with a GetCertificate that waits until release
// is closed, as one that fetches a certificate does: the handshake stops
// before its answer.
func heldServerTLS(t testing.TB) (cfg *tls.Config, release chan struct{}) {
	release = make(chan struct{})
	cfg = serverTLS(t)
	cert := cfg.Certificates[0]
	cfg.Certificates = nil
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { <-release; return &cert, nil }
	return cfg, release
}

// clientTLS is a client configuration that trusts the test CA, for the
// given version (zero: any).
func clientTLS(t testing.TB, version uint16) *tls.Config {
	p := newPKI(t)
	return &tls.Config{RootCAs: p.pool, ServerName: "localhost", MinVersion: version, MaxVersion: version}
}

// dialTLS connects to addr with cfg and completes the handshake.
func dialTLS(t testing.TB, addr string, cfg *tls.Config) *tls.Conn {
	t.Helper()
	raw := dial(t, addr)
	c := tls.Client(raw, cfg)
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	require.NoError(t, c.Handshake())
	return c
}

var tlsVersions = []struct {
	name    string
	version uint16
}{{"TLS1.2", tls.VersionTLS12}, {"TLS1.3", tls.VersionTLS13}}

func TestTLSEcho(t *testing.T) {
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			_, addr := serve(t, echoHandler{}, WithTLS(serverTLS(t)))
			c := dialTLS(t, addr, clientTLS(t, v.version))
			assert.Equal(t, v.version, c.ConnectionState().Version)
			for _, msg := range []string{"hello", "world", strings.Repeat("x", 1000)} {
				_, err := c.Write([]byte(msg))
				require.NoError(t, err)
				got := make([]byte, len(msg))
				_, err = io.ReadFull(c, got)
				require.NoError(t, err)
				assert.Equal(t, msg, string(got))
			}
		})
	}
}

// TestTLSLargePayloads sends several MiB each way at once, so that the
// records cross reads in every way and output queues behind a full socket.
func TestTLSLargePayloads(t *testing.T) {
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			h := newLifetimes()
			_, addr := serve(t, h, WithTLS(serverTLS(t)))
			c := dialTLS(t, addr, clientTLS(t, v.version))
			c.SetDeadline(time.Now().Add(30 * time.Second))
			msg := make([]byte, 4<<20+123)
			rand.Read(msg)
			errc := make(chan error, 1)
			go func() {
				_, err := c.Write(msg)
				errc <- err
			}()
			got := make([]byte, len(msg))
			_, err := io.ReadFull(c, got)
			require.NoError(t, err)
			require.NoError(t, <-errc)
			assert.True(t, bytes.Equal(msg, got), "the echo differs")

			// Idle again, the connection's wire keeps no large buffer.
			sc := h.conn(h.next(t)).(*conn)
			kept := make(chan int, 1)
			require.NoError(t, sc.Loop().Execute(func() {
				w := &sc.ext.sec.wire
				kept <- cap(w.in) + cap(w.own)
			}))
			assert.LessOrEqual(t, <-kept, 2*ownSmall)
		})
	}
}

// TestTLSSlowReader has the server push far more than the client reads at
// first, so that the server's sealed output waits in its queue.
func TestTLSSlowReader(t *testing.T) {
	const size = 8 << 20
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		c.Next(-1)
		c.Write(make([]byte, size))
		return None
	}
	_, addr := serve(t, h, WithTLS(serverTLS(t)))
	c := dialTLS(t, addr, clientTLS(t, 0))
	c.SetDeadline(time.Now().Add(30 * time.Second))
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	sc := h.conn(h.next(t))
	waitFor(t, 5*time.Second, func() bool { return sc.OutboundQueued() > 0 }, func() string { return "nothing queued" })
	n, err := io.ReadFull(c, make([]byte, size))
	require.NoError(t, err)
	assert.Equal(t, size, n)
}

// tlsSeen is what OnOpen saw of a TLS connection.
type tlsSeen struct {
	state tls.ConnectionState
	ok    bool
}

func TestTLSConnectionStateALPNAndResumption(t *testing.T) {
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			seen := make(chan tlsSeen, 4)
			h := newLifetimes()
			h.onOpen = func(c Conn) {
				s, ok := c.ConnectionState()
				seen <- tlsSeen{s, ok}
			}
			h.traffic = echoHandler{}.OnTraffic
			_, addr := serve(t, h, WithTLS(serverTLS(t)))
			cfg := clientTLS(t, v.version)
			cfg.NextProtos = []string{"sluice"}
			cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			for i, resumed := range []bool{false, true} {
				c := dialTLS(t, addr, cfg)
				// An echo, so that a TLS 1.3 client has read its ticket.
				require.NoError(t, echoOnce(c, []byte("ping")))
				s := <-seen
				require.True(t, s.ok)
				assert.Equal(t, "sluice", s.state.NegotiatedProtocol)
				assert.Equal(t, v.version, s.state.Version)
				assert.Equal(t, resumed, s.state.DidResume, "connection %d", i)
				assert.True(t, s.state.HandshakeComplete)
				c.Close()
			}
		})
	}
}

func TestTLSConnectionStateOfPlainConn(t *testing.T) {
	seen := make(chan bool, 1)
	h := newLifetimes()
	h.onOpen = func(c Conn) {
		_, ok := c.ConnectionState()
		seen <- ok
	}
	_, addr := serve(t, h)
	dial(t, addr)
	assert.False(t, <-seen)
}

func TestTLSClientCertificates(t *testing.T) {
	p := newPKI(t)
	seen := make(chan tlsSeen, 2)
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	h.onOpen = func(c Conn) {
		s, ok := c.ConnectionState()
		seen <- tlsSeen{s, ok}
	}
	h.traffic = echoHandler{}.OnTraffic
	cfg := serverTLS(t)
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.ClientCAs = p.pool
	eng, addr := serve(t, h, WithTLS(cfg))

	ccfg := clientTLS(t, 0)
	ccfg.Certificates = []tls.Certificate{p.client}
	c := dialTLS(t, addr, ccfg)
	require.NoError(t, echoOnce(c, []byte("ping")))
	s := <-seen
	require.True(t, s.ok)
	require.Len(t, s.state.PeerCertificates, 1)
	assert.Equal(t, "client", s.state.PeerCertificates[0].Subject.CommonName)

	// Without a certificate the handshake fails, unseen by OnOpen.
	raw := dial(t, addr)
	nc := tls.Client(raw, clientTLS(t, 0))
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	err := nc.Handshake()
	if err == nil {
		// TLS 1.3: the client's handshake ends before the server checks.
		_, err = nc.Read(make([]byte, 1))
	}
	require.Error(t, err)
	ferr := <-h.errs
	assert.Contains(t, ferr.Error(), "certificate")
	waitFor(t, 5*time.Second, func() bool { return eng.Stats().TLSHandshakeFailures == 1 },
		func() string { return "no failure counted" })
	assert.Len(t, seen, 0)
}

// tlsFailures is lifetimes that records the failed handshakes.
type tlsFailures struct {
	*lifetimes
	errs chan error
}

func (h *tlsFailures) OnTLSFailed(remote net.Addr, err error) {
	h.errs <- err
}

// TestTLSBadClientsCloseUnseen sends what is no handshake, a ClientHello
// cut short, and nothing at all: each is closed, reported, counted, and
// never reaches OnOpen or OnClose; serve's check finds no goroutine left.
func TestTLSBadClientsCloseUnseen(t *testing.T) {
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 8)}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithTLSHandshakeTimeout(300*time.Millisecond))

	expectClosed := func(c net.Conn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "still open")
	}

	garbage := dial(t, addr)
	garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	expectClosed(garbage)
	assert.Error(t, <-h.errs)

	// A ClientHello's first bytes, then the end of the stream.
	cut := dial(t, addr)
	cut.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00})
	cut.(*net.TCPConn).CloseWrite()
	expectClosed(cut)
	assert.Error(t, <-h.errs)

	silent := dial(t, addr)
	expectClosed(silent)
	assert.ErrorIs(t, <-h.errs, ErrTLSHandshakeTimeout)

	s := eng.Stats()
	assert.Equal(t, uint64(2), s.TLSHandshakeFailures)
	assert.Equal(t, uint64(1), s.TLSHandshakeTimeouts)
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Empty(t, h.opened)
	assert.Empty(t, h.closed)
}

// recordTap keeps the wire bytes a client's TLS connection reads.
type recordTap struct {
	net.Conn
	mu  sync.Mutex
	got []byte
}

func (r *recordTap) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.got = append(r.got, p[:n]...)
	r.mu.Unlock()
	return n, err
}

// lastRecordType returns the content type of the last whole record in b.
func lastRecordType(b []byte) byte {
	var typ byte
	for len(b) >= 5 {
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if len(b) < n {
			break
		}
		typ, b = b[0], b[n:]
	}
	return typ
}

// TestTLSCloseNotifyFromServer: a graceful close sends close_notify, an
// alert record, before the end of the stream.
func TestTLSCloseNotifyFromServer(t *testing.T) {
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		b, _ := c.Next(-1)
		c.Write(b)
		return Close
	}
	_, addr := serve(t, h, WithTLS(serverTLS(t)))
	tap := &recordTap{Conn: dial(t, addr)}
	c := tls.Client(tap, clientTLS(t, tls.VersionTLS12))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Write([]byte("bye"))
	require.NoError(t, err)
	got, err := io.ReadAll(c)
	require.NoError(t, err, "the stream ended with close_notify")
	assert.Equal(t, "bye", string(got))
	tap.mu.Lock()
	defer tap.mu.Unlock()
	assert.Equal(t, byte(21), lastRecordType(tap.got), "the last record is an alert")
}

// TestTLSCloseNotifyFromClient: the client's close_notify, without a TCP
// end of stream, ends the connection as the end of stream does, and the
// server answers with its own.
func TestTLSCloseNotifyFromClient(t *testing.T) {
	for _, v := range tlsVersions {
		t.Run(v.name, func(t *testing.T) {
			h := newLifetimes()
			_, addr := serve(t, h, WithTLS(serverTLS(t)))
			c := dialTLS(t, addr, clientTLS(t, v.version))
			require.NoError(t, echoOnce(c, []byte("ping")))
			id := h.next(t)
			require.NoError(t, c.CloseWrite())
			_, err := io.ReadAll(c)
			assert.NoError(t, err, "the server's close_notify")
			_, cerr := h.waitClosed(t, id)
			assert.NoError(t, cerr)
		})
	}
}

// TestTLSTruncatedAndCorruptRecords: a record cut short by the end of the
// stream is an error, not data; a record that does not authenticate closes
// its connection, and only it.
func TestTLSTruncatedAndCorruptRecords(t *testing.T) {
	h := newLifetimes()
	_, addr := serve(t, h, WithTLS(serverTLS(t)))
	open := func() (*tls.Conn, net.Conn, uint64) {
		raw := dial(t, addr)
		c := tls.Client(raw, clientTLS(t, 0))
		c.SetDeadline(time.Now().Add(10 * time.Second))
		require.NoError(t, c.Handshake())
		require.NoError(t, echoOnce(c, []byte("ping")))
		return c, raw, h.next(t)
	}
	_, raw, id := open()
	raw.Write([]byte{23, 3, 3, 0, 40, 1, 2, 3})
	raw.(*net.TCPConn).CloseWrite()
	_, err := h.waitClosed(t, id)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	good, _, gid := open()
	_, raw, id = open()
	raw.Write(append([]byte{23, 3, 3, 0, 40}, make([]byte, 40)...))
	_, err = h.waitClosed(t, id)
	assert.Error(t, err)
	_, err = good.Write([]byte("pong"))
	require.NoError(t, err)
	_, err = io.ReadFull(good, make([]byte, 4))
	require.NoError(t, err, "another connection goes on")
	_, closed := h.closing(gid)
	assert.False(t, closed)
}

func TestTLSKill(t *testing.T) {
	h := newLifetimes()
	eng, addr := serve(t, h, WithTLS(serverTLS(t)))
	c := dialTLS(t, addr, clientTLS(t, 0))
	require.NoError(t, echoOnce(c, []byte("ping")))
	id := h.next(t)
	require.NoError(t, eng.Kill(id))
	_, err := h.waitClosed(t, id)
	assert.ErrorIs(t, err, ErrKilled)
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err)
}

// TestTLSAndPlainListeners: one engine serves TLS on one listener and
// plain TCP on another.
func TestTLSAndPlainListeners(t *testing.T) {
	eng, addr := serve(t, echoHandler{}, WithListener("tcp://127.0.0.1:0", ListenTLS(serverTLS(t))))
	plain := dial(t, addr)
	_, err := plain.Write([]byte("plain"))
	require.NoError(t, err)
	_, err = io.ReadFull(plain, make([]byte, 5))
	require.NoError(t, err)
	a := eng.Addrs()[1]
	c := dialTLS(t, a.Network()+"://"+a.String(), clientTLS(t, 0))
	_, err = c.Write([]byte("secret"))
	require.NoError(t, err)
	got := make([]byte, 6)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "secret", string(got))
}

// TestTLSAfterProxyHeader: the PROXY header comes first, in clear, then
// the handshake; the handler sees the client the header names.
func TestTLSAfterProxyHeader(t *testing.T) {
	h := newLifetimes()
	remote := make(chan string, 1)
	h.onOpen = func(c Conn) { remote <- c.RemoteAddr().String() }
	eng, _ := serve(t, h, WithListener("tcp://127.0.0.1:0", ListenTLS(serverTLS(t)), ListenProxyProtocol(ProxyRequired)))
	a := eng.Addrs()[1]
	raw := dial(t, a.Network()+"://"+a.String())
	_, err := raw.Write([]byte("PROXY TCP4 192.0.2.7 127.0.0.1 4321 80\r\n"))
	require.NoError(t, err)
	c := tls.Client(raw, clientTLS(t, 0))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	require.NoError(t, echoOnce(c, []byte("ping")))
	assert.Equal(t, "192.0.2.7:4321", <-remote)
}

// TestTLSOpenSSLClient echoes through `openssl s_client`.
func TestTLSOpenSSLClient(t *testing.T) {
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed")
	}
	eng, _ := serve(t, echoHandler{}, WithTLS(serverTLS(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "s_client", "-quiet", "-connect", eng.Addrs()[0].String())
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	_, err = in.Write([]byte("hello from openssl\n"))
	require.NoError(t, err)
	got := make([]byte, len("hello from openssl\n"))
	_, err = io.ReadFull(out, got)
	require.NoError(t, err)
	assert.Equal(t, "hello from openssl\n", string(got))
}

// TestTLSMaxHandshakes: past the bound on handshakes under way, a new
// connection is refused, reported and counted, and the one under way goes
// on.
func TestTLSMaxHandshakes(t *testing.T) {
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithTLSMaxHandshakes(1))
	slow := dial(t, addr) // holds the one handshake, saying nothing
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 1 },
		func() string { return "the first handshake did not start" })
	refused := dial(t, addr)
	refused.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := refused.Read(make([]byte, 1))
	assert.Error(t, err)
	assert.ErrorIs(t, <-h.errs, ErrTooManyHandshakes)
	assert.Equal(t, uint64(1), eng.Stats().TLSHandshakeFailures)
	c := tls.Client(slow, clientTLS(t, 0))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	require.NoError(t, c.Handshake())
	require.NoError(t, echoOnce(c, []byte("ping")))
}

// TestTLSMaxInboundBuffered: the bound on unread inbound bytes counts
// plaintext, and holds over TLS.
func TestTLSMaxInboundBuffered(t *testing.T) {
	h := newLifetimes()
	h.traffic = func(c Conn) Action { return None } // reads nothing
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithMaxInboundBuffered(64<<10))
	c := dialTLS(t, addr, clientTLS(t, 0))
	go c.Write(make([]byte, 256<<10)) // stops when the connection closes
	// The client's handshake ends before the server's, so its bytes may
	// pile up while the server's handshake still runs: then the
	// connection closes unopened, and is counted all the same.
	waitFor(t, 10*time.Second, func() bool { return eng.Stats().InboundTooLarge == 1 },
		func() string { return "the connection was not closed for its unread plaintext" })
	select {
	case id := <-h.ids:
		_, err := h.waitClosed(t, id)
		assert.ErrorIs(t, err, ErrInboundTooLarge)
	default:
	}
}

// TestTLSMaxOutbound: writes past WithMaxOutbound are refused over TLS too,
// counting the sealed bytes queued.
func TestTLSMaxOutbound(t *testing.T) {
	refused := make(chan error, 1)
	h := newLifetimes()
	h.traffic = func(c Conn) Action {
		c.Next(-1)
		big := make([]byte, 256<<10)
		var err error
		for i := 0; i < 64 && err == nil; i++ {
			_, err = c.Write(big)
		}
		refused <- err
		return None
	}
	_, addr := serve(t, h, WithTLS(serverTLS(t)), WithMaxOutbound(1<<20))
	c := dialTLS(t, addr, clientTLS(t, 0))
	_, err := c.Write([]byte("go"))
	require.NoError(t, err)
	assert.ErrorIs(t, <-refused, ErrOutboundFull)
}

// TestTLSOptionsDefaults: zero or less means the defaults.
func TestTLSOptionsDefaults(t *testing.T) {
	o := defaultOptions()
	WithTLSHandshakeTimeout(0)(&o)
	WithTLSMaxHandshakes(-1)(&o)
	assert.Equal(t, DefaultTLSHandshakeTimeout, o.tlsTimeout)
	assert.Equal(t, DefaultTLSMaxHandshakes, o.tlsMaxHandshakes)
}

// TestTLSConfigIsCopied: changing the configuration after Run changes
// nothing the engine serves, and renegotiation stays off.
func TestTLSConfigIsCopied(t *testing.T) {
	cfg := serverTLS(t)
	cfg.Renegotiation = tls.RenegotiateFreelyAsClient
	eng, addr := serve(t, echoHandler{}, WithTLS(cfg))
	cfg.NextProtos = []string{"changed"}
	ccfg := clientTLS(t, 0)
	ccfg.NextProtos = []string{"sluice"}
	c := dialTLS(t, addr, ccfg)
	assert.Equal(t, "sluice", c.ConnectionState().NegotiatedProtocol)
	for _, l := range eng.e.loops {
		for _, ln := range l.listeners {
			assert.Equal(t, tls.RenegotiateNever, ln.tls.Renegotiation)
		}
	}
}

// TestTLSWipeBuffers: WithWipeBuffers clears what a TLS connection's wire
// held once the connection closes (the part of a record still to come,
// the bytes a handshake cut short had read) and the loop's plaintext
// buffer after each use. Without it the same bytes are found where the
// test looks, which shows that it looks in the right places.
func TestTLSWipeBuffers(t *testing.T) {
	secret := bytes.Repeat([]byte("sluice-secret "), 24)
	for _, wipe := range []bool{false, true} {
		t.Run(fmt.Sprintf("wipe=%v", wipe), func(t *testing.T) {
			h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, 4)}
			eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithWipeBuffers(wipe), WithNumEventLoop(1))
			l := eng.e.loops[0]
			onLoop := func(fn func()) {
				done := make(chan struct{})
				require.NoError(t, eng.Loop(0).Execute(func() { fn(); close(done) }))
				<-done
			}
			// wireOf returns the array under w's input, as it is now. The
			// loop may write it until the secret is whole there, so the
			// test looks on the loop, and again only once it has closed.
			wireOf := func(w *wire) []byte {
				w.mu.Lock()
				defer w.mu.Unlock()
				return w.own[:cap(w.own)]
			}

			// The echo's plaintext passed through the loop's buffer.
			raw := dial(t, addr)
			c := tls.Client(raw, clientTLS(t, 0))
			c.SetDeadline(time.Now().Add(10 * time.Second))
			require.NoError(t, echoOnce(c, secret))
			var inPlain bool
			onLoop(func() { inPlain = bytes.Contains(l.plain[:cap(l.plain)], secret) })
			assert.Equal(t, !wipe, inPlain, "the secret in the loop's plaintext buffer")

			// A record begun, its body the secret, then the end of the
			// stream: the wire keeps the part until the close.
			id := h.next(t)
			sc := h.conn(id).(*conn)
			_, err := raw.Write(append([]byte{23, 3, 3, 0x10, 0}, secret...))
			require.NoError(t, err)
			var kept []byte
			waitFor(t, 5*time.Second, func() bool {
				var whole bool
				onLoop(func() {
					kept = wireOf(&sc.ext.sec.wire)
					whole = bytes.Contains(kept, secret)
				})
				return whole
			}, func() string { return "the part of a record never reached the wire" })
			require.NoError(t, raw.(*net.TCPConn).CloseWrite())
			_, err = h.waitClosed(t, id)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Equal(t, !wipe, bytes.Contains(kept, secret), "the secret in the wire after the close")

			// A ClientHello's record begun, its body the secret, then the
			// end of the stream: the handshake fails, unseen.
			raw = dial(t, addr)
			_, err = raw.Write(append([]byte{22, 3, 1, 0x10, 0}, secret...))
			require.NoError(t, err)
			waitFor(t, 5*time.Second, func() bool {
				var whole bool
				onLoop(func() {
					for _, c := range l.conns {
						if c != nil && c.state == stateHandshake {
							kept = wireOf(&c.ext.sec.wire)
							whole = bytes.Contains(kept, secret)
						}
					}
				})
				return whole
			}, func() string { return "the handshake's bytes never reached the wire" })
			require.NoError(t, raw.(*net.TCPConn).CloseWrite())
			assert.Error(t, <-h.errs)
			assert.Equal(t, !wipe, bytes.Contains(kept, secret), "the secret in the handshake's wire after the close")
		})
	}
}

// TestTLSThousandHandshakesAtOnce: 1,000 clients connect and say nothing
// until the engine runs all 1,000 handshakes at once, its bound raised to
// that; then every client sends its ClientHello, and every handshake
// completes and echoes.
func TestTLSThousandHandshakesAtOnce(t *testing.T) {
	const n = 1000
	h := newLifetimes()
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithTLSMaxHandshakes(n),
		WithTLSHandshakeTimeout(time.Minute), WithNumEventLoop(2))
	raws := make([]net.Conn, n)
	for i := range raws {
		raws[i] = dial(t, addr)
	}
	waitFor(t, 20*time.Second, func() bool { return eng.e.handshakes.Load() == n }, func() string {
		return fmt.Sprintf("%d of %d handshakes under way", eng.e.handshakes.Load(), n)
	})
	cfg := clientTLS(t, 0)
	cfg.CurvePreferences = []tls.CurveID{tls.X25519} // ML-KEM is slow under the race detector
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for _, raw := range raws {
		wg.Go(func() {
			c := tls.Client(raw, cfg)
			c.SetDeadline(time.Now().Add(time.Minute))
			errs <- echoOnce(c, []byte("ping"))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, h.ids, n, "OnOpen ran for each")
	s := eng.Stats()
	assert.Zero(t, s.TLSHandshakeFailures+s.TLSHandshakeTimeouts)
	waitFor(t, 5*time.Second, func() bool { return eng.e.handshakes.Load() == 0 },
		func() string { return "handshakes still counted" })
}

// handshakeGoroutines counts the goroutines that run a handshake
// (beginHandshake's).
func handshakeGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), ".(*eventloop).beginHandshake.func")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestTLSHandshakeFlood: a flood of clients past WithTLSMaxHandshakes is
// refused as it comes, each closed, counted and reported, with no
// goroutine left for it; the handshakes under way complete, and an
// established TLS connection and the engine carry on.
func TestTLSHandshakeFlood(t *testing.T) {
	const limit, flood = 8, 400
	h := &tlsFailures{lifetimes: newLifetimes(), errs: make(chan error, flood+limit)}
	eng, addr := serve(t, h, WithTLS(serverTLS(t)), WithTLSMaxHandshakes(limit), WithNumEventLoop(2))
	established := dialTLS(t, addr, clientTLS(t, 0))
	require.NoError(t, echoOnce(established, []byte("before")))

	// Each holder holds a handshake, saying nothing. The goroutines to
	// come back to are those once every holder's handshake goroutine runs,
	// which is after the count of handshakes rises, and after what a
	// driver starts for each connection (the development backend's reader
	// and writer).
	holders := make([]net.Conn, limit)
	for i := range holders {
		holders[i] = dial(t, addr)
	}
	waitFor(t, 5*time.Second, func() bool {
		return eng.e.handshakes.Load() == limit && handshakeGoroutines() == limit
	}, func() string {
		return fmt.Sprintf("%d of %d handshakes under way, %d handshake goroutines",
			eng.e.handshakes.Load(), limit, handshakeGoroutines())
	})
	goroutines := runtime.NumGoroutine()

	// Four flooders, each connecting and waiting to be closed.
	_, hp, _ := strings.Cut(addr, "://")
	var wg sync.WaitGroup
	closed := make(chan error, flood)
	for range 4 {
		wg.Go(func() {
			for range flood / 4 {
				c, err := net.DialTimeout("tcp", hp, 5*time.Second)
				if err != nil {
					closed <- err
					continue
				}
				c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00}) // a ClientHello's first bytes
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err = io.Copy(io.Discard, c)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					closed <- errors.New("a flooder was not closed")
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	close(closed)
	for err := range closed {
		require.NoError(t, err)
	}
	waitFor(t, 5*time.Second, func() bool { return eng.Stats().TLSHandshakeFailures == flood },
		func() string {
			return fmt.Sprintf("%d of %d refusals counted", eng.Stats().TLSHandshakeFailures, flood)
		})
	for range flood {
		assert.ErrorIs(t, <-h.errs, ErrTooManyHandshakes)
	}
	assert.EqualValues(t, limit, eng.e.handshakes.Load(), "the handshakes under way")
	waitFor(t, 5*time.Second, func() bool { return runtime.NumGoroutine() <= goroutines }, func() string {
		return fmt.Sprintf("goroutines %d -> %d", goroutines, runtime.NumGoroutine())
	})

	require.NoError(t, echoOnce(established, []byte("after")))
	for _, raw := range holders {
		c := tls.Client(raw, clientTLS(t, 0))
		c.SetDeadline(time.Now().Add(10 * time.Second))
		require.NoError(t, echoOnce(c, []byte("held")))
	}
	require.NoError(t, echoOnce(dialTLS(t, addr, clientTLS(t, 0)), []byte("new")))
	s := eng.Stats()
	assert.EqualValues(t, flood, s.TLSHandshakeFailures)
	assert.Zero(t, s.TLSHandshakeTimeouts)
}
