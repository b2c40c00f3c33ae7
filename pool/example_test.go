package pool_test

import (
	"fmt"
	"strings"

	"github.com/sluicenet/sluice/pool"
)

// A handler copies its frame, hands the blocking work to the pool, and
// answers from the worker. Here a channel stands in for Conn.AsyncWrite.
func Example() {
	p, err := pool.New(pool.WithSize(8))
	if err != nil {
		panic(err)
	}
	defer p.Release()

	frame := []byte("hello") // aliases the loop's buffer in a real handler
	req := pool.GetBuffer()
	_, _ = req.Write(frame)
	replies := make(chan string, 1)
	err = p.Submit(func() {
		defer pool.PutBuffer(req)
		replies <- strings.ToUpper(req.String()) // the blocking work
	})
	copy(frame, "?????") // the loop reuses its buffer once the callback returns

	fmt.Println(err, <-replies)
	// Output: <nil> HELLO
}
