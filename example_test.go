package sluice_test

import (
	"bytes"
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

// stdEcho is an echo server from the standard library, for one
// connection.
func stdEcho() net.Listener {
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() {
		c, err := server.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c)
		c.Close()
	}()
	return server
}

// client is the handler of an engine that listens on nothing and only
// dials. Its first dial is refused: it hears so in OnDialFailed and dials
// the second address from there.
type client struct {
	sluice.BuiltinEventEngine
	eng           sluice.Engine
	first, second string
	booted        chan sluice.Engine
	closed        chan struct{}
}

func (cl *client) OnBoot(eng sluice.Engine) sluice.Action {
	cl.eng = eng
	cl.booted <- eng
	if err := eng.Dial(cl.first, "first"); err != nil {
		panic(err) // an address that does not parse, or a stopped engine
	}
	return sluice.None
}

func (cl *client) OnDialFailed(addr string, ctx any, err error) {
	fmt.Println(ctx, "refused:", errors.Is(err, syscall.ECONNREFUSED))
	if err := cl.eng.Dial(cl.second, "second"); err != nil {
		panic(err)
	}
}

func (cl *client) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	fmt.Println(c.Context(), "open:", c.Origin())
	return []byte("ping"), sluice.None
}

func (cl *client) OnTraffic(c sluice.Conn) sluice.Action {
	reply, err := c.Next(len("ping"))
	if err != nil {
		return sluice.None // the rest has yet to come
	}
	fmt.Printf("%v got: %s\n", c.Context(), reply)
	return sluice.Close
}

func (cl *client) OnClose(c sluice.Conn, err error) sluice.Action {
	fmt.Println(c.Context(), "closed:", err)
	close(cl.closed)
	return sluice.None
}

// Dial returns at once. The connection comes to OnOpen once it is
// connected, carrying the context Dial was given; a dial that fails comes
// to OnDialFailed instead, and never to OnOpen or OnClose.
func ExampleEngine_Dial() {
	server := stdEcho() // something to dial
	defer server.Close()
	// And an address where nothing listens.
	nobody, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	nobody.Close()

	cl := &client{
		first:  nobody.Addr().String(),            // without a scheme: TCP
		second: "tcp://" + server.Addr().String(), // or with one
		booted: make(chan sluice.Engine, 1),
		closed: make(chan struct{}),
	}
	go sluice.Run(cl, "", sluice.WithNumEventLoop(1)) // no address: no listener
	eng := <-cl.booted
	defer eng.Stop(context.Background())

	<-cl.closed
	s := eng.Stats()
	fmt.Println("dialed:", s.Dialed, "failed:", s.DialFailed)
	// Output:
	// first refused: true
	// second open: dialed
	// second got: ping
	// second closed: <nil>
	// dialed: 1 failed: 1
}

// upper answers once its client has sent everything: in half-close mode
// the client's end of stream leaves the connection open for the answer.
type upper struct {
	sluice.BuiltinEventEngine
	booted chan sluice.Engine
}

func (s *upper) OnBoot(eng sluice.Engine) sluice.Action {
	s.booted <- eng
	return sluice.None
}

// OnTraffic consumes nothing: the bytes stay buffered until the end.
func (s *upper) OnTraffic(c sluice.Conn) sluice.Action { return sluice.None }

// OnHalfClose runs once the client has finished sending, with every byte
// it sent still buffered.
func (s *upper) OnHalfClose(c sluice.Conn) sluice.Action {
	all, _ := c.Next(-1)
	c.Write(bytes.ToUpper(all))
	return sluice.Close
}

// With WithHalfClose(true), a peer that shuts down its write side can
// still read the answer: the connection stays open for writing, and
// OnHalfClose says when the peer has finished.
func ExampleWithHalfClose() {
	s := &upper{booted: make(chan sluice.Engine, 1)}
	go sluice.Run(s, "tcp://127.0.0.1:0", sluice.WithNumEventLoop(1), sluice.WithHalfClose(true))
	eng := <-s.booted
	defer eng.Stop(context.Background())

	c, err := net.Dial("tcp", eng.Addrs()[0].String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	c.Write([]byte("hello, "))
	c.Write([]byte("half-close"))
	c.(*net.TCPConn).CloseWrite() // the end of what it sends

	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, err := io.ReadAll(c)
	fmt.Printf("%s %v\n", reply, err)
	// Output:
	// HELLO, HALF-CLOSE <nil>
}

// pinger dials, says ping, and passes the answer on.
type pinger struct {
	sluice.BuiltinEventEngine
	answers chan string
}

func (p *pinger) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	return []byte("ping"), sluice.None
}

func (p *pinger) OnTraffic(c sluice.Conn) sluice.Action {
	reply, err := c.Next(len("ping"))
	if err != nil {
		return sluice.None // the rest has yet to come
	}
	p.answers <- string(reply)
	return sluice.Close
}

// Start returns the engine once it has booted, so a program that only
// dials needs no goroutine for Run and no channel filled in OnBoot. Wait
// returns once the engine has stopped.
func ExampleStart() {
	server := stdEcho() // something to dial
	defer server.Close()

	p := &pinger{answers: make(chan string, 1)}
	eng, err := sluice.Start(p, "", sluice.WithNumEventLoop(1)) // no address: a client
	if err != nil {
		panic(err)
	}
	if err := eng.Dial(server.Addr().String(), nil); err != nil {
		panic(err)
	}
	fmt.Println("got:", <-p.answers)

	eng.Stop(context.Background())
	fmt.Println("stopped:", eng.Wait())
	// Output:
	// got: ping
	// stopped: <nil>
}

// greeter keeps a count of datagrams per peer in its session's context
// (WithDatagramSessions) and says goodbye when a peer goes idle.
type greeter struct {
	sluice.BuiltinEventEngine
	gone chan string
}

func (g *greeter) OnOpen(c sluice.Conn) ([]byte, sluice.Action) {
	c.SetContext(new(int))
	return nil, sluice.None
}

func (g *greeter) OnTraffic(c sluice.Conn) sluice.Action {
	n := c.Context().(*int)
	*n++
	name, _ := c.Next(-1)
	fmt.Fprintf(c, "hello %s, datagram %d", name, *n)
	return sluice.None
}

func (g *greeter) OnClose(c sluice.Conn, err error) sluice.Action {
	g.gone <- fmt.Sprintf("%d datagrams, then %v", *c.Context().(*int), err)
	return sluice.None
}

// Each peer of a UDP listener gets a session of its own, with a context,
// closed once the peer has sent nothing for the idle time.
func ExampleWithDatagramSessions() {
	g := &greeter{gone: make(chan string, 1)}
	eng, err := sluice.Start(g, "udp://127.0.0.1:0", sluice.WithNumEventLoop(1),
		sluice.WithDatagramSessions(100*time.Millisecond, 1000))
	if err != nil {
		panic(err)
	}
	defer eng.Stop(context.Background())

	c, err := net.Dial("udp", eng.Addrs()[0].String())
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 64)
	for range 2 {
		c.Write([]byte("ada"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := c.Read(buf)
		fmt.Println(string(buf[:n]))
	}
	c.Close()
	fmt.Println(<-g.gone)
	// Output:
	// hello ada, datagram 1
	// hello ada, datagram 2
	// 2 datagrams, then sluice: idle timeout
}
