// Package enginetest runs a Sluice engine for the tests of the packages
// around it: on a free loopback port, stopped when the test ends.
package enginetest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sluicenet/sluice"
)

// Deadline bounds every wait of a test: for the engine to boot and stop,
// and for each connection's reads and writes.
const Deadline = 10 * time.Second

// booted hands on the Engine a handler is booted with.
type booted struct {
	sluice.EventHandler
	eng chan sluice.Engine
}

func (b *booted) OnBoot(eng sluice.Engine) sluice.Action {
	b.eng <- eng
	return b.EventHandler.OnBoot(eng)
}

// Serve runs an engine with h on a free loopback TCP port until the test
// ends, and returns it and the address to dial.
func Serve(t testing.TB, h sluice.EventHandler, opts ...sluice.Option) (sluice.Engine, string) {
	t.Helper()
	b := &booted{EventHandler: h, eng: make(chan sluice.Engine, 1)}
	done := make(chan error, 1)
	go func() { done <- sluice.Run(b, "tcp://127.0.0.1:0", opts...) }()
	var eng sluice.Engine
	select {
	case eng = <-b.eng:
	case err := <-done:
		t.Fatalf("sluice.Run: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Deadline)
		defer cancel()
		if err := eng.Stop(ctx); err != nil {
			t.Errorf("Engine.Stop: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("sluice.Run: %v", err)
		}
	})
	return eng, eng.Addrs()[0].String()
}

// Dial connects to addr, closes the connection when the test ends, and
// makes its reads and writes fail past Deadline.
func Dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, Deadline)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(Deadline))
	return c
}
