package measure_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/sluicenet/sluice/benchmarks/loadgen"
	"github.com/sluicenet/sluice/benchmarks/measure"
)

// Measure the closed loop on 10 connections of a server; here it runs in this
// process, where a benchmark passes a separate server's address and process id.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			go func() {
				buf := make([]byte, 64)
				for n, err := c.Read(buf); err == nil; n, err = c.Read(buf) {
					c.Write(buf[:n])
				}
				c.Close()
			}()
		}
	}()
	t := measure.Target{
		Config: loadgen.Config{Addr: netip.MustParseAddrPort(ln.Addr().String()), Conns: 10, Size: 64, Workers: 1},
		PID:    os.Getpid(),
	}
	r, err := measure.Closed(t, 20*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("round trips:", r.RoundTrips > 0, "errors:", r.Errors.Total(), "CPU per round trip known:", r.CPUPerRT > 0)
	// Output: round trips: true errors: 0 CPU per round trip known: true
}
