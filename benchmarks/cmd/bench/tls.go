package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/table"
)

// The TLS rows measure the stacks that serve TLS (stack.tls) in a table of
// their own, every ratio to crypto/tls with a goroutine per connection:
// each server runs with -tls-cert and -tls-key (a certificate the runner
// makes for the run, ECDSA P-256), and the load generator speaks TLS 1.3
// to it with crypto/tls (-tls-cert, the certificate pinned), offering
// X25519 alone, so that every stack runs the same key exchange. Each shape
// is marked tls: measureOne and measureProxy add the flags.

// tlsBase is the stack every ratio in the TLS table is to.
const tlsBase = "crypto/tls"

// tlsGroups is the key exchange the load generator offers: one that every
// stack here implements, so the handshakes compare like with like.
// crypto/tls's client would also offer X25519MLKEM768, and a resumed
// handshake runs the key exchange too.
const tlsGroups = "x25519"

// handshakesInFlight is how many connections the handshake rows keep in
// progress at once.
const handshakesInFlight = 50

// tlsFullRecord is the memory row's second message: one full TLS record
// each way (the load generator writes it as one record).
const tlsFullRecord = 16 << 10

// tlsShapes returns the TLS table's measurements, in the order it lists
// their rows.
func tlsShapes(t timing) []shape {
	handshakes := func(more ...string) []string {
		return loadArgs("handshakes", handshakesInFlight, 64, append([]string{"-warmup", t.warm.String(), "-duration", t.handshakes.String()}, more...)...)
	}
	thenPerConn := func(m measurement) (float64, bool) { return m.load.ThenPerConn, m.load.ThenSize > 0 }
	idle := table.Format(float64(t.tlsIdle))
	return []shape{
		{name: "tls paced 100 conns", tls: true, args: t.pacedArgs(100), rows: []row{
			{"TLS paced 30k rt/s, 100 conns, 64 B: server CPU µs/rt", cpu},
			{"TLS paced 30k rt/s, 100 conns, 64 B: p99 µs", p99},
		}},
		{name: "tls paced 1,000 conns", tls: true, args: t.pacedArgs(1000), rows: []row{
			{"TLS paced 30k rt/s, 1,000 conns, 64 B: server CPU µs/rt", cpu},
			{"TLS paced 30k rt/s, 1,000 conns, 64 B: p99 µs", p99},
		}},
		{name: "tls full handshakes", tls: true, args: handshakes(), rows: []row{
			{"Full handshakes/s (connect, handshake, 64 B round trip, close; 50 at a time)", rate},
			{"Full handshake: server CPU µs", cpu},
		}},
		{name: "tls resumed handshakes", tls: true, args: handshakes("-tls-resume"), rows: []row{
			{"Resumed handshakes/s (session tickets; the same)", rate},
			{"Resumed handshake: server CPU µs", cpu},
		}},
		{name: "tls memory", tls: true, args: loadArgs("memory", t.tlsIdle, 64, "-then-size", strconv.Itoa(tlsFullRecord)), rows: []row{
			{idle + " idle TLS conns after a 64 B round trip: resident B/conn", perConn},
			{idle + " idle TLS conns after a 16 KiB one too: resident B/conn", thenPerConn},
		}},
		// What a Go client (or a browser) offers by default: the hybrid
		// key share's 1.2 KB in the ClientHello sizes buffers crypto/tls
		// keeps for the connection's life.
		{name: "tls memory default key share", tls: true, args: loadArgs("memory", t.tlsIdle, 64, "-tls-groups", "default"), rows: []row{
			{idle + " idle TLS conns, client offering X25519MLKEM768 (crypto/tls's default), after a 64 B round trip: resident B/conn", perConn},
		}},
	}
}

// serverTLS returns the flags that make a server, or examples/proxy, serve
// TLS with the run's certificate.
func (c config) serverTLS() []string {
	return []string{"-tls-cert", c.certs.Cert, "-tls-key", c.certs.Key}
}

// clientTLS returns the load generator's flags args, and those that make
// it speak TLS to a server with the run's certificate, offering tlsGroups
// unless args name the key exchanges.
func (c config) clientTLS(args []string) []string {
	args = append(slices.Clone(args), "-tls-cert", c.certs.Cert)
	if !slices.Contains(args, "-tls-groups") {
		args = append(args, "-tls-groups", tlsGroups)
	}
	return args
}

// tlsColumns returns the TLS table's columns for list.
func tlsColumns(list []stack) []string {
	return columns(list, func(s stack) string { return s.tls })
}

// tlsSeen is what a run's TLS measurements negotiated, per column (each
// outcome once), and the lowest share of the resumed rows' handshakes that
// resumed, for the TLS table's preamble.
type tlsSeen struct {
	negotiated map[string][]string
	resumed    map[string]float64
}

func newTLSSeen() *tlsSeen {
	return &tlsSeen{negotiated: map[string][]string{}, resumed: map[string]float64{}}
}

// note records what load, shape sh measured on column, saw.
func (s *tlsSeen) note(column string, sh shape, load measure.Report) {
	if load.TLS != "" && !slices.Contains(s.negotiated[column], load.TLS) {
		s.negotiated[column] = append(s.negotiated[column], load.TLS)
	}
	if slices.Contains(sh.args, "-tls-resume") && load.RoundTrips > 0 {
		share := float64(load.Resumed) / float64(load.RoundTrips)
		if low, ok := s.resumed[column]; !ok || share < low {
			s.resumed[column] = share
		}
	}
}

// tlsPreamble says how the TLS table was made and what each stack
// negotiated.
func tlsPreamble(cfg config, list []stack, seen *tlsSeen) string {
	var got, resumed []string
	for _, st := range list {
		if n, ok := seen.negotiated[st.tls]; ok {
			got = append(got, st.tls+": "+strings.Join(n, ", "))
		}
		if share, ok := seen.resumed[st.tls]; ok {
			resumed = append(resumed, fmt.Sprintf("%s %.0f%%", st.tls, 100*share))
		}
	}
	lines := []string{
		fmt.Sprintf("TLS. Each server on CPUs %s (GOMAXPROCS and loops to match) serving TLS with a self-signed ECDSA P-256 certificate made for the run; "+
			"the load generator on CPUs %s speaks TLS 1.3 with Go's crypto/tls, offering %s only (but in the last row), one record per write, the certificate pinned. "+
			"sluice, sluice-uring: WithTLS (the handshake on a goroutine, the records on the loop); crypto/tls: tls.NewListener, a goroutine and a 64 KiB buffer per connection; "+
			"nbio: github.com/lesismal/llib's crypto/tls fork, nonblocking on the poller, as nbio's HTTPS server uses it. "+
			"Handshake rows: %d connections at a time, each connects, completes a handshake, makes one 64 B round trip and closes (close_notify); "+
			"the generator's side of a handshake costs its CPU about what the server's costs the server, so either can limit the rate: read it beside the server's CPU per handshake. "+
			"Memory rows: resident bytes per connection after each made one 64 B round trip, then again after each made a 16 KiB one (one full record from the client).",
			cfg.server.spec, cfg.client.spec, strings.ToUpper(tlsGroups), handshakesInFlight),
	}
	if len(got) > 0 {
		lines = append(lines, "Negotiated: "+strings.Join(got, "; ")+".")
	}
	if len(resumed) > 0 {
		lines = append(lines, "Resumed rows, lowest share of handshakes that resumed: "+strings.Join(resumed, ", ")+".")
	}
	lines = append(lines, fmt.Sprintf("Cells: median over rounds (median per-round ratio to %s, low–high).", tlsBase))
	return strings.Join(lines, "\n") + "\n"
}
