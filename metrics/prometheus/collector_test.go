package prometheus

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// numbered returns Stats whose every number is different: the i-th
// field's is 1000+i, and LoopConns holds 1, 2, 3.
func numbered() sluice.Stats {
	var s sluice.Stats
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.Uint64:
			f.SetUint(uint64(1000 + i))
		}
	}
	s.LoopConns = []int{1, 2, 3}
	return s
}

// samples gathers reg and returns each sample's value by its name and
// labels, written as the text format writes them: name{a="b",c="d"}.
func samples(t *testing.T, reg *prom.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// Every field of Stats is exported, each under the name and labels the
// package's documentation gives it, with its value; ConstLabels label
// every metric, and Namespace begins every name.
func TestMetricsFollowStats(t *testing.T) {
	s := numbered()
	reg := prom.NewRegistry()
	reg.MustRegister(NewCollector(func() sluice.Stats { return s }, Opts{}))
	got := samples(t, reg)
	want := map[string]float64{
		`sluice_connections`:                                                float64(s.Conns),
		`sluice_loop_connections{loop="0"}`:                                 1,
		`sluice_loop_connections{loop="1"}`:                                 2,
		`sluice_loop_connections{loop="2"}`:                                 3,
		`sluice_connections_accepted_total`:                                 float64(s.Accepted),
		`sluice_connections_rejected_total{reason="max_connections"}`:       float64(s.RejectedMaxConns),
		`sluice_connections_rejected_total{reason="per_source"}`:            float64(s.RejectedPerSource),
		`sluice_connections_rejected_total{reason="over_budget"}`:           float64(s.RejectedOverBudget),
		`sluice_connections_rejected_total{reason="no_descriptors"}`:        float64(s.RejectedNoDescriptors),
		`sluice_connections_rejected_total{reason="proxy_timeout"}`:         float64(s.ProxyTimeouts),
		`sluice_connections_rejected_total{reason="proxy_invalid"}`:         float64(s.ProxyInvalid),
		`sluice_connections_rejected_total{reason="proxy_missing"}`:         float64(s.ProxyMissing),
		`sluice_connections_rejected_total{reason="tls_handshake_failed"}`:  float64(s.TLSHandshakeFailures),
		`sluice_connections_rejected_total{reason="tls_handshake_timeout"}`: float64(s.TLSHandshakeTimeouts),
		`sluice_connections_closed_total{reason="peer"}`:                    float64(s.ClosedByPeer),
		`sluice_connections_closed_total{reason="handler"}`:                 float64(s.ClosedByHandler),
		`sluice_connections_closed_total{reason="stop"}`:                    float64(s.ClosedByStop),
		`sluice_connections_closed_total{reason="error"}`:                   float64(s.ClosedByError),
		`sluice_connections_closed_total{reason="panic"}`:                   float64(s.HandlerPanics),
		`sluice_connections_closed_total{reason="killed"}`:                  float64(s.Killed),
		`sluice_connections_closed_total{reason="idle_timeout"}`:            float64(s.IdleTimeouts),
		`sluice_connections_closed_total{reason="read_timeout"}`:            float64(s.ReadTimeouts),
		`sluice_connections_closed_total{reason="write_timeout"}`:           float64(s.WriteTimeouts),
		`sluice_connections_closed_total{reason="inbound_too_large"}`:       float64(s.InboundTooLarge),
		`sluice_connections_closed_total{reason="outbound_over_limit"}`:     float64(s.OutboundOverLimit),
		`sluice_connections_closed_total{reason="inbound_over_budget"}`:     float64(s.InboundOverBudget),
		`sluice_connections_closed_total{reason="outbound_over_budget"}`:    float64(s.OutboundOverBudget),
		`sluice_received_bytes_total`:                                       float64(s.BytesIn),
		`sluice_sent_bytes_total`:                                           float64(s.BytesOut),
		`sluice_backpressure_pauses_total`:                                  float64(s.BackpressurePauses),
		`sluice_outbound_refused_writes_total`:                              float64(s.OutboundRefused),
		`sluice_inbound_held_bytes`:                                         float64(s.InboundHeld),
		`sluice_outbound_held_bytes`:                                        float64(s.OutboundHeld),
		`sluice_io_uring_buffers_exhausted_total`:                           float64(s.RingBuffersExhausted),
		`sluice_dials_total{result="connected"}`:                            float64(s.Dialed),
		`sluice_dials_total{result="failed"}`:                               float64(s.DialFailed),
		`sluice_enrolled_connections_total`:                                 float64(s.Enrolled),
		`sluice_datagrams_dropped_total{reason="truncated"}`:                float64(s.DatagramsTruncated),
		`sluice_datagrams_dropped_total{reason="rate_limited"}`:             float64(s.DatagramsRateLimited),
		`sluice_datagrams_dropped_total{reason="sessions_full"}`:            float64(s.SessionsRefused),
		`sluice_datagrams_send_failed_total`:                                float64(s.DatagramsSendFailed),
	}
	assert.Equal(t, want, got)

	// A field added to Stats and not exported would be missing here: its
	// number appears in no sample.
	values := map[float64]bool{}
	for _, v := range got {
		values[v] = true
	}
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64:
			assert.True(t, values[float64(1000+i)], "Stats.%s is not exported", v.Type().Field(i).Name)
		}
	}

	reg = prom.NewRegistry()
	reg.MustRegister(NewCollector(func() sluice.Stats { return s }, Opts{Namespace: "edge", ConstLabels: prom.Labels{"engine": "public"}}))
	named := samples(t, reg)
	assert.Len(t, named, len(want))
	assert.Equal(t, float64(s.Accepted), named[`edge_connections_accepted_total{engine="public"}`])
	assert.Equal(t, 2.0, named[`edge_loop_connections{engine="public",loop="1"}`])
}

