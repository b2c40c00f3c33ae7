package codec_test

import (
	"fmt"

	"github.com/sluicenet/sluice/codec"
)

// A sluice handler passes its Conn where this passes a Buffer.
func Example() {
	var conn codec.Buffer
	var lf codec.LengthField // a 4-byte length, then the payload
	_ = lf.Encode(&conn, []byte("hello"))
	_ = lf.Encode(&conn, []byte("world"))
	_, _ = conn.Write([]byte{0, 0}) // the start of a frame still arriving

	err := codec.Each(&conn, lf, func(frame []byte) error {
		fmt.Printf("%s\n", frame)
		return nil
	})
	fmt.Println(err, conn.Len())
	// Output:
	// hello
	// world
	// <nil> 2
}

func ExampleRESP() {
	var conn codec.Buffer
	_, _ = conn.Write([]byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\nPING\r\n"))

	var dec codec.RESP // one per connection
	var out []byte
	_ = codec.Each(&conn, &dec, func([]byte) error {
		args := dec.Args()
		switch string(args[0]) { // a real server would ignore case
		case "SET":
			out = codec.AppendSimple(out, "OK")
		case "PING":
			out = codec.AppendSimple(out, "PONG")
		default:
			out = codec.AppendError(out, "ERR unknown command")
		}
		return nil
	})
	fmt.Printf("%q\n", out)
	// Output: "+OK\r\n+PONG\r\n"
}
