package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TLS. With Config.TLS set, every connection speaks TLS: the handshake runs
// on a goroutine of its own over Go's poller (crypto/tls cannot run one
// over a socket that answers "would block"), then the worker takes the
// connection's descriptor and the tls.Conn over to its epoll loop, where
// the tls.Conn reads and writes the nonblocking socket through rawSock and
// every echo is checked as plaintext. crypto/tls keeps no temporary error
// once the handshake is over, so a read that finds the socket empty
// returns one and the next read carries on.

// ClientTLS returns the client configuration the load generator speaks TLS
// with: TLS 1.3 only, the key exchanges in curves (crypto/tls's defaults
// if empty), one record per write (no dynamic record sizing, so a 16 KiB
// message is one full record), and a session cache if resume is set. The
// server must present exactly the certificate in the PEM file certFile:
// it is pinned, not verified against a root, so that each handshake costs
// the client no chain verification (crypto/tls still checks the
// handshake's signature with the certificate's key).
func ClientTLS(certFile string, curves []tls.CurveID, resume bool) (*tls.Config, error) {
	b, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: no certificate in %s", ErrConfig, certFile)
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, certFile, err)
	}
	want := block.Bytes
	cfg := &tls.Config{
		MinVersion:                  tls.VersionTLS13,
		MaxVersion:                  tls.VersionTLS13,
		CurvePreferences:            curves,
		DynamicRecordSizingDisabled: true,
		InsecureSkipVerify:          true, // VerifyConnection pins the certificate instead
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, want) {
				return errWrongCert
			}
			return nil
		},
	}
	if resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(16)
	}
	return cfg, nil
}

var errWrongCert = errors.New("loadgen: the server's certificate is not the one expected")

// Negotiated describes what a TLS handshake settled on: version, cipher
// suite and key exchange.
func Negotiated(cs tls.ConnectionState) string {
	return fmt.Sprintf("%s %s %s", tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite), cs.CurveID)
}

// errWouldBlock is what rawSock's Read returns, once the worker owns the
// connection, when the socket holds nothing: temporary, so crypto/tls
// does not keep it.
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "loadgen: socket empty" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// secure is a connection's TLS state in a worker.
type secure struct {
	tc  *tls.Conn
	raw *rawSock
}

// rawSock is the transport under the load generator's tls.Conn: nc, a
// connection on Go's poller, during the handshake; the nonblocking
// descriptor fd once the worker owns it, where a write the socket does not
// take whole is kept in out until the socket is writable (crypto/tls must
// never see a write fail short).
type rawSock struct {
	nc            net.Conn
	fd            int
	out           []byte
	err           error // the socket's write failed
	local, remote net.Addr
}

