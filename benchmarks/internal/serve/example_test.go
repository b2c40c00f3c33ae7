package serve_test

import (
	"fmt"

	"github.com/sluicenet/sluice/benchmarks/internal/serve"
)

// A server counts its connections with a Meter and prints its report line on
// exit; the runner parses it back.
func Example() {
	var m serve.Meter
	m.Opened()
	m.Opened()
	line := m.Report().String()
	r, err := serve.ParseReport("listening on 127.0.0.1:9000\n" + line + "\n")
	fmt.Println(r.Accepted, r.Mallocs >= 0, err)
	// Output: 2 true <nil>
}
