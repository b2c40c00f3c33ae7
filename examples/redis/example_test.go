package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
)

// Example runs the server on a free port and talks RESP to it by hand.
func Example() {
	s := newServer(config{addr: "tcp://127.0.0.1:0", loops: 1})
	go s.run()
	<-s.booted
	defer s.eng.Stop(context.Background())

	conn, err := net.Dial("tcp", s.eng.Addrs()[0].String())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	// Two commands in one write: one in RESP, as client libraries send
	// them, one inline, as typed in telnet.
	fmt.Fprint(conn, "*3\r\n$3\r\nSET\r\n$8\r\ngreeting\r\n$5\r\nhello\r\nGET greeting\r\n")
	r := bufio.NewReader(conn)
	for range 3 {
		line, _ := r.ReadString('\n')
		fmt.Printf("%q\n", line)
	}
	// Output:
	// "+OK\r\n"
	// "$5\r\n"
	// "hello\r\n"
}
