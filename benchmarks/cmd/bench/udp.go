package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	lg "github.com/sluicenet/sluice/benchmarks/loadgen" // its own name is the runner function loadgen's
	"github.com/sluicenet/sluice/benchmarks/measure"
	"github.com/sluicenet/sluice/benchmarks/table"
)

// The UDP shapes fill a table of their own: the stacks that serve UDP
// (stack.udp), each echoing datagrams from one UDP socket (the servers'
// -udp), beside gnet's and the C floor's (cfloor/udp_echo.c: recvmmsg
// and sendmmsg, 64 datagrams a call). The load generator drives them with
// -udp: udpPeers peers, each a UDP socket of its own, every echo checked,
// a datagram not echoed within half a second lost. Like the proxy and TLS
// shapes they run with -quick or -only, not in the full run. Each shape
// is marked udp: measureOne starts the server with -udp and gives the
// load generator -udp.

// udpPeers is how many peers (UDP sockets) every UDP shape uses.
const udpPeers = 100

// udpLossFraction is the share of its own saturation rate the loss row
// paces each stack at: just below saturation.
const udpLossFraction = 0.9

// udpBigRecvBuf is the receive buffer the second loss row asks each
// server for (-rcvbuf): 4 MiB, which Linux doubles where
// net.core.rmem_max allows (it caps what it grants there).
const udpBigRecvBuf = 4 << 20

// The batched rows' generator: udpBatchPeers peers, each keeping
// udpInFlight datagrams in flight, sent and received with sendmmsg and
// recvmmsg (loadgen -inflight), so that the generator spends little per
// datagram and saturation is the server's. 128 in flight in all fit the
// server's default receive buffer (256 datagrams of 64 B) twice over.
const (
	udpBatchPeers = 4
	udpInFlight   = 32
)

var errUDPNotReady = errors.New("UDP server not echoing")

// udpShapes returns the UDP table's measurements, in the order it lists
// their rows.
func udpShapes(t timing) []shape {
	peers := strconv.Itoa(udpPeers)
	udp := func(args []string) []string { return append([]string{"-udp"}, args...) }
	lossPct := func(m measurement) (float64, bool) { return 100 * m.load.LossRate(), true }
	pct := strconv.Itoa(int(100 * udpLossFraction))
	batch := func(args []string) []string {
		return udp(append(args, "-inflight", strconv.Itoa(udpInFlight)))
	}
	gso := func(args []string) []string { return batch(append(args, "-gso")) }
	batched := fmt.Sprintf("batched generator (%d peers, %d in flight each)", udpBatchPeers, udpInFlight)
	lossArgs := udp(loadArgs("loss", udpPeers, 64, "-fraction", strconv.FormatFloat(udpLossFraction, 'f', -1, 64),
		"-warmup", t.warm.String(), "-duration", t.paced.String()))
	bigBuf := strconv.Itoa(udpBigRecvBuf>>20) + " MiB receive buffer"
	return []shape{
		{name: "udp saturation", udp: true, args: udp(t.closed(udpPeers, 64)), rows: []row{
			{"Datagrams/s at saturation (" + peers + " peers, one in flight each, 64 B)", rate},
			{"At saturation: server CPU µs/datagram", cpu},
		}},
		{name: "udp paced", udp: true, args: udp(t.pacedArgs(udpPeers)), rows: []row{
			{"Paced 30k datagrams/s, " + peers + " peers, 64 B: server CPU µs/datagram", cpu},
			{"Paced 30k datagrams/s: p99 µs", p99},
			{"Paced 30k datagrams/s: lost %", lossPct},
		}},
		{name: "udp syscalls", udp: true, perf: true, args: udp(t.counted(udpPeers)), rows: []row{
			{"System calls/datagram at saturation (" + peers + " peers, one in flight each)", syscalls},
		}},
		{name: "udp loss", udp: true, args: lossArgs, rows: []row{
			{"Paced at " + pct + "% of its own saturation: datagrams/s", rate},
			{"Paced at " + pct + "% of its own saturation: lost %", lossPct},
		}},
		{name: "udp loss rcvbuf", udp: true, args: lossArgs, server: []string{"-rcvbuf", strconv.Itoa(udpBigRecvBuf)}, rows: []row{
			{"Paced at " + pct + "% of its own saturation, " + bigBuf + ": datagrams/s", rate},
			{"Paced at " + pct + "% of its own saturation, " + bigBuf + ": lost %", lossPct},
		}},
		{name: "udp batched saturation", udp: true, args: batch(t.closed(udpBatchPeers, 64)), rows: []row{
			{"Datagrams/s at saturation, " + batched + ", 64 B", rate},
			{"At saturation, batched generator: server CPU µs/datagram", cpu},
		}},
		{name: "udp batched syscalls", udp: true, perf: true, args: batch(t.counted(udpBatchPeers)), rows: []row{
			{"System calls/datagram at saturation, " + batched, syscalls},
		}},
		{name: "udp batched gso saturation", udp: true, args: gso(t.closed(udpBatchPeers, 64)), rows: []row{
			{"Datagrams/s at saturation, " + batched + " sending each batch with GSO, 64 B", rate},
			{"At saturation, batched generator with GSO: server CPU µs/datagram", cpu},
		}},
		{name: "udp batched gso syscalls", udp: true, perf: true, args: gso(t.counted(udpBatchPeers)), rows: []row{
			{"System calls/datagram at saturation, " + batched + " sending each batch with GSO", syscalls},
		}},
	}
}

