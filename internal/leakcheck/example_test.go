package leakcheck

import (
	"fmt"
	"time"
)

// A test starts the check first and runs what it returns last: a
// goroutine that has ended by then is no leak.
func Example() {
	t := &recorder{} // a *testing.T in a test
	done := Start(t, time.Second)
	stop := make(chan struct{})
	go func() { <-stop }()
	close(stop)
	done()
	fmt.Println("failures:", len(t.failed))
	// Output: failures: 0
}
