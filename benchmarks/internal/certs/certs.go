// Package certs makes the TLS certificate the benchmarks serve: a fresh
// self-signed ECDSA P-256 certificate for 127.0.0.1, ::1 and localhost,
// written as PEM files, so that no key is kept in the repository and every
// run and test has its own.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the PEM files Write writes.
type Files struct {
	Cert     string // the certificate
	Key      string // its private key (PKCS #8)
	Combined string // both, certificate first, as HAProxy's crt takes them
}

// Write generates a certificate valid from an hour ago for a day and writes
// it into dir as cert.pem, key.pem and combined.pem.
func Write(dir string) (Files, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return Files{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sluice benchmarks"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Files{}, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Files{}, err
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	priv := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	f := Files{
		Cert:     filepath.Join(dir, "cert.pem"),
		Key:      filepath.Join(dir, "key.pem"),
		Combined: filepath.Join(dir, "combined.pem"),
	}
	for _, w := range []struct {
		path string
		data []byte
	}{{f.Cert, cert}, {f.Key, priv}, {f.Combined, append(append([]byte{}, cert...), priv...)}} {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}
