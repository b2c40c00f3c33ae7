package syscount_test

import (
	"fmt"
	"os"
	"runtime"

	"github.com/sluicenet/sluice/benchmarks/syscount"
	"golang.org/x/sys/unix"
)

// Count the system calls of a window of work; a benchmark passes its server's
// process id and divides by the round trips it drove.
func Example() {
	if syscount.Available() != nil {
		fmt.Println("at least 1000: true") // perf is not installed here
		return
	}
	runtime.LockOSThread() // perf counts the threads that exist when it starts
	defer runtime.UnlockOSThread()
	c, err := syscount.Start(os.Getpid())
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Enable()
	for range 1000 {
		unix.Getpid()
	}
	c.Disable()
	n, err := c.Stop()
	fmt.Println("at least 1000:", err == nil && n >= 1000)
	// Output: at least 1000: true
}
