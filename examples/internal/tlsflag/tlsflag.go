// Package tlsflag gives the examples their TLS flags, read alike by each:
// -tls-cert and -tls-key, a server's certificate and its key in PEM files,
// or -tls-self-signed, a certificate made up in memory for trying TLS out.
package tlsflag

import (
	"crypto/tls"
	"errors"
	"flag"

	"github.com/sluicenet/sluice/internal/selfsigned"
)

// Server is what the flags say of a server's certificate.
type Server struct {
	CertFile, KeyFile string // PEM files: the certificate (chain) and its key
	SelfSigned        bool   // make an ECDSA P-256 certificate that signs itself
}

// Register defines -tls-cert, -tls-key and -tls-self-signed on fs, which
// set s.
func (s *Server) Register(fs *flag.FlagSet) {
	fs.StringVar(&s.CertFile, "tls-cert", "", "serve TLS with this certificate, a PEM file (with -tls-key)")
	fs.StringVar(&s.KeyFile, "tls-key", "", "the private key of -tls-cert, a PEM file")
	fs.BoolVar(&s.SelfSigned, "tls-self-signed", false, "serve TLS with a self-signed certificate made at start, for localhost, 127.0.0.1 and ::1 (clients skip verification: redis-cli --tls --insecure)")
}

// Config returns the configuration to serve TLS with, or nil when the
// flags ask for plain TCP. A certificate without its key, a key without
// its certificate, or files and -tls-self-signed together, are errors.
func (s *Server) Config() (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case s.SelfSigned && (s.CertFile != "" || s.KeyFile != ""):
		return nil, errors.New("-tls-self-signed makes its own certificate: give it without -tls-cert and -tls-key")
	case s.SelfSigned:
		cert, err = selfsigned.Certificate()
	case s.CertFile == "" && s.KeyFile == "":
		return nil, nil
	case s.CertFile == "" || s.KeyFile == "":
		return nil, errors.New("-tls-cert and -tls-key go together")
	default:
		cert, err = tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	}
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}
