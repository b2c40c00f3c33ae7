package loadgen_test

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/sluicenet/sluice/benchmarks/loadgen"
)

// Drive exactly 1,000 round trips of 64 bytes over 10 connections to an echo
// server (here one in this process) and check what came back.
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
	s, err := loadgen.Dial(loadgen.Config{
		Addr:    netip.MustParseAddrPort(ln.Addr().String()),
		Conns:   10,
		Size:    64,
		Workers: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	res := s.Exchange(1000)
	fmt.Println(res.RoundTrips, "round trips,", res.Errors.Total(), "errors")
	// Output: 1000 round trips, 0 errors
}

// Drive 1,000 datagrams of 64 bytes from 10 peers, one in flight each, to
// a UDP echo server (here one in this process).
func ExampleDialDatagrams() {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 64)
		for n, from, err := pc.ReadFromUDPAddrPort(buf); err == nil; n, from, err = pc.ReadFromUDPAddrPort(buf) {
			pc.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	s, err := loadgen.DialDatagrams(loadgen.Config{
		Addr:    pc.LocalAddr().(*net.UDPAddr).AddrPort(),
		Conns:   10,
		Size:    64,
		Workers: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	res := s.Exchange(1000)
	fmt.Println(res.RoundTrips+res.Lost, "datagrams,", res.Errors.Total(), "errors")
	// Output: 1000 datagrams, 0 errors
}
