package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/tlsflag"
	"github.com/sluicenet/sluice/internal/selfsigned"
	"github.com/sluicenet/sluice/poller"
)

const deadline = 10 * time.Second

// run starts the server on a free port for the test and returns its
// address.
func run(t *testing.T, cfg config) string {
	t.Helper()
	cfg.addr, cfg.loops = "tcp://127.0.0.1:0", 2
	if os.Getenv("SLUICE_TEST_POLLER") == "uring" {
		cfg.poller = poller.IOUring
	}
	s, eng, err := start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		assert.NoError(t, s.Shutdown(ctx))
	})
	return eng.Addrs()[0].String()
}

// get fetches url and checks the answer's status, headers and body.
func get(t *testing.T, c *http.Client, url, contentType, body string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, body, string(b))
	assert.Equal(t, contentType, resp.Header.Get("Content-Type"))
	assert.Equal(t, "Sluice", resp.Header.Get("Server"))
	date, err := http.ParseTime(resp.Header.Get("Date"))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), date, 2*time.Second)
	assert.Equal(t, int64(len(body)), resp.ContentLength)
}

// TestTechEmpower checks both tests' answers, inline and on the pool.
func TestTechEmpower(t *testing.T) {
	for _, inline := range []bool{true, false} {
		addr := run(t, config{inline: inline})
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		c := &http.Client{Transport: tr, Timeout: deadline}
		for range 3 {
			get(t, c, "http://"+addr+"/plaintext", "text/plain", "Hello, World!")
			get(t, c, "http://"+addr+"/json", "application/json", `{"message":"Hello, World!"}`)
		}
		resp, err := c.Get("http://" + addr + "/other")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	}
}

// TestTechEmpowerTLS checks -tls-cert and -tls-key: HTTPS with ALPN
// http/1.1.
func TestTechEmpowerTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key, roots := writeCert(t, dir)
	addr := run(t, config{inline: true, tls: tlsflag.Server{CertFile: cert, KeyFile: key}})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: deadline}
	get(t, c, "https://"+addr+"/plaintext", "text/plain", "Hello, World!")

	_, err := options(config{tls: tlsflag.Server{CertFile: cert}})
	assert.Error(t, err, "a certificate without its key")
}

// writeCert writes a self-signed certificate for the loopback and its key
// to dir, as PEM files, and returns their paths and a pool that trusts it.
func writeCert(t *testing.T, dir string) (cert, key string, roots *x509.CertPool) {
	certPEM, keyPEM, err := selfsigned.PEM()
	require.NoError(t, err)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, certPEM, 0o600))
	require.NoError(t, os.WriteFile(key, keyPEM, 0o600))
	roots = x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(certPEM))
	return cert, key, roots
}
