package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
)

// config is what the flags set; tests fill it in directly.
type config struct {
	addrs          []string   // listeners: the first is Run's, the rest WithListener's
	files          []*os.File // listening sockets handed to the process (package upgrade)
	backends       []string   // "host:port" or "unix:///path", as Engine.Dial takes them
	balance        balance
	loops          int
	poller         poller.Kind // the zero Kind is epoll
	proxyProtocol  sluice.ProxyMode
	sendProxy      sendProxy
	connectTimeout time.Duration // a client's whole budget for reaching a backend
	idleTimeout    time.Duration // zero: none
	maxConn        int           // clients at once; zero: as many as descriptors allow
	buffer         int           // high-water mark of each direction's unsent bytes
	maxFails       int           // failed connects in a row that mark a backend down
	downTime       time.Duration // how long a backend stays down before it is probed
	drain          time.Duration // how long a stop lets pairs finish by themselves; zero: not at all
	grace          time.Duration // bound on closing what is left after that
	statsInterval  time.Duration // zero: no periodic stats

	tls *tls.Config // the listeners' (-tls-cert, -tls-key, -tls-self-signed); nil: plain

	// TLS to the backends: -backend-tls, and how their certificates are
	// verified. check makes dialTLS of them.
	backendTLS        bool
	backendCA         string // a PEM file of the certificates to trust, instead of the system's
	backendServerName string // the name to verify, instead of each backend's host
	backendInsecure   bool   // verify nothing
	dialTLS           *tls.Config

	out       io.Writer            // where the listening line and stats go
	listening func([]net.Addr)     // called once the engine listens, with every address
	logf      func(string, ...any) // backend state changes and other notices
}

// Defaults, shared by the flags and by configs that leave a field zero.
const (
	defaultConnectTimeout = 5 * time.Second
	defaultBuffer         = 64 << 10
	defaultMaxFails       = 3
	defaultDownTime       = 10 * time.Second
	defaultGrace          = 10 * time.Second
	defaultDrain          = 5 * time.Second
)

// maxBackends is how many backends one proxy may have: a client's tried
// backends are one bit each of a uint64, so that a pair allocates nothing
// for them.
const maxBackends = 64

