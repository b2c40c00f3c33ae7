// Package prometheus exports a Sluice engine's counters (sluice.Stats) to
// Prometheus: a prometheus.Collector that reads them at each scrape, named
// as Prometheus names things (base units, _total on counters, a reason
// label where one count splits into several).
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(sluiceprom.NewCollector(eng.Stats, sluiceprom.Opts{}))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// It lives in a module of its own, so that the engine's module depends on
// no Prometheus code.
package prometheus

import (
	"strconv"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/sluicenet/sluice"
)

// Opts says how the collector names its metrics.
type Opts struct {
	// Namespace begins every metric's name; empty means "sluice".
	Namespace string
	// ConstLabels are added to every metric, to tell engines apart when a
	// process runs several: {"engine": "public"}.
	ConstLabels prom.Labels
}

// Collector reads an engine's Stats at each scrape. Make it with
// NewCollector.
type Collector struct {
	stats func() sluice.Stats
	descs descs
}

// descs are the collector's metrics.
type descs struct {
	conns, loopConns, accepted, rejected, closed  *prom.Desc
	received, sent, backpressure, outboundRefused *prom.Desc
	inboundHeld, outboundHeld, ringExhausted      *prom.Desc
	dials, enrolled                               *prom.Desc
	datagramsDropped, datagramsSendFailed         *prom.Desc
}

// NewCollector returns a collector of what stats returns: eng.Stats, for
// an engine eng, which it calls once per scrape.
func NewCollector(stats func() sluice.Stats, o Opts) *Collector {
	ns := o.Namespace
	if ns == "" {
		ns = "sluice"
	}
	desc := func(name, help string, labels ...string) *prom.Desc {
		return prom.NewDesc(prom.BuildFQName(ns, "", name), help, labels, o.ConstLabels)
	}
	return &Collector{stats: stats, descs: descs{
		conns:     desc("connections", "Connections admitted and not yet closed, those still on their way to a loop, in their PROXY header or TLS handshake, and dials connecting included."),
		loopConns: desc("loop_connections", "Connections each event loop holds open.", "loop"),
		accepted:  desc("connections_accepted_total", "Connections admitted within every limit."),
		rejected: desc("connections_rejected_total", "Connections closed before the handler saw them, or accepts that failed, by reason: "+
			"max_connections, per_source, over_budget (WithInboundBudget or WithOutboundBudget passed), no_descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM: accepts pause 100 ms), "+
			"proxy_timeout, proxy_invalid, proxy_missing, tls_handshake_failed, tls_handshake_timeout.", "reason"),
		closed: desc("connections_closed_total", "Connections the handler saw close, by reason: peer, handler, stop, error, panic, killed, "+
			"idle_timeout, read_timeout, write_timeout, inbound_too_large, outbound_over_limit, inbound_over_budget, outbound_over_budget.", "reason"),
		received:        desc("received_bytes_total", "Bytes read from connections' sockets."),
		sent:            desc("sent_bytes_total", "Bytes written to connections' sockets."),
		backpressure:    desc("backpressure_pauses_total", "Times a connection stopped being read because its unsent output passed the backpressure mark."),
		outboundRefused: desc("outbound_refused_writes_total", "Writes refused because they would have taken a connection's queued output past its bound."),
		inboundHeld:     desc("inbound_held_bytes", "Bytes the connections' inbound buffers hold, all together: what the inbound budget bounds."),
		outboundHeld:    desc("outbound_held_bytes", "Bytes of unsent output the connections hold, all together: what the outbound budget bounds."),
		ringExhausted:   desc("io_uring_buffers_exhausted_total", "Receives on io_uring that found every buffer of their loop's ring taken; a rate that climbs with the load says the ring is too small."),
		dials:           desc("dials_total", "Outbound connections, by result: connected or failed.", "result"),
		enrolled:        desc("enrolled_connections_total", "Connections handed to the engine (Enroll)."),
		datagramsDropped: desc("datagrams_dropped_total", "Datagrams a UDP listener received and did not hand to OnTraffic, by reason: "+
			"truncated (larger than the read buffer), rate_limited (past WithDatagramRateLimit), "+
			"sessions_full (from a new peer while its loop held WithDatagramSessions' maximum).", "reason"),
		datagramsSendFailed: desc("datagrams_send_failed_total", "Datagrams a UDP socket failed to send, each once: "+
			"refused by the kernel at once (the error Write returned) or in a batch sent after Write returned (dropped), "+
			"or too large or of the wrong address family for any network to carry."),
	}}
}

