package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	f, err := Write(t.TempDir())
	require.NoError(t, err)
	for _, pair := range [][2]string{{f.Cert, f.Key}, {f.Combined, f.Combined}} {
		cert, err := tls.LoadX509KeyPair(pair[0], pair[1])
		require.NoError(t, err, pair)
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		require.NoError(t, err)
		pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
		require.True(t, ok, "ECDSA")
		assert.Equal(t, elliptic.P256(), pub.Curve)
		assert.NoError(t, leaf.VerifyHostname("127.0.0.1"))
		assert.NoError(t, leaf.VerifyHostname("localhost"))
	}
	again, err := Write(t.TempDir())
	require.NoError(t, err)
	first, err := os.ReadFile(f.Key)
	require.NoError(t, err)
	second, err := os.ReadFile(again.Key)
	require.NoError(t, err)
	assert.NotEqual(t, first, second, "a fresh key every time")
}
