package codec_test

import (
	"fmt"

	"github.com/sluicenet/sluice/codec"
	"github.com/sluicenet/sluice/pool"
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

// A pool worker has no io.Writer to give Encode, so it frames its reply
// into a pooled buffer and sends that with Conn.AsyncWrite. The buffer
// goes back to the pool once the loop has queued its bytes, or at once if
// AsyncWrite fails, as it then never calls back:
//
//	err := c.AsyncWrite(b.B, func(sluice.Conn, error) { pool.PutBuffer(b) })
//	if err != nil {
//		pool.PutBuffer(b)
//	}
func ExampleAppendEncoder() {
	var framing codec.LengthField
	reply := []byte("HELLO") // the worker's answer

	b := pool.GetBuffer()
	var err error
	if b.B, err = framing.AppendEncode(b.B, reply); err != nil {
		panic(err) // a reply the framing cannot carry, such as one too large
	}
	fmt.Printf("%q\n", b.B) // what AsyncWrite would send
	pool.PutBuffer(b)
	// Output: "\x00\x00\x00\x05HELLO"
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
