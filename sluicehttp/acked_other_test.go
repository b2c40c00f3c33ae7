//go:build !linux

package sluicehttp

import (
	"net"
	"testing"
)

// waitAcked would wait until the peer's kernel has acknowledged what c
// sent; where the system does not tell, it returns at once, and the test
// orders less surely.
func waitAcked(*testing.T, net.Conn) {}
