package hello_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/sluicenet/sluice/benchmarks/internal/hello"
)

// Serve the shared handler with net/http and check both of its answers, as
// the runner checks every server before it measures it.
func Example() {
	srv := httptest.NewServer(hello.Handler)
	defer srv.Close()
	fmt.Println(hello.Check(srv.URL))
	// Output: <nil>
}
