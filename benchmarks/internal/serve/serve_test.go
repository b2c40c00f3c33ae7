package serve

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/benchmarks/internal/certs"
)

func TestReportRoundTrip(t *testing.T) {
	for _, r := range []Report{
		{Accepted: 12, Mallocs: 3456},
		{Accepted: 0, Mallocs: 0},
		{Accepted: 7, Mallocs: -1}, // the C floor's line
	} {
		out := "some log line\n" + r.String() + "\n"
		got, err := ParseReport(out)
		require.NoError(t, err, out)
		assert.Equal(t, r, got)
	}
}

func TestParseReport(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      Report
		err       error
	}{
		{"keys in any order", "report mallocs=5 accepted=2\n", Report{Accepted: 2, Mallocs: 5}, nil},
		{"unknown keys ignored", "report accepted=2 conns=9\n", Report{Accepted: 2, Mallocs: -1}, nil},
		{"last line wins", "report accepted=1\nreport accepted=2\n", Report{Accepted: 2, Mallocs: -1}, nil},
		{"no line", "listening\n", Report{}, ErrNoReport},
		{"not at line start", "a report accepted=1\n", Report{}, ErrNoReport},
		{"bad number", "report accepted=x\n", Report{}, ErrBadReport},
		{"no accepted", "report mallocs=1\n", Report{}, ErrBadReport},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReport(tc.out)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMeter(t *testing.T) {
	var m Meter
	assert.Equal(t, Report{}, m.Report(), "no connection yet: nothing counted")
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(m.Opened)
	}
	wg.Wait()
	r := m.Report()
	assert.Equal(t, int64(10), r.Accepted)
	assert.GreaterOrEqual(t, r.Mallocs, int64(0))
}

func TestHandoff(t *testing.T) {
	h := NewHandoff[int]()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := h.Take(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "nothing handed over yet")

	go h.Put(42)
	for range 2 { // every Take sees it
		v, err := h.Take(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 42, v)
	}
}

// fake is a Server whose Serve fails at once or blocks until Stop.
type fake struct {
	serveErr error
	stopped  chan struct{}
}

func (f *fake) Serve(Config, *Meter) error {
	if f.serveErr != nil {
		return f.serveErr
	}
	<-f.stopped
	return nil
}

func (f *fake) Stop(context.Context) error {
	close(f.stopped)
	return nil
}

func TestRunReportsAServerThatEnds(t *testing.T) {
	boom := errors.New("boom")
	err := run(&fake{serveErr: boom}, Config{Addr: "127.0.0.1:0", Loops: 1})
	assert.ErrorIs(t, err, ErrServeEnded)
}

// tlsFake is a fake that serves TLS.
type tlsFake struct{ fake }

func (*tlsFake) ServesTLS() {}

func TestCheckTLS(t *testing.T) {
	plain, secure := &fake{}, &tlsFake{}
	both := Config{TLSCert: "c.pem", TLSKey: "k.pem"}
	assert.NoError(t, checkTLS(plain, Config{}), "no TLS asked")
	assert.NoError(t, checkTLS(secure, Config{}))
	assert.NoError(t, checkTLS(secure, both))
	assert.True(t, both.TLS())
	assert.False(t, Config{}.TLS())
	for _, tc := range []struct {
		name string
		s    Server
		cfg  Config
	}{
		{"a server without TLS", plain, both},
		{"no key", secure, Config{TLSCert: "c.pem"}},
		{"no certificate", secure, Config{TLSKey: "k.pem"}},
		{"with -dial", secure, Config{TLSCert: "c.pem", TLSKey: "k.pem", Dial: "127.0.0.1:1"}},
	} {
		assert.ErrorIs(t, checkTLS(tc.s, tc.cfg), ErrNoTLS, tc.name)
	}
}

// udpFake is a fake that serves UDP.
type udpFake struct{ fake }

func (*udpFake) ServesUDP() {}

func TestCheckUDP(t *testing.T) {
	plain, udp := &fake{}, &udpFake{}
	assert.NoError(t, checkUDP(plain, Config{}), "no UDP asked")
	assert.NoError(t, checkUDP(udp, Config{UDP: true}))
	assert.ErrorIs(t, checkUDP(plain, Config{UDP: true}), ErrNoUDP, "a server without UDP")
	assert.ErrorIs(t, checkUDP(udp, Config{UDP: true, Dial: "127.0.0.1:1"}), ErrNoUDP, "with -dial")
	assert.ErrorIs(t, checkUDP(udp, Config{UDP: true, TLSCert: "c.pem", TLSKey: "k.pem"}), ErrNoUDP, "with TLS")
	assert.NoError(t, checkUDP(udp, Config{UDP: true, RecvBuf: 1 << 20}))
	assert.ErrorIs(t, checkUDP(udp, Config{RecvBuf: 1 << 20}), ErrNoUDP, "-rcvbuf without -udp")
}

func TestStdTLS(t *testing.T) {
	f, err := certs.Write(t.TempDir())
	require.NoError(t, err)
	tc, err := Config{TLSCert: f.Cert, TLSKey: f.Key}.StdTLS()
	require.NoError(t, err)
	assert.Len(t, tc.Certificates, 1)
	_, err = Config{TLSCert: f.Cert, TLSKey: f.Cert}.StdTLS()
	assert.Error(t, err, "a certificate is no key")
}
