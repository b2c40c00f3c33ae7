package keepalive_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
	"github.com/sluicenet/sluice/benchmarks/internal/keepalive"
)

// Hold ten keep-alive connections to a server, each having asked for
// /plaintext once and got "Hello, World!".
func Example() {
	srv := httptest.NewServer(hello.Handler)
	defer srv.Close()
	r := keepalive.Request{Addr: srv.Listener.Addr().String(), Path: hello.PlaintextPath, Want: hello.Plaintext}
	held, errs := keepalive.Open(r, 10, 4)
	fmt.Println(len(held), errs.Total())
	for _, c := range held {
		c.Close()
	}
	// Output: 10 0
}