func (r *rawSock) Read(b []byte) (int, error) {
	if r.nc != nil {
		return r.nc.Read(b)
	}
	n, err := unix.Read(r.fd, b)
	switch {
	case err == unix.EAGAIN:
		return 0, errWouldBlock
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawSock) Write(b []byte) (int, error) {
	if r.nc != nil {
		return r.nc.Write(b)
	}
	if len(r.out) == 0 && r.err == nil {
		for len(b) > 0 {
			n, err := unix.Write(r.fd, b)
			if err == unix.EAGAIN {
				break
			}
			if err != nil {
				r.err = err
				return len(b), nil // the worker sees r.err when it flushes
			}
			b = b[n:]
		}
	}
	r.out = append(r.out, b...)
	return len(b), nil
}

// flush writes what the socket did not take before: complete when nothing
// is left, pending while something is.
func (r *rawSock) flush() outcome {
	for len(r.out) > 0 && r.err == nil {
		n, err := unix.Write(r.fd, r.out)
		if err == unix.EAGAIN {
			return pending
		}
		if err != nil {
			r.err = err
			break
		}
		r.out = r.out[n:]
	}
	if r.err != nil {
		return failed
	}
	r.out = nil
	return complete
}

// Close closes nc during the handshake (crypto/tls closes its transport to
// cancel one); the worker closes fd itself.
func (r *rawSock) Close() error {
	if r.nc != nil {
		return r.nc.Close()
	}
	return nil
}

func (r *rawSock) LocalAddr() net.Addr  { return r.local }
func (r *rawSock) RemoteAddr() net.Addr { return r.remote }

func (r *rawSock) SetDeadline(t time.Time) error {
	if r.nc != nil {
		return r.nc.SetDeadline(t)
	}
	return nil
}

func (r *rawSock) SetReadDeadline(t time.Time) error {
	if r.nc != nil {
		return r.nc.SetReadDeadline(t)
	}
	return nil
}

func (r *rawSock) SetWriteDeadline(t time.Time) error {
	if r.nc != nil {
		return r.nc.SetWriteDeadline(t)
	}
	return nil
}

// detach hands the connection over to a worker: a duplicate of nc's
// descriptor, nonblocking as Go left it, becomes fd, and nc is closed,
// which takes it off Go's poller without closing the socket.
func (r *rawSock) detach() (int, error) {
	sc, err := r.nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, dupErr := -1, error(nil)
	if err := sc.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, dupErr
	}
	r.nc.Close()
	r.nc, r.fd = nil, fd
	return fd, nil
}

// dialer returns a dialer whose connections leave from src (if valid),
// the port left to connect, as openSocket's do. Go sets TCP_NODELAY.
func dialer(src netip.Addr) *net.Dialer {
	d := &net.Dialer{}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var soErr error
			if err := rc.Control(func(fd uintptr) {
				soErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
			}); err != nil {
				return err
			}
			return soErr
		}
	}
	return d
}

// handshake dials addr from src and completes a TLS handshake with cfg on
// it, within ctx.
func handshake(ctx context.Context, addr netip.AddrPort, src netip.Addr, cfg *tls.Config) (*tls.Conn, *rawSock, error) {
	nc, err := dialer(src).DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return nil, nil, err
	}
	raw := &rawSock{nc: nc, fd: -1, local: nc.LocalAddr(), remote: nc.RemoteAddr()}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return tc, raw, nil
}

// maxHandshaking bounds the handshakes a session runs at once while it
// opens its connections.
const maxHandshaking = 64

// dialSecure opens count TLS connections to addr for w, with messages of
// size bytes (ids from firstID on), handshaking up to maxHandshaking at
// once, and watches each; it counts those that failed in w.res.Errors.Dial.
func (w *worker) dialSecure(cfg Config, count, firstID int, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	type opened struct {
		tc  *tls.Conn
		raw *rawSock
		fd  int
	}
	got := make([]opened, count)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(count, maxHandshaking) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < count; i = int(next.Add(1) - 1) {
				tc, raw, err := handshake(ctx, cfg.Addr, source(cfg.Addr, firstID+i), cfg.TLS)
				if err != nil {
					continue
				}
				fd, err := raw.detach()
				if err != nil {
					raw.nc.Close()
					continue
				}
				got[i] = opened{tc, raw, fd}
			}
		})
	}
	wg.Wait()
	w.conns = make([]conn, 0, count)
	for i, o := range got {
		if o.tc == nil {
			w.res.Errors.Dial++
			continue
		}
		w.conns = append(w.conns, conn{fd: o.fd, id: firstID + i, msg: newMsg(cfg.Size, firstID+i), sec: &secure{tc: o.tc, raw: o.raw}})
		if w.watch(unix.EPOLL_CTL_ADD, len(w.conns)-1, false) != nil {
			w.res.Errors.Dial++
			w.kill(&w.conns[len(w.conns)-1])
		}
		if w.negotiated == "" {
			w.negotiated = Negotiated(o.tc.ConnectionState())
		}
	}
}

