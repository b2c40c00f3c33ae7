// Command httpidle measures what an HTTP server keeps for each idle
// keep-alive connection: it opens -conns connections to the server, each
// sending one GET /plaintext and checking its answer ("Hello, World!", status
// 200), holds them open, and prints as one line of JSON (measure.Report,
// mode memory) the server's resident memory before and after, once it
// settles, and the growth per connection. benchmarks/run calls it for the
// HTTP table's memory row, pinned to the cores the server does not use:
//
//	httpidle -addr 127.0.0.1:8080 -pid $(pgrep -n nethttp) -conns 10000
//
// It is a process of its own because a process may hold only so many
// descriptors: the server holds one for each connection, and so does
// this. It exits 1 if the measurement could not be taken; answers that
// were wrong, late or cut off are counted in the report's errors.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/internal/keepalive"
	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/measure"
)

func main() {
	r := keepalive.Request{Path: hello.PlaintextPath, Want: hello.Plaintext}
	flag.StringVar(&r.Addr, "addr", "127.0.0.1:8080", "server `host:port`")
	pid := flag.Int("pid", 0, "server process id, for its memory")
	conns := flag.Int("conns", 10000, "connections to open and hold")
	parallel := flag.Int("parallel", 64, "connections to open at a time")
	flag.Parse()
	if *pid <= 0 || *conns < 1 || *parallel < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	var held []net.Conn
	rep, err := measure.Idle(*pid, *conns, func() (int, loadgen.Errors) {
		var errs loadgen.Errors
		held, errs = keepalive.Open(r, *conns, *parallel)
		return len(held), errs
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpidle:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	for _, c := range held {
		c.Close()
	}
}
