package proc_test

import (
	"fmt"
	"os"
	"time"

	"github.com/sluicenet/sluice/benchmarks/proc"
)

// A benchmark reads a server's CPU time before and after its window and
// divides the difference by the round trips it drove.
func Example() {
	pid := os.Getpid() // a real run passes the server's process id
	before, err := proc.CPUTime(pid)
	if err != nil {
		fmt.Println(err)
		return
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		// Busy: a few scheduler ticks pass, and each updates the running thread's sum.
	}
	after, _ := proc.CPUTime(pid)
	rss, _ := proc.RSS(pid)
	fmt.Println(after > before, rss > 0)
	// Output: true true
}
