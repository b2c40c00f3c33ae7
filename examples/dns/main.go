// Command dns is an authoritative DNS server over UDP on Sluice's event
// loops, for a small static zone: it answers A and AAAA queries for the
// names it holds, NXDOMAIN for any other name, NODATA (no records) for
// another type of a name it holds, and FORMERR for a malformed query,
// REFUSED for a class other than IN, NOTIMP for an opcode other than
// QUERY. It speaks EDNS (RFC 6891) version 0, answering BADVERS to
// another; an answer too large for what the client takes over UDP is
// sent truncated (TC), for the client to ask again over TCP, which this
// server does not serve. It parses and builds DNS messages itself (msg.go),
// with no allocation per query.
//
//	go run ./examples/dns -zone examples/dns/testdata/example.zone
//	go run ./examples/dns -record www.example.com=192.0.2.1 -record www.example.com=2001:db8::1
//	dig @127.0.0.1 -p 5353 www.example.com A
//
// A zone file has a record a line, "name type address", type A or AAAA;
// ';' or '#' starts a comment. -record name=address, which may be
// repeated, adds one, A or AAAA as the address says. Every record has
// the TTL -ttl gives.
//
// With -poller, the event loops run on epoll (the default), io_uring
// ("uring"; the server refuses to start where the kernel lacks it), or
// "auto": io_uring where it can serve, else epoll, logging which. With
// -loops above one and -reuseport, each loop has a socket of its own on
// the port and the kernel spreads the clients over them.
//
// It stops on SIGINT or SIGTERM, saying "dns: stopped".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/poller"
)

// records is the -record flag: name=address, repeated.
type records []string

func (r *records) String() string     { return strings.Join(*r, ",") }
func (r *records) Set(s string) error { *r = append(*r, s); return nil }

func main() {
	addr := flag.String("addr", "udp://127.0.0.1:5353", "address to serve on: udp://host:port")
	loops := flag.Int("loops", runtime.NumCPU(), "number of event loops")
	reusePort := flag.Bool("reuseport", false, "one SO_REUSEPORT socket per loop")
	zoneFile := flag.String("zone", "", "zone file: a \"name type address\" record a line")
	ttl := flag.Uint("ttl", 300, "the TTL of every answer, in seconds")
	var recs records
	flag.Var(&recs, "record", "a record, name=address (A or AAAA as the address is); may be repeated")
	var kind poller.Kind
	flag.TextVar(&kind, "poller", poller.Epoll, "how the event loops wait: epoll, uring or auto")
	flag.Parse()

	z, err := loadZone(*zoneFile, recs)
	if err != nil {
		log.Fatalf("dns: %v", err)
	}
	if *loops < 1 {
		*loops = 1
	}
	// Before the address is printed, so that a signal sent once it is
	// stops the server gracefully.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := newServer(z, uint32(*ttl), *loops)
	eng, err := sluice.Start(s, *addr,
		sluice.WithNumEventLoop(*loops),
		sluice.WithReusePort(*reusePort),
		sluice.WithPoller(kind))
	if err != nil {
		log.Fatalf("dns: %v", err)
	}
	fmt.Printf("dns: %d names, serving on %s\n", len(z), eng.Addrs()[0])
	select {
	case <-sig:
	case <-eng.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		log.Fatalf("dns: stop: %v", err)
	}
	fmt.Println("dns: stopped")
}

// loadZone reads the zone file, if named, and adds the records.
func loadZone(file string, recs records) (zone, error) {
	z := zone{}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := z.read(f); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	for _, r := range recs {
		name, address, ok := strings.Cut(r, "=")
		typ := "A"
		if strings.Contains(address, ":") {
			typ = "AAAA"
		}
		if !ok {
			return nil, fmt.Errorf("-record %q: want name=address", r)
		}
		if err := z.add(name, typ, address); err != nil {
			return nil, fmt.Errorf("-record %q: %w", r, err)
		}
	}
	if len(z) == 0 {
		return nil, fmt.Errorf("no records: give -zone or -record")
	}
	return z, nil
}
