package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/proxyproto"
)

type echo struct {
	sluice.BuiltinEventEngine
	booted chan sluice.Engine
}

func (e *echo) OnBoot(eng sluice.Engine) sluice.Action {
	e.booted <- eng
	return sluice.None
}

func (e *echo) OnTraffic(c sluice.Conn) sluice.Action {
	b, _ := c.Next(-1)
	c.Write(b)
	return sluice.None
}

func Example() {
	h := &echo{booted: make(chan sluice.Engine, 1)}
	done := make(chan error, 1)
	go func() { done <- sluice.Run(h, "tcp://127.0.0.1:0", sluice.WithNumEventLoop(1)) }()
	eng := <-h.booted

	c, err := net.Dial("tcp", eng.Addrs()[0].String())
	if err != nil {
		panic(err)
	}
	c.Write([]byte("hello, sluice"))
	reply := make([]byte, len("hello, sluice"))
	io.ReadFull(c, reply)
	fmt.Println(string(reply))

	c.Close()
	eng.Stop(context.Background())
	fmt.Println(<-done)
	// Output:
	// hello, sluice
	// <nil>
}

// admin is a server whose connections an administrator can cut off: it
// hands each connection's ID out as it opens.
type admin struct {
	sluice.BuiltinEventEngine
	booted chan sluice.Engine
	opened chan uint64
	closed chan error
}

func (s *admin) OnBoot(eng sluice.Engine) sluice.Action {
	s.booted <- eng
	return sluice.None
}

func (s *admin) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	s.opened <- c.ID()
	return nil, sluice.None
}

func (s *admin) OnClose(c sluice.Conn, err error) sluice.Action {
	s.closed <- err
	return sluice.None
}

// Any goroutine can reset a connection by its ID: the peer sees a TCP
// reset, and OnClose learns why.
func ExampleEngine_Kill() {
	s := &admin{booted: make(chan sluice.Engine, 1), opened: make(chan uint64, 1), closed: make(chan error, 1)}
	go sluice.Run(s, "tcp://127.0.0.1:0", sluice.WithNumEventLoop(1))
	eng := <-s.booted
	defer eng.Stop(context.Background())

	client, err := net.Dial("tcp", eng.Addrs()[0].String())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	id := <-s.opened

	fmt.Println("kill:", eng.Kill(id))
	fmt.Println("OnClose:", <-s.closed)
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = client.Read(make([]byte, 1))
	fmt.Println("peer reset:", errors.Is(err, syscall.ECONNRESET))
	fmt.Println("kill again:", eng.Kill(id))
	// Output:
	// kill: <nil>
	// OnClose: sluice: connection killed
	// peer reset: true
	// kill again: sluice: connection closed
}

// whoami tells each client the address it connects from.
type whoami struct {
	sluice.BuiltinEventEngine
	booted chan sluice.Engine
}

func (s *whoami) OnBoot(eng sluice.Engine) sluice.Action {
	s.booted <- eng
	return sluice.None
}

func (s *whoami) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	return []byte("you are " + c.RemoteAddr().String() + "\n"), sluice.Close
}

// Behind a load balancer that sends the PROXY header, RemoteAddr is the
// client the balancer relays, not the balancer.
func ExampleWithProxyProtocol() {
	s := &whoami{booted: make(chan sluice.Engine, 1)}
	go sluice.Run(s, "tcp://127.0.0.1:0", sluice.WithNumEventLoop(1),
		sluice.WithProxyProtocol(sluice.ProxyRequired, 5*time.Second))
	eng := <-s.booted
	defer eng.Stop(context.Background())

	// The balancer's side: it connects, and first says whose connection
	// it relays.
	balancer, err := net.Dial("tcp", eng.Addrs()[0].String())
	if err != nil {
		panic(err)
	}
	defer balancer.Close()
	h := proxyproto.Header{
		Command:     proxyproto.Proxy,
		Transport:   proxyproto.TCP4,
		Source:      netip.MustParseAddrPort("203.0.113.7:4242"),
		Destination: netip.MustParseAddrPort("198.51.100.1:443"),
	}
	header, _ := h.AppendV1(nil)
	balancer.Write(header)

	balancer.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, _ := io.ReadAll(balancer)
	fmt.Print(string(reply))
	// Output:
	// you are 203.0.113.7:4242
}
