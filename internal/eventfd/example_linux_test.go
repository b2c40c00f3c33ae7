package eventfd_test

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice/internal/eventfd"
)

// A loop waits on an eventfd; any goroutine wakes it with Signal.
func ExampleSignal() {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		panic(err)
	}
	defer unix.Close(fd)
	fmt.Println(eventfd.Signal(fd))
	// Output: <nil>
}
