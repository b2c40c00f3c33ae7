package main

import (
	"context"
	"fmt"
	"net"
	"time"
)

// The server and its client in one process, as these run them apart:
//
//	go run ./examples/offload -delay 1ms
//	go run ./examples/offload -client -n 100 -c 10
func Example() {
	addrs := make(chan net.Addr, 1)
	s, err := newServer(serverConfig{
		addr:      "tcp://127.0.0.1:0",
		loops:     1,
		delay:     time.Millisecond,
		maxFrame:  1 << 20,
		listening: func(a net.Addr) { addrs <- a },
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.run(ctx) }()

	r, err := runClient(ctx, clientConfig{addr: "tcp://" + (<-addrs).String(), requests: 100, conns: 10, size: 16})
	fmt.Println(r.answered, "answered,", r.shed, "shed,", err)
	stop()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// 100 answered, 0 shed, <nil>
	// stopped: <nil>
}
