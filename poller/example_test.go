package poller_test

import (
	"flag"
	"fmt"

	"github.com/sluicenet/sluice/poller"
)

// A Kind is a command-line flag by its name.
func ExampleKind() {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	var k poller.Kind
	fs.TextVar(&k, "poller", poller.Epoll, "epoll, uring or auto")
	fs.Parse([]string{"-poller", "uring"})
	fmt.Println(k, k == poller.IOUring)
	// Output: uring true
}
