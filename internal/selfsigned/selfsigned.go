// Package selfsigned makes a TLS server certificate that signs itself, in
// memory, for trying TLS out without a certificate authority: the
// examples' -tls-self-signed, and tests. A client verifies it only by
// trusting the certificate itself (redis-cli --cacert with its PEM), or
// skips verification (--insecure).
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// Lifetime is how long a certificate is valid, from an hour before it was
// made (a peer whose clock is a little behind accepts it too).
const Lifetime = 365 * 24 * time.Hour

// DefaultHosts are the names and addresses every certificate is valid
// for: the loopback's.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// PEM returns a new ECDSA P-256 key and a certificate for it, signed by
// itself, PEM-encoded ("CERTIFICATE" and "PRIVATE KEY", PKCS #8). It is a
// server's certificate, valid for DefaultHosts and for hosts, each a DNS
// name or an IP address.
func PEM(hosts ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sluice self-signed", Organization: []string{"Sluice"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(Lifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // so that trusting it as a root verifies it
	}
	for _, h := range append(DefaultHosts[:len(DefaultHosts):len(DefaultHosts)], hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	return certPEM, keyPEM, nil
}

// Certificate returns what PEM makes as a tls.Certificate, for a
// tls.Config's Certificates.
func Certificate(hosts ...string) (tls.Certificate, error) {
	certPEM, keyPEM, err := PEM(hosts...)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
