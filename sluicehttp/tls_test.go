package sluicehttp

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/internal/selfsigned"
)

// selfSigned returns a server certificate for the loopback and a pool
// that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	cert, err := selfsigned.Certificate()
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return cert, pool
}

// TestHTTPS checks the server over TLS (sluice.WithTLS) with Go's client:
// answers over a kept connection, and each request's TLS state.
func TestHTTPS(t *testing.T) {
	modes(t, func(t *testing.T, inline bool) {
		cert, roots := selfSigned(t)
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.TLS == nil || !r.TLS.HandshakeComplete {
				http.Error(w, "no TLS state", http.StatusInternalServerError)
				return
			}
			io.WriteString(w, r.TLS.NegotiatedProtocol+" "+tls.VersionName(r.TLS.Version))
		})}, sluice.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}))
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}}}
		t.Cleanup(tr.CloseIdleConnections)
		c := &http.Client{Transport: tr, Timeout: deadline}
		for range 5 {
			resp, err := c.Get("https://" + addr + "/")
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "http/1.1 TLS 1.3", string(b))
		}
	})
}