// writeSecure seals what is left of the message and writes it: pending
// while the socket has not taken all of it.
func (c *conn) writeSecure() outcome {
	if c.sent < len(c.msg) {
		if _, err := c.sec.tc.Write(c.msg[c.sent:]); err != nil {
			return failed
		}
		c.sent = len(c.msg)
	}
	return c.sec.raw.flush()
}

// readSecure reads records until the whole echo is back or the socket is
// empty, and checks their plaintext against what was sent.
func (c *conn) readSecure(buf []byte, errs *Errors) outcome {
	for {
		n, err := c.sec.tc.Read(buf)
		if n > 0 {
			if !c.busy || c.got+n > c.sent || !bytes.Equal(buf[:n], c.msg[c.got:c.got+n]) {
				errs.Mismatch++
				return failed
			}
			c.got += n
			if c.got == len(c.msg) {
				return complete
			}
		}
		if err == errWouldBlock {
			return pending
		}
		if err != nil {
			errs.Closed++
			return failed
		}
	}
}

// Handshakes measures TLS connection setup for d: cfg.Conns connections in
// progress at once, each of which connects, completes a TLS handshake with
// cfg.TLS, sends one message of cfg.Size bytes, reads the echo, and closes
// (close_notify, then the socket), and is followed at once by a new one.
// A round trip in the result is one such connection, its latency counted
// from the connect. With a session cache in cfg.TLS the handshakes resume
// the sessions earlier ones were given; Result.Resumed counts those that
// did. Each connection runs on a goroutine, over Go's poller.
func Handshakes(cfg Config, d time.Duration) (Result, error) {
	if err := cfg.check(); err != nil {
		return Result{}, err
	}
	if cfg.TLS == nil {
		return Result{}, fmt.Errorf("%w: handshakes need TLS", ErrConfig)
	}
	start := now()
	until := time.Now().Add(d)
	results := make([]Result, cfg.Conns)
	var wg sync.WaitGroup
	for i := range cfg.Conns {
		wg.Go(func() { results[i] = churnSecure(cfg, i, until) })
	}
	wg.Wait()
	res := Result{Elapsed: time.Duration(now() - start)}
	for i := range results {
		res.merge(&results[i])
		if res.TLS == "" {
			res.TLS = results[i].TLS
		}
	}
	return res, nil
}

// churnSecure runs Handshakes' loop for connection slot id until the given
// time.
func churnSecure(cfg Config, id int, until time.Time) Result {
	var res Result
	msg := newMsg(cfg.Size, id)
	buf := make([]byte, cfg.Size)
	for n := id; time.Now().Before(until); n += cfg.Conns {
		stamp(msg, int64(n))
		t0 := now()
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		tc, raw, err := handshake(ctx, cfg.Addr, source(cfg.Addr, n), cfg.TLS)
		cancel()
		if err != nil {
			res.Errors.Dial++
			continue
		}
		raw.nc.SetDeadline(time.Now().Add(drainTimeout))
		ok := exchange(tc, msg, buf, &res.Errors)
		cs := tc.ConnectionState()
		tc.Close()
		if !ok {
			continue
		}
		res.RoundTrips++
		res.Latency.Record(time.Duration(now() - t0))
		if cs.DidResume {
			res.Resumed++
		}
		if res.TLS == "" {
			res.TLS = Negotiated(cs)
		}
	}
	return res
}

// exchange writes msg on tc and reads its echo into buf, checking it; it
// counts what went wrong in errs.
func exchange(tc *tls.Conn, msg, buf []byte, errs *Errors) bool {
	if _, err := tc.Write(msg); err != nil {
		errs.Closed++
		return false
	}
	var timeout net.Error
	switch _, err := io.ReadFull(tc, buf); {
	case errors.As(err, &timeout) && timeout.Timeout():
		errs.Timeout++
		return false
	case err != nil:
		errs.Closed++
		return false
	case !bytes.Equal(buf, msg):
		errs.Mismatch++
		return false
	}
	return true
}
