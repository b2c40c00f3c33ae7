package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// TestTechEmpower checks both tests' answers, below the Handler API and
// with ServeHTTP, inline and on the pool, each request alone and
// pipelined; a request with a body, which ServeLoop is not offered, and
// the 404 that ServeHTTP answers.
func TestTechEmpower(t *testing.T) {
	for _, below := range []bool{true, false} {
		for _, inline := range []bool{true, false} {
			addr := run(t, config{inline: inline, below: below})
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			c := &http.Client{Transport: tr, Timeout: deadline}
			for range 3 {
				get(t, c, "http://"+addr+"/plaintext", "text/plain", "Hello, World!")
				get(t, c, "http://"+addr+"/json", "application/json", `{"message":"Hello, World!"}`)
			}
			resp, err := c.Post("http://"+addr+"/json", "text/plain", strings.NewReader("a body"))
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, `{"message":"Hello, World!"}`, string(b))
			resp, err = c.Get("http://" + addr + "/other")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)
			pipelined(t, addr)
		}
	}
}

// pipelined sends 16 requests, both tests in turn, in one write, and
// checks their answers, in order.
func pipelined(t *testing.T, addr string) {
	c, err := net.DialTimeout("tcp", addr, deadline)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(deadline)))
	var batch strings.Builder
	for i := range 16 {
		batch.WriteString([]string{"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n", "GET /json HTTP/1.1\r\nHost: x\r\n\r\n"}[i%2])
	}
	_, err = io.WriteString(c, batch.String())
	require.NoError(t, err)
	br := bufio.NewReader(c)
	for i := range 16 {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, []string{"Hello, World!", `{"message":"Hello, World!"}`}[i%2], string(b))
		assert.Equal(t, "Sluice", resp.Header.Get("Server"))
		assert.NotEmpty(t, resp.Header.Get("Date"))
	}
}

// TestAppendJSON checks the JSON test's serializer against
// encoding/json's, on strings that need escaping.
func TestAppendJSON(t *testing.T) {
	for _, s := range []string{"Hello, World!", "", `quote " backslash \\`, "\x00\x01\x1f\b\f\n\r\t",
		"<a href='x'>&amp;</a>", "caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff\xfe utf-8 \xe2\x82", "\x7f"} {
		want, err := json.Marshal(message{Message: s})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(message{Message: s}.appendJSON(nil)), "%q", s)
	}
}

// TestTechEmpowerTLS checks -tls-cert and -tls-key: HTTPS with ALPN
// http/1.1.
func TestTechEmpowerTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key, roots := writeCert(t, dir)
	addr := run(t, config{inline: true, below: true, tls: tlsflag.Server{CertFile: cert, KeyFile: key}})
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
