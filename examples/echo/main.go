// Command echo is an echo server on Sluice: every byte a client sends
// comes back to it.
//
//	go run ./examples/echo -addr tcp://127.0.0.1:9000
//	go run ./examples/echo -addr unix:///tmp/echo.sock -loops 2
//	go run ./examples/echo -addr udp://127.0.0.1:9000 -reuseport
//	go run ./examples/echo -idle-timeout 5s
//	go run ./examples/echo -proxy-protocol required
//	go run ./examples/echo -poller uring
//	go run ./examples/echo -poller uring -gather-wait 100us
//	go run ./examples/echo -tls-self-signed
//	go run ./examples/echo -tls-cert cert.pem -tls-key key.pem
//
// Over UDP every datagram comes back to its sender, one datagram for
// one; with -reuseport each loop has a socket of its own on the port and
// the kernel spreads the senders over them.
//
// With -poller, the event loops run on epoll (the default), io_uring
// ("uring"; the server refuses to start where the kernel lacks it), or
// "auto": io_uring where it can serve, else epoll, logging which.
//
// With -gather-wait, an io_uring loop that the kernel has woken waits up
// to that long for more before handling any (sluice.WithGatherWait), for
// clients whose requests arrive spread out; 0, the default, turns it off.
// On epoll it is ignored.
//
// With -idle-timeout, a client that sends nothing for that long is
// disconnected, and the server logs it.
//
// With -proxy-protocol, the server sits behind a load balancer such as
// HAProxy (send-proxy or send-proxy-v2): it reads the PROXY header the
// balancer sends first, and logs the client it names. "optional" also
// serves clients that connect directly; "required" closes them. A header
// must arrive within sluice.DefaultProxyHeaderTimeout.
//
// With -tls-cert and -tls-key (PEM files), or -tls-self-signed, it serves
// TLS, with the standard library's crypto/tls on its event loops: the
// echo is of the plaintext. -tls-self-signed makes an ECDSA P-256
// certificate for localhost, 127.0.0.1 and ::1 as it starts, for trying
// it out; clients then skip verification:
//
//	openssl s_client -quiet -connect 127.0.0.1:9000
//
// It stops gracefully on SIGINT or SIGTERM, sending what it has queued,
// for at most 5 s, and says how the stop went before it exits: "echo:
// stopped", or why not, with exit status 1 when connections had to be
// reset. Before that it says how many connections it accepted, and when
// the first and the last came.
//
// Started with listening sockets (systemd's socket activation, or an
// upgrade) it serves each of them; without -addr, only them. With
// -upgrade-on SIGHUP, that signal starts a new process of the same
// executable and arguments, which takes the listeners over: once it
// serves, this one stops accepting and lets its connections finish, for
// at most -drain, then stops as above. -pid-file names a file that holds
// the ID of the process serving. See package upgrade.
//
// With -debug-addr, it serves the standard library's expvar page,
// /debug/vars, with the engine's counters under "sluice"; after an
// upgrade the new process serves it once the old one has let it go.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"runtime"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/examples/internal/tlsflag"
	"github.com/sluicenet/sluice/poller"
)

type echo struct {
	sluice.BuiltinEventEngine
	stats   bool
	start   runtime.MemStats
	accepts accepts
}

func (s *echo) OnBoot(eng sluice.Engine) sluice.Action {
	for _, a := range eng.Addrs() {
		fmt.Printf("echo: listening on %s\n", a)
	}
	if s.stats {
		runtime.ReadMemStats(&s.start)
	}
	return sluice.None
}

func (s *echo) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	s.accepts.opened()
	if _, ok := c.ProxyHeader(); ok {
		log.Printf("echo: %s connected through a proxy", c.RemoteAddr())
	}
	return nil, sluice.None
}

func (s *echo) OnTraffic(c sluice.Conn) sluice.Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return sluice.None
}

func (s *echo) OnClose(c sluice.Conn, err error) sluice.Action {
	if errors.Is(err, sluice.ErrIdleTimeout) {
		log.Printf("echo: %s idle, disconnected", c.RemoteAddr())
	}
	return sluice.None
}

func (s *echo) OnShutdown(sluice.Engine) {
	if s.stats {
		var end runtime.MemStats
		runtime.ReadMemStats(&end)
		fmt.Printf("echo: mallocs %d\n", end.Mallocs-s.start.Mallocs)
	}
}

func main() {
	addr := flag.String("addr", "tcp://127.0.0.1:9000", "address to listen on: tcp://host:port, udp://host:port or unix:///path")
	loops := flag.Int("loops", runtime.NumCPU(), "number of event loops")
	reusePort := flag.Bool("reuseport", false, "one SO_REUSEPORT listener per loop")
	stats := flag.Bool("stats", false, "print heap allocations made while serving, on exit")
	idle := flag.Duration("idle-timeout", 0, "disconnect a client idle for this long (0: never)")
	var proxy sluice.ProxyMode
	flag.TextVar(&proxy, "proxy-protocol", sluice.ProxyOff, "read a PROXY protocol header first: off, optional or required")
	var kind poller.Kind
	flag.TextVar(&kind, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	gather := flag.Duration("gather-wait", 0, "io_uring: after an event, wait up to this long for more before handling them (0: off)")
	var tlsFlags tlsflag.Server
	tlsFlags.Register(flag.CommandLine)
	flag.Parse()
	tlsConfig, err := tlsFlags.Config()
	if err != nil {
		log.Fatalf("echo: %v", err)
	}

	h := &echo{stats: *stats}
	serve(h, *addr, tlsConfig,
		sluice.WithTLS(tlsConfig),
		sluice.WithNumEventLoop(*loops),
		sluice.WithReusePort(*reusePort),
		sluice.WithIdleTimeout(*idle),
		sluice.WithProxyProtocol(proxy, 0),
		sluice.WithPoller(kind),
		sluice.WithGatherWait(*gather))
}
