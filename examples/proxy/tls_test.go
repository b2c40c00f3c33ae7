//go:build unix

package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/internal/selfsigned"
	"github.com/sluicenet/sluice/poller"
)

// testCert is a self-signed certificate: as a server's configuration, as
// a pool that trusts it, and as a PEM file for -backend-ca.
type testCert struct {
	server *tls.Config
	pool   *x509.CertPool
	file   string
}

func newTestCert(t *testing.T) testCert {
	t.Helper()
	certPEM, keyPEM, err := selfsigned.PEM()
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	file := filepath.Join(t.TempDir(), "cert.pem")
	require.NoError(t, os.WriteFile(file, certPEM, 0o600))
	return testCert{&tls.Config{Certificates: []tls.Certificate{cert}}, pool, file}
}

// dialTLS connects to a proxy address with TLS, trusting pool.
func dialTLS(t *testing.T, addr string, pool *x509.CertPool) *tls.Conn {
	t.Helper()
	c := tls.Client(dial(t, addr), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	require.NoError(t, c.Handshake())
	return c
}

// The proxy terminates TLS: a TLS client's bytes reach a plain backend
// and come back; a client that does not speak TLS is closed before any
// backend is dialed for it, and counted.
func TestTLSTerminate(t *testing.T) {
	cert := newTestCert(t)
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		backend := startEcho(t, "")
		tp := startProxy(t, config{backends: []string{backend.addr}, poller: k, tls: cert.server})
		c := dialTLS(t, tp.addr(), cert.pool)
		require.NoError(t, echo(c, payload(1, 1<<20)))
		c.Close()

		plain := dial(t, tp.addr())
		plain.Write([]byte("PING\r\n"))
		_, err := io.Copy(io.Discard, plain)
		require.NoError(t, err, "the plain client was not closed")
		tp.settled(t)
		s := tp.snapshot()
		assert.EqualValues(t, 1, s.Engine.TLSHandshakeFailures)
		assert.EqualValues(t, 1, backend.opened.Load(), "a backend was dialed for the plain client")
	})
}

// The proxy originates TLS: a plain client's bytes reach a TLS backend,
// verified against -backend-ca (for its host, or -backend-server-name) or
// not at all; a backend that cannot be verified, by an unknown authority
// or for the wrong name, counts as a failed connect, and its client is
// reset.
func TestTLSOriginate(t *testing.T) {
	cert := newTestCert(t)
	eachPoller(t, func(t *testing.T, k poller.Kind) {
		backend := startEcho(t, "", sluice.WithTLS(cert.server))
		for _, tc := range []struct {
			name string
			cfg  config
		}{
			{"insecure", config{backendInsecure: true}},
			{"ca", config{backendCA: cert.file}},
			{"ca and name", config{backendCA: cert.file, backendServerName: "localhost"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := tc.cfg
				cfg.backends, cfg.poller, cfg.backendTLS = []string{backend.addr}, k, true
				tp := startProxy(t, cfg)
				c := dial(t, tp.addr())
				require.NoError(t, echo(c, payload(2, 1<<20)))
				c.Close()
				tp.settled(t)
				assert.EqualValues(t, 1, tp.snapshot().Engine.Dialed)
			})
		}
		for _, tc := range []struct {
			name string
			cfg  config
		}{
			{"unknown authority", config{}},
			{"wrong name", config{backendCA: cert.file, backendServerName: "wrong.test"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := tc.cfg
				cfg.backends, cfg.poller, cfg.backendTLS = []string{backend.addr}, k, true
				tp := startProxy(t, cfg)
				c := dial(t, tp.addr())
				// The kernel reports a reset once, to the first call that
				// meets it: the write, when the backend's refusal comes
				// first, else the read.
				_, err := c.Write([]byte("PING\r\n"))
				if err == nil {
					_, err = io.Copy(io.Discard, c)
				}
				assert.Error(t, err, "the client was not reset")
				tp.settled(t)
				s := tp.snapshot()
				assert.EqualValues(t, 1, s.Unserved)
				assert.EqualValues(t, 1, s.Backends[0].Failed)
				assert.EqualValues(t, 1, s.Engine.DialFailed)
				assert.EqualValues(t, 1, s.Engine.TLSHandshakeFailures)
				assert.Zero(t, s.Engine.Dialed)
			})
		}
	})
}

// redisTLS runs examples/redis serving TLS with a certificate of its own
// until the test ends, and returns its address.
func redisTLS(t *testing.T) string {
	t.Helper()
	_, lines := command(t, "redis", "-addr", "tcp://127.0.0.1:0", "-loops", "2", "-tls-self-signed")
	return expectLine(t, lines, regexp.MustCompile(`^redis: listening on (.+)$`))[1]
}

// redis-cli --tls talks to examples/redis through the proxy terminating
// TLS in front of it, and re-encrypting to it where it serves TLS itself;
// redis-benchmark's pipelines pass through both.
func TestTLSRedis(t *testing.T) {
	redisTool(t, "redis-cli")
	redisTool(t, "redis-benchmark")
	cert := newTestCert(t)
	for _, tc := range []struct {
		name    string
		backend func(t *testing.T) string
		cfg     config
	}{
		{"terminate", redis, config{}},
		{"terminate and originate", redisTLS, config{backendTLS: true, backendInsecure: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.backends, cfg.tls = []string{tc.backend(t)}, cert.server
			tp := startProxy(t, cfg)
			tlsArgs := []string{"--tls", "--cacert", cert.file}
			out := runTool(t, "redis-cli", tp.addr(), "SET greeting hello\nGET greeting\nPING", append([]string{"--no-raw"}, tlsArgs...)...)
			assert.Equal(t, "OK\n\"hello\"\nPONG\n", out)
			out = runTool(t, "redis-cli", tp.addr(), "", "--tls", "--insecure", "GET", "greeting")
			assert.Equal(t, "hello\n", out)
			out = runTool(t, "redis-benchmark", tp.addr(), "", append([]string{"-q", "-n", "20000", "-P", "16", "-t", "set,get"}, tlsArgs...)...)
			assert.Regexp(t, `SET: [\d.]+ requests per second`, out)
			assert.Regexp(t, `GET: [\d.]+ requests per second`, out)
			assert.NotRegexp(t, `(?i)err`, out)
			tp.settled(t)
			s := tp.snapshot()
			assert.Zero(t, s.Unserved)
			assert.Zero(t, s.Engine.TLSHandshakeFailures+s.Engine.TLSHandshakeTimeouts)
			assert.False(t, strings.Contains(tp.log.String(), "down"), "a backend went down:\n%s", tp.log)
		})
	}
}
