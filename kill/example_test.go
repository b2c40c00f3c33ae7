package kill_test

import (
	"fmt"
	"net/netip"

	"github.com/sluicenet/sluice/kill"
)

// An engine registers each accepted connection, and any goroutine kills one
// by ID. Kill tells the engine which loop to wake and which descriptor that
// loop should reset.
func Example() {
	table := kill.New(1024)

	// Loop 2 accepts a connection on descriptor 12.
	id, err := table.Claim(2, 12)
	if err != nil {
		panic(err)
	}

	// Another goroutine kills it.
	if loop, fd, ok := table.Kill(id); ok {
		fmt.Printf("wake loop %d to reset descriptor %d\n", loop, fd)
	}
	_, _, ok := table.Kill(id)
	fmt.Println("killed again:", ok)

	// Loop 2 resets the connection and frees its slot; the ID is stale now.
	fmt.Println("killed:", table.Killed(id))
	table.Release(id)
	_, _, ok = table.Kill(id)
	fmt.Println("killed after close:", ok, "live:", table.Len())
	// Output:
	// wake loop 2 to reset descriptor 12
	// killed again: false
	// killed: true
	// killed after close: false live: 0
}

// An engine admits at most two connections from one client at a time.
func ExampleSources() {
	var sources kill.Sources
	client := kill.SourceKey(netip.MustParseAddr("2001:db8::1"))
	sameSubnet := kill.SourceKey(netip.MustParseAddr("2001:db8::2"))

	fmt.Println(sources.Acquire(client, 2))
	fmt.Println(sources.Acquire(sameSubnet, 2))
	fmt.Println(sources.Acquire(client, 2)) // a third from the same /64
	sources.Release(client)                 // one closes
	fmt.Println(sources.Acquire(client, 2))
	// Output:
	// true
	// true
	// false
	// true
}
