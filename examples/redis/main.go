// Command redis is a Redis-compatible in-memory server on Sluice: the real
// redis-cli, redis-benchmark and client libraries talk to it as they talk
// to Redis.
//
//	go run ./examples/redis
//	redis-cli -p 6379 SET greeting hello
//	redis-benchmark -q -t set,get -P 16
//	go run ./examples/redis -tls-self-signed
//	redis-cli -p 6379 --tls --insecure PING
//
// It serves one database, shared by every event loop and sharded by key
// hash so that loops rarely wait on each other, with strings, bitmaps,
// lists, sets, hashes and sorted sets, pub/sub, blocking commands and
// transactions, each across the loops: a message published on one loop
// reaches subscribers on all of them, a push on one wakes a client blocked
// on another, and EXEC runs its commands with no other client's between
// them, whatever their loops. Keys expire when read after their time, and
// a sweep, hz times a second, samples keys with a time to live, as Redis
// does, for those nobody reads. It keeps nothing on disk. README.md lists
// the commands and where they differ from Redis's.
//
// Every command a read brings is answered, in order, and the replies go
// back in one write, so pipelining costs one system call a batch. Commands
// are read as Redis reads them: multibulks of bulk strings, or inline
// commands, as typed in telnet, split with Redis's quoting rules; what is
// not a command gets Redis's protocol error, and its connection is closed
// while the others carry on. A bulk string longer than -max-request is
// refused as Redis refuses one longer than its proto-max-bulk-len, and a
// command that outgrows it with "too big request", each of its arguments
// counting 24 bytes beyond its own (what the server holds to point at
// it), so that a command of millions of empty arguments cannot make the
// server hold several times -max-request: with the default 64 MB, a
// command has at most about 2.2 million arguments. Clients speak RESP2
// until they ask for RESP3 with HELLO 3; then maps, sets, doubles, nulls
// and verbatim strings come in their RESP3 forms. Errors are worded as
// Redis words them, so client libraries recognise them.
//
// The server reports itself as Redis 7.0.15, whose replies it follows
// byte for byte where it serves the command (its tests compare them with
// a redis-server's); scores are written as 7.0 writes them, in 17
// significant digits ("0.10000000000000001"). INFO's multiplexing_api
// names the poller the loops run on, epoll or io_uring.
//
// -maxclients bounds the clients connected at once, as Redis's maxclients
// does: a client past it reads "-ERR max number of clients reached" and
// is disconnected; -idle-timeout disconnects a client that sends nothing
// for that long, as Redis's timeout does (CONFIG GET reports both, and
// CONFIG SET changes the timeout). Behind a load balancer that sends the PROXY protocol header (HAProxy's send-proxy or
// send-proxy-v2), -proxy-protocol optional or required reads it, so that
// CLIENT LIST and CLIENT KILL ADDR name the real clients. -poller uring
// (or auto) runs the event loops on io_uring instead of epoll.
//
// A client's replies are bounded as Redis's client-output-buffer-limit
// bounds them, in its form and with its two classes that apply here:
// -client-output-buffer-limit "normal 32mb 8mb 60" disconnects a client
// whose queued replies pass 32 MB, or stay over 8 MB for 60 seconds,
// dropping what it held; "pubsub 32mb 8mb 60", Redis's default, does the
// same for a client subscribed to a channel or a pattern, whose messages
// pile up when it does not read, and publishers never wait on it. Redis
// leaves normal clients unbounded ("normal 0 0 0", which this flag takes
// too); the default here is a hard bound and no soft one, so that one
// client cannot take the server's memory: the engine's 32 MB, or twice
// -max-request where that is more (128 MB with its default), so that a
// client reads back any string it could store. The normal
// class's soft limit is the engine's (sluice.WithOutboundSoftLimit), which
// holds pub/sub clients too. -write-timeout (60 s, nginx's send_timeout)
// disconnects a client whose replies wait that long for it to read, and
// -read-timeout one whose command takes longer than that to arrive; Redis
// has neither, so -read-timeout is off by default.
//
// With -tls-cert and -tls-key (PEM files) it serves TLS, as Redis's
// tls-port does, with the standard library's crypto/tls on its event
// loops; -tls-self-signed makes an ECDSA P-256 certificate for localhost,
// 127.0.0.1 and ::1 as it starts, for trying it out, which redis-cli
// accepts with --tls --insecure. Clients are not asked for certificates
// of their own (Redis's tls-auth-clients no). Commands, pipelining and the
// bounds above work the same over TLS.
//
// It stops gracefully on SIGINT or SIGTERM, or when a client sends
// SHUTDOWN (redis-cli shutdown), sending the replies it has queued, for
// at most 5 s, and says how the stop went before it exits: "redis:
// stopped", with exit status 0, or why not, with exit status 1.
//
// Started with listening sockets (systemd's socket activation, or an
// upgrade) it serves each of them; without -addr, only them. With
// -upgrade-on SIGHUP, that signal starts a new process of the same
// executable and arguments, which takes the listeners over: once it
// serves, this one stops accepting and lets its clients finish, for at
// most -drain, then stops as above. The keyspace is the process's own: a
// new process starts empty. -pid-file names a file that holds the ID of
// the process serving. See package upgrade.
//
// With -debug-addr, it serves the standard library's expvar page,
// /debug/vars, with the engine's counters under "sluice"; after an
// upgrade the new process serves it once the old one has let it go.
package main

import (
	"flag"
	"log"
	"runtime"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/codec"
	"github.com/sluicenet/sluice/examples/internal/tlsflag"
	"github.com/sluicenet/sluice/poller"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "tcp://127.0.0.1:6379", "address to listen on: tcp://host:port or unix:///path")
	flag.IntVar(&cfg.loops, "loops", runtime.NumCPU(), "number of event loops")
	flag.IntVar(&cfg.maxRequest, "max-request", codec.DefaultMaxFrameSize, "largest command accepted, in bytes")
	flag.IntVar(&cfg.maxClients, "maxclients", 10000, "most clients connected at once (0: as many as descriptors allow)")
	flag.DurationVar(&cfg.idleTimeout, "idle-timeout", 0, "disconnect a client idle for this long (0: never)")
	flag.DurationVar(&cfg.readTimeout, "read-timeout", 0, "disconnect a client whose command takes longer than this to arrive (0: never)")
	flag.DurationVar(&cfg.writeTimeout, "write-timeout", sluice.DefaultWriteTimeout, "disconnect a client whose replies wait this long for it to read (negative: never)")
	flag.Var(&cfg.output, "client-output-buffer-limit", `replies and messages a client may have queued, as Redis's "<class> <hard> <soft> <soft seconds>" for normal and pubsub (default "normal <32mb or twice -max-request> 0 0 pubsub 32mb 8mb 60")`)
	flag.TextVar(&cfg.proxy, "proxy-protocol", sluice.ProxyOff, "read a PROXY protocol header first: off, optional or required")
	flag.TextVar(&cfg.poller, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	var tlsFlags tlsflag.Server
	tlsFlags.Register(flag.CommandLine)
	flag.Parse()
	var err error
	if cfg.tls, err = tlsFlags.Config(); err != nil {
		log.Fatalf("redis: %v", err)
	}

	serve(cfg)
}