// Describe sends the descriptions of every metric the collector makes.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	d := &c.descs
	for _, desc := range []*prom.Desc{d.conns, d.loopConns, d.accepted, d.rejected, d.closed, d.received, d.sent,
		d.backpressure, d.outboundRefused, d.inboundHeld, d.outboundHeld, d.ringExhausted, d.dials, d.enrolled, d.datagramsDropped, d.datagramsSendFailed} {
		ch <- desc
	}
}

// reasonCount is one reason's count, for a counter labelled by reason.
type reasonCount struct {
	reason string
	n      uint64
}

// Collect reads the engine's Stats once and sends a metric for each.
func (c *Collector) Collect(ch chan<- prom.Metric) {
	s := c.stats()
	d := &c.descs
	gauge := func(desc *prom.Desc, v float64, labels ...string) {
		ch <- prom.MustNewConstMetric(desc, prom.GaugeValue, v, labels...)
	}
	counter := func(desc *prom.Desc, v uint64, labels ...string) {
		ch <- prom.MustNewConstMetric(desc, prom.CounterValue, float64(v), labels...)
	}
	gauge(d.conns, float64(s.Conns))
	for i, n := range s.LoopConns {
		gauge(d.loopConns, float64(n), strconv.Itoa(i))
	}
	counter(d.accepted, s.Accepted)
	byReason := func(desc *prom.Desc, counts []reasonCount) {
		for _, r := range counts {
			counter(desc, r.n, r.reason)
		}
	}
	byReason(d.rejected, []reasonCount{
		{"max_connections", s.RejectedMaxConns},
		{"per_source", s.RejectedPerSource},
		{"over_budget", s.RejectedOverBudget},
		{"no_descriptors", s.RejectedNoDescriptors},
		{"proxy_timeout", s.ProxyTimeouts},
		{"proxy_invalid", s.ProxyInvalid},
		{"proxy_missing", s.ProxyMissing},
		{"tls_handshake_failed", s.TLSHandshakeFailures},
		{"tls_handshake_timeout", s.TLSHandshakeTimeouts},
	})
	byReason(d.closed, []reasonCount{
		{"peer", s.ClosedByPeer},
		{"handler", s.ClosedByHandler},
		{"stop", s.ClosedByStop},
		{"error", s.ClosedByError},
		{"panic", s.HandlerPanics},
		{"killed", s.Killed},
		{"idle_timeout", s.IdleTimeouts},
		{"read_timeout", s.ReadTimeouts},
		{"write_timeout", s.WriteTimeouts},
		{"inbound_too_large", s.InboundTooLarge},
		{"outbound_over_limit", s.OutboundOverLimit},
		{"inbound_over_budget", s.InboundOverBudget},
		{"outbound_over_budget", s.OutboundOverBudget},
	})
	counter(d.received, s.BytesIn)
	counter(d.sent, s.BytesOut)
	counter(d.backpressure, s.BackpressurePauses)
	counter(d.outboundRefused, s.OutboundRefused)
	gauge(d.inboundHeld, float64(s.InboundHeld))
	gauge(d.outboundHeld, float64(s.OutboundHeld))
	counter(d.ringExhausted, s.RingBuffersExhausted)
	counter(d.dials, s.Dialed, "connected")
	counter(d.dials, s.DialFailed, "failed")
	counter(d.enrolled, s.Enrolled)
	counter(d.datagramsDropped, s.DatagramsTruncated, "truncated")
	counter(d.datagramsDropped, s.DatagramsRateLimited, "rate_limited")
	counter(d.datagramsDropped, s.SessionsRefused, "sessions_full")
	counter(d.datagramsSendFailed, s.DatagramsSendFailed)
}
