// Command redis is a Redis-compatible in-memory server on Sluice: the real
// redis-cli, redis-benchmark and client libraries talk to it as they talk
// to Redis.
//
//	go run ./examples/redis
//	redis-cli -p 6379 SET greeting hello
//	redis-benchmark -q -t set,get -P 16
//
// It serves one database, shared by every event loop and sharded by key
// hash so that loops rarely wait on each other, with strings, lists, sets,
// hashes and sorted sets. Keys expire when read after their time, and a
// sweep every 100 ms samples keys with a time to live, as Redis does, for
// those nobody reads. It keeps nothing on disk.
//
// Every command a read brings is answered, in order, and the replies go
// back in one write, so pipelining costs one system call a batch. Inline
// commands, as typed in telnet, work too. Clients speak RESP2 until they
// ask for RESP3 with HELLO 3; then maps, sets, doubles and nulls come in
// their RESP3 forms (INFO and CLIENT LIST stay bulk strings, which RESP3
// clients read as well). Errors are worded as Redis words them, so client
// libraries recognise them. A command that is not RESP, or is larger than
// -max-request, gets a protocol error and its connection is closed; the
// others carry on.
//
// The commands are those redis-cli, redis-benchmark and most client
// libraries need, listed by COMMAND; ZRANGE takes ranks (with REV and
// WITHSCORES), not BYSCORE or BYLEX. CLIENT KILL resets the connections it
// selects: they see a TCP reset, and replies still queued for them are
// dropped. The server reports itself as Redis 7.2, whose replies it
// follows; doubles are written as Redis 7.2 writes them, "0.1" rather than
// "0.10000000000000001".
//
// -maxclients bounds the clients connected at once, as Redis's maxclients
// does: a client past it reads "-ERR max number of clients reached" and
// is disconnected; -idle-timeout disconnects a client that sends nothing
// for that long, as Redis's timeout does (CONFIG GET reports both). Behind a load
// balancer that sends the PROXY protocol header (HAProxy's send-proxy or
// send-proxy-v2), -proxy-protocol optional or required reads it, so that
// CLIENT LIST and CLIENT KILL ADDR name the real clients. -poller uring
// (or auto) runs the event loops on io_uring instead of epoll.
//
// A client's replies are bounded as Redis's client-output-buffer-limit
// bounds them, in its form: -client-output-buffer-limit "normal 32mb 8mb
// 60" disconnects a client whose queued replies pass 32 MB, or stay over 8
// MB for 60 seconds, dropping what it held. Redis leaves normal clients
// unbounded ("normal 0 0 0", which this flag takes too); the default here
// is the engine's, a 32 MB hard bound and no soft one, so that one client
// cannot take the server's memory. -write-timeout (60 s, nginx's
// send_timeout) disconnects a client whose replies wait that long for it
// to read, and -read-timeout one whose command takes longer than that to
// arrive; Redis has neither, so -read-timeout is off by default.
//
// It stops gracefully on SIGINT or SIGTERM, sending the replies it has
// queued, for at most 5 s, and says how the stop went before it exits:
// "redis: stopped", or why not, with exit status 1.
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
	"runtime"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/codec"
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
	flag.Var(&cfg.output, "client-output-buffer-limit", `replies a client may have queued, as Redis's "normal <hard> <soft> <soft seconds>" (default "normal 32mb 0 0")`)
	flag.TextVar(&cfg.proxy, "proxy-protocol", sluice.ProxyOff, "read a PROXY protocol header first: off, optional or required")
	flag.TextVar(&cfg.poller, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	flag.Parse()

	serve(cfg)
}