// check fills in defaults and rejects what cannot run, before the engine
// starts, so that a typo in a backend's address is an error at once rather
// than a failed dial for every client.
func (c *config) check() error {
	if len(c.addrs) == 0 && len(c.files) == 0 {
		return errors.New("no address to listen on (-addr)")
	}
	if len(c.backends) == 0 {
		return errors.New("no backend (-backend)")
	}
	if len(c.backends) > maxBackends {
		return fmt.Errorf("%d backends: at most %d", len(c.backends), maxBackends)
	}
	for _, b := range c.backends {
		if err := checkBackend(b); err != nil {
			return err
		}
	}
	if err := c.checkBackendTLS(); err != nil {
		return err
	}
	if c.loops <= 0 {
		c.loops = 1
	}
	if c.connectTimeout <= 0 {
		c.connectTimeout = defaultConnectTimeout
	}
	if c.buffer <= 0 {
		c.buffer = defaultBuffer
	}
	if c.maxFails <= 0 {
		c.maxFails = defaultMaxFails
	}
	if c.downTime <= 0 {
		c.downTime = defaultDownTime
	}
	if c.grace <= 0 {
		c.grace = defaultGrace
	}
	if c.maxConn <= 0 {
		c.maxConn = descriptorBound()
	}
	if c.out == nil {
		c.out = io.Discard
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	return nil
}

// checkBackendTLS makes the configuration the proxy dials its backends
// with, if -backend-tls asks for TLS, and refuses what contradicts it.
func (c *config) checkBackendTLS() error {
	switch {
	case !c.backendTLS && (c.backendCA != "" || c.backendServerName != "" || c.backendInsecure):
		return errors.New("-backend-ca, -backend-server-name and -backend-tls-insecure need -backend-tls")
	case !c.backendTLS:
		return nil
	case c.backendCA != "" && c.backendInsecure:
		return errors.New("-backend-ca and -backend-tls-insecure: verify, or do not")
	case c.sendProxy != sendProxyOff:
		// A Sluice server, or HAProxy, reads the header in clear before
		// the handshake; the proxy would send it inside the TLS stream.
		return errors.New("-send-proxy with -backend-tls: the header would go inside TLS, where backends do not look for it")
	}
	cfg := &tls.Config{
		ServerName:         c.backendServerName,
		InsecureSkipVerify: c.backendInsecure,
		// Clients of one backend share its sessions: their handshakes
		// after the first are resumptions.
		ClientSessionCache: tls.NewLRUClientSessionCache(0),
	}
	if c.backendCA != "" {
		pem, err := os.ReadFile(c.backendCA)
		if err != nil {
			return fmt.Errorf("-backend-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-backend-ca %s: no PEM certificate in it", c.backendCA)
		}
	}
	c.dialTLS = cfg
	return nil
}

// checkBackend accepts the addresses Engine.Dial does: "unix:///path",
// "tcp://host:port" (or tcp4, tcp6), or "host:port".
func checkBackend(addr string) error {
	scheme, rest, ok := strings.Cut(addr, "://")
	if !ok {
		scheme, rest = "tcp", addr
	}
	switch scheme {
	case "unix":
		if rest == "" {
			return fmt.Errorf("backend %q: no socket path", addr)
		}
		return nil
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("backend %q: scheme %q is not tcp, tcp4, tcp6 or unix", addr, scheme)
	}
	_, port, err := net.SplitHostPort(rest)
	if err != nil {
		return fmt.Errorf("backend %q: %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("backend %q: port %q is not a number", addr, port)
	}
	return nil
}

// listFlag is a flag that may be given several times, each time with one
// value or a comma-separated list of them.
type listFlag []string

// String returns the values as a comma-separated list.
func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set adds the values of one use of the flag.
func (l *listFlag) Set(s string) error {
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// balance is how a client's backend is chosen.
type balance int

const (
	// roundRobin takes the backends in turn.
	roundRobin balance = iota
	// leastConn takes the backend with the fewest clients now, counting
	// those still connecting.
	leastConn
	// source hashes the client's IP address, so that one client always
	// reaches the same backend while the set of backends that are up
	// stays the same. Behind a balancer that sends a PROXY header, it is
	// the original client's address.
	source
)

// balanceNames are the balances' names, as -balance takes them.
var balanceNames = [...]string{roundRobin: "roundrobin", leastConn: "leastconn", source: "source"}

// String returns the balance's name: roundrobin, leastconn or source.
func (b balance) String() string {
	if b < 0 || int(b) >= len(balanceNames) {
		return "balance(" + strconv.Itoa(int(b)) + ")"
	}
	return balanceNames[b]
}

// MarshalText returns the balance's name, so that it can be a flag
// (flag.TextVar).
func (b balance) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText sets the balance from its name.
func (b *balance) UnmarshalText(text []byte) error {
	for i, name := range balanceNames {
		if string(text) == name {
			*b = balance(i)
			return nil
		}
	}
	return fmt.Errorf("balance %q: want roundrobin, leastconn or source", text)
}

// sendProxy is which PROXY protocol header, if any, the proxy sends a
// backend before the client's first byte.
type sendProxy int

const (
	sendProxyOff sendProxy = iota // send no header
	sendProxyV1                   // the text header of version 1
	sendProxyV2                   // the binary header of version 2
)

// sendProxyNames are the names -send-proxy takes.
var sendProxyNames = [...]string{sendProxyOff: "off", sendProxyV1: "v1", sendProxyV2: "v2"}

// String returns the name -send-proxy takes: off, v1 or v2.
func (s sendProxy) String() string {
	if s < 0 || int(s) >= len(sendProxyNames) {
		return "sendProxy(" + strconv.Itoa(int(s)) + ")"
	}
	return sendProxyNames[s]
}

// MarshalText returns the name, so that a sendProxy can be a flag
// (flag.TextVar).
func (s sendProxy) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText sets s from its name.
func (s *sendProxy) UnmarshalText(text []byte) error {
	for i, name := range sendProxyNames {
		if string(text) == name {
			*s = sendProxy(i)
			return nil
		}
	}
	return fmt.Errorf("send-proxy %q: want off, v1 or v2", text)
}