// udpStacks returns those of list that serve UDP, in order.
func udpStacks(list []stack) []stack {
	return withOnly(list, func(s stack) bool { return s.udp != "" })
}

// udpColumns returns the UDP table's columns for list.
func udpColumns(list []stack) []string {
	return columns(list, func(s stack) string { return s.udp })
}

// startUDPServer starts st's server pinned to cpus echoing datagrams on a
// free UDP port, with more flags if any, and waits until it echoes one.
func startUDPServer(st stack, bin string, cpus cpuList, more ...string) (*server, error) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	s, err := launch(st, bin, cpus, append([]string{"-addr", addr, "-udp"}, more...)...)
	if err != nil {
		return nil, err
	}
	s.addr = addr
	if err := s.waitEcho(); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

// waitEcho sends a datagram to the server until one comes back, it exits,
// or readyTimeout passes.
func (s *server) waitEcho() error {
	c, err := net.Dial("udp4", s.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	probe, got := []byte("ready?"), make([]byte, 16)
	for deadline := time.Now().Add(readyTimeout); time.Now().Before(deadline); {
		select {
		case <-s.done:
			return fmt.Errorf("%w: %v: %s", errExited, s.err, s.stderr.Bytes())
		default:
		}
		c.Write(probe)
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if n, err := c.Read(got); err == nil && string(got[:n]) == string(probe) {
			return nil
		}
	}
	return fmt.Errorf("%w on %s within %v", errUDPNotReady, s.addr, readyTimeout)
}

// udpPreamble says how the UDP table was made.
func udpPreamble(cfg config) string {
	return fmt.Sprintf("UDP. Each server on CPUs %s (GOMAXPROCS and loops to match) echoes datagrams from one UDP socket; "+
		"the load generator on CPUs %s drives it from %d peers, each a UDP socket of its own, every echo checked byte for byte, "+
		"a datagram not echoed within %v lost. sluice, sluice-uring: \"udp://\" (OnTraffic per datagram, Write answers the sender); "+
		"gnet: \"udp://\"; C floor: cfloor/udp_echo.c, recvmmsg and sendmmsg 64 datagrams a call. "+
		"Saturation: each peer keeps one datagram in flight. Paced: %d datagrams a second in all, each peer sending on time whether or not its last was echoed. "+
		"System calls: perf over a fixed count of saturation round trips. Loss row: the closed loop's rate measured, then %.0f%% of it paced over the same peers, each server with its default receive buffer "+
		"(the kernel's, but sluice's, which asks for 4 MiB: sluice.DefaultPacketRecvBuffer); again with each server asking for a %d MiB receive buffer (-rcvbuf). Batched generator: %d peers, each keeping %d datagrams in flight, sent and received with sendmmsg and recvmmsg (loadgen -inflight); with GSO, each batch sent instead with one sendmsg and UDP_SEGMENT (loadgen -gso), as a QUIC stack sends, which a server that turns UDP_GRO on (sluice on epoll) receives coalesced.\n"+
		"Cells: median over rounds (median per-round ratio to %s, low–high).\n",
		cfg.server.spec, cfg.client.spec, udpPeers, lg.LossTimeout, pacedRate, 100*udpLossFraction, udpBigRecvBuf>>20, udpBatchPeers, udpInFlight, base)
}

// newUDPTable returns the UDP table for shapes over list.
func newUDPTable(shapes []shape, list []stack) *table.Table {
	return newTable(base, udpColumns(list), shapes, func(sh shape) []row { return sh.rows })
}

// lossSummary is a UDP measurement's progress line, its loss included.
func lossSummary(l measure.Report) string {
	return fmt.Sprintf("%s/s, p99 %s µs, %s µs CPU/datagram, lost %d, late %d",
		table.Format(l.Rate), table.Format(l.P99), table.Format(l.CPUPerRT), l.Lost, l.Late)
}
