package tlsflag

import (
	"crypto/x509"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/selfsigned"
)

// parse registers the flags on a set of their own and parses args.
func parse(t *testing.T, args ...string) *Server {
	t.Helper()
	var s Server
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	s.Register(fs)
	require.NoError(t, fs.Parse(args))
	return &s
}

// Without the flags the example serves plain TCP.
func TestPlainWithoutFlags(t *testing.T) {
	cfg, err := parse(t).Config()
	require.NoError(t, err)
	assert.Nil(t, cfg)
}

// -tls-self-signed makes a certificate for the loopback.
func TestSelfSigned(t *testing.T) {
	cfg, err := parse(t, "-tls-self-signed").Config()
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	require.NoError(t, err)
	assert.Contains(t, leaf.DNSNames, "localhost")
}

// -tls-cert and -tls-key load PEM files; one that is missing is an error.
func TestFiles(t *testing.T) {
	certPEM, keyPEM, err := selfsigned.PEM("example.test")
	require.NoError(t, err)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, certPEM, 0o600))
	require.NoError(t, os.WriteFile(key, keyPEM, 0o600))
	cfg, err := parse(t, "-tls-cert", cert, "-tls-key", key).Config()
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	require.NoError(t, err)
	assert.Contains(t, leaf.DNSNames, "example.test")

	_, err = parse(t, "-tls-cert", filepath.Join(dir, "missing.pem"), "-tls-key", key).Config()
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Half a pair of files, or files and -tls-self-signed, are refused.
func TestRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-tls-cert", "cert.pem"},
		{"-tls-key", "key.pem"},
		{"-tls-self-signed", "-tls-cert", "cert.pem", "-tls-key", "key.pem"},
	} {
		_, err := parse(t, args...).Config()
		assert.Error(t, err, "%v", args)
	}
}
