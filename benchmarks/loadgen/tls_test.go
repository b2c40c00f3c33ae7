package loadgen

import (
	"crypto/tls"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/echotest"
)

// serveTLS starts a crypto/tls server that answers each read with reply
// (echotest.ListenTLS); it returns its address and the client
// configuration that trusts it, from ClientTLS.
func serveTLS(t *testing.T, reply echotest.Reply, resume bool) (netip.AddrPort, *tls.Config) {
	t.Helper()
	addr, cert := echotest.ListenTLS(t, reply)
	cfg, err := ClientTLS(cert, []tls.CurveID{tls.X25519}, resume)
	require.NoError(t, err)
	return addr, cfg
}

func dialTLS(t *testing.T, addr netip.AddrPort, cfg *tls.Config, conns, size int) *Session {
	t.Helper()
	s, err := Dial(Config{Addr: addr, Conns: conns, Size: size, Workers: 1, TLS: cfg})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestTLSLoads(t *testing.T) {
	addr, cfg := serveTLS(t, echotest.Echo, false)
	s := dialTLS(t, addr, cfg, 20, 64)
	assert.Equal(t, "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519", s.Negotiated())

	res := s.Exchange(1001)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Equal(t, int64(1001), res.RoundTrips)

	res = s.Run(100 * time.Millisecond)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Positive(t, res.RoundTrips)

	res = s.Pace(2000, 100*time.Millisecond)
	assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
	assert.Equal(t, int64(200), res.RoundTrips, "the schedule's 2,000/s for 100 ms")
	assert.Greater(t, res.Elapsed, 199*500*time.Microsecond, "not sooner than the last is due")
}

func TestTLSLargeMessages(t *testing.T) {
	// 1 MiB each way: more than a socket takes at once, so the sealed
	// output waits for writable and the echo comes in many records.
	addr, cfg := serveTLS(t, echotest.Echo, false)
	s := dialTLS(t, addr, cfg, 3, 64)
	for _, size := range []int{16 << 10, 1 << 20} {
		s.Resize(size)
		res := s.Exchange(6)
		assert.Zero(t, res.Errors.Total(), "%d B: %+v", size, res.Errors)
		assert.Equal(t, int64(6), res.RoundTrips, "%d B", size)
	}
}

func TestTLSErrorsAreCounted(t *testing.T) {
	shortDrain(t, 200*time.Millisecond)
	for _, tc := range brokenEchoes {
		t.Run(tc.name, func(t *testing.T) {
			addr, cfg := serveTLS(t, tc.reply, false)
			s := dialTLS(t, addr, cfg, 3, 64)
			res := s.Exchange(3)
			assert.Equal(t, int64(3), tc.want(res.Errors), "%+v", res.Errors)
			assert.Zero(t, res.RoundTrips)

			hs, err := Handshakes(Config{Addr: addr, Conns: 2, Size: 64, Workers: 1, TLS: cfg}, 50*time.Millisecond)
			require.NoError(t, err)
			assert.Positive(t, tc.want(hs.Errors), "%+v", hs.Errors)
			assert.Zero(t, hs.RoundTrips)
		})
	}
}

func TestTLSWrongCertificate(t *testing.T) {
	addr, _ := serveTLS(t, echotest.Echo, false)
	_, other := serveTLS(t, echotest.Echo, false) // trusts another server's certificate
	_, err := Dial(Config{Addr: addr, Conns: 2, Size: 64, Workers: 1, TLS: other})
	assert.ErrorIs(t, err, ErrDial)
	res, err := Handshakes(Config{Addr: addr, Conns: 2, Size: 64, Workers: 1, TLS: other}, 20*time.Millisecond)
	require.NoError(t, err)
	assert.Positive(t, res.Errors.Dial)
	assert.Zero(t, res.RoundTrips)
}

func TestHandshakes(t *testing.T) {
	for _, resume := range []bool{false, true} {
		addr, cfg := serveTLS(t, echotest.Echo, resume)
		c := Config{Addr: addr, Conns: 4, Size: 64, Workers: 1, TLS: cfg}
		Handshakes(c, 20*time.Millisecond) // resumed ones need a ticket first
		res, err := Handshakes(c, 100*time.Millisecond)
		require.NoError(t, err)
		assert.Zero(t, res.Errors.Total(), "%+v", res.Errors)
		assert.Positive(t, res.RoundTrips)
		assert.Equal(t, uint64(res.RoundTrips), res.Latency.Count())
		assert.Equal(t, "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519", res.TLS)
		if resume {
			assert.Equal(t, res.RoundTrips, res.Resumed, "every handshake resumed")
		} else {
			assert.Zero(t, res.Resumed)
		}
	}
}

func TestTLSConfigErrors(t *testing.T) {
	_, err := ClientTLS(t.TempDir()+"/none.pem", nil, false)
	assert.Error(t, err)
	addr, cfg := serveTLS(t, echotest.Echo, false)
	_, err = Accepts(Config{Addr: addr, Conns: 1, Size: 64, Workers: 1, TLS: cfg}, time.Millisecond)
	assert.ErrorIs(t, err, ErrConfig, "Accepts is plain TCP")
	_, err = Handshakes(Config{Addr: addr, Conns: 1, Size: 64, Workers: 1}, time.Millisecond)
	assert.ErrorIs(t, err, ErrConfig, "Handshakes needs TLS")
	_, err = Accept(0, Config{Conns: 1, Size: 64, Workers: 1, TLS: cfg})
	assert.ErrorIs(t, err, ErrConfig, "accepted connections are plain TCP")
}
