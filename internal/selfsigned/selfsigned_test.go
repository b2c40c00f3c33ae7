package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The certificate is ECDSA P-256, valid for the loopback's names and the
// hosts asked for and no others, for a year, and verifies for a client
// that trusts it.
func TestCertificate(t *testing.T) {
	cert, err := Certificate("example.test", "192.0.2.1")
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok, "the key is %T", leaf.PublicKey)
	assert.Equal(t, elliptic.P256(), pub.Curve)
	assert.WithinDuration(t, time.Now().Add(Lifetime), leaf.NotAfter, time.Minute)
	assert.True(t, leaf.NotBefore.Before(time.Now()))

	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	for _, host := range []string{"localhost", "127.0.0.1", "::1", "example.test", "192.0.2.1"} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host})
		assert.NoError(t, err, host)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.test"})
	assert.Error(t, err, "valid for a host it was not made for")

	other, err := Certificate()
	require.NoError(t, err)
	assert.NotEqual(t, cert.Certificate[0], other.Certificate[0], "two certificates alike")
}

// PEM's blocks are what tls.X509KeyPair and PEM readers (redis-cli's
// --cacert) take.
func TestPEM(t *testing.T) {
	certPEM, keyPEM, err := PEM()
	require.NoError(t, err)
	block, rest := pem.Decode(certPEM)
	require.NotNil(t, block)
	assert.Equal(t, "CERTIFICATE", block.Type)
	assert.Empty(t, rest)
	block, _ = pem.Decode(keyPEM)
	require.NotNil(t, block)
	assert.Equal(t, "PRIVATE KEY", block.Type)
	_, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
}

// A TLS client that trusts the certificate completes a handshake with a
// server that presents it.
func TestHandshake(t *testing.T) {
	certPEM, keyPEM, err := PEM()
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(certPEM))
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	go func() { errc <- tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert}}).Handshake() }()
	require.NoError(t, tls.Client(b, &tls.Config{RootCAs: roots, ServerName: "localhost"}).Handshake())
	require.NoError(t, <-errc)
}