// promtool returns the path of promtool (Debian package prometheus), and
// skips the test without it, except in CI.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatal("promtool is not installed, and CI is set: install prometheus")
	}
	t.Skip("promtool is not installed (apt-get install prometheus)")
	return ""
}

type echo struct{ sluice.BuiltinEventEngine }

func (echo) OnTraffic(c sluice.Conn) sluice.Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return sluice.None
}

// What a running engine exports, scraped over HTTP as Prometheus scrapes
// it, passes promtool's checks of the format and of Prometheus's naming
// conventions, and counts what happened.
func TestPromtoolChecksMetrics(t *testing.T) {
	tool := promtool(t)
	eng, err := sluice.Start(echo{}, "tcp://127.0.0.1:0", sluice.WithNumEventLoop(2))
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, eng.Stop(ctx))
	}()
	c, err := net.Dial("tcp", eng.Addrs()[0].String())
	require.NoError(t, err)
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 5))
	require.NoError(t, err)
	c.Close()

	reg := prom.NewRegistry()
	reg.MustRegister(NewCollector(eng.Stats, Opts{}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	var body []byte
	require.Eventually(t, func() bool {
		resp, err := http.Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		return bytes.Contains(body, []byte(`sluice_connections_closed_total{reason="peer"} 1`))
	}, 10*time.Second, time.Millisecond, "the client's close is counted")
	assert.Contains(t, string(body), "sluice_connections_accepted_total 1\n")
	assert.Contains(t, string(body), "sluice_received_bytes_total 5\n")
	assert.Contains(t, string(body), "sluice_sent_bytes_total 5\n")

	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s\nof:\n%s", out, body)
	assert.Empty(t, strings.TrimSpace(string(out)), "promtool's complaints")
	var names []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "# TYPE ") {
			names = append(names, strings.Fields(l)[2])
		}
	}
	sort.Strings(names)
	t.Logf("metrics: %s", strings.Join(names, " "))
}

// The alerts in alerts.yml are valid rules, and fire on the series they
// watch, as alerts_test.yml has promtool check.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		out, err := exec.Command(tool, args...).CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		assert.Contains(t, string(out), "SUCCESS")
	}
}
