package sluice_test

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/sluicenet/sluice"
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
