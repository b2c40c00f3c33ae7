package main

import (
	"strings"
	"testing"
)

// TestProtocolErrors sends what is not RESP, or more than the limit: the
// client gets an error, as Redis words it, and is disconnected, while the
// server carries on.
func TestProtocolErrors(t *testing.T) {
	ts := startServer(t, config{maxRequest: 1024})
	tests := []struct {
		name, send, want string
	}{
		{"bad bulk length", "*1\r\n$abc\r\n", "-ERR Protocol error: invalid request\r\n"},
		{"bad array length", "*x\r\n", "-ERR Protocol error: invalid request\r\n"},
		{"negative bulk length", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid request\r\n"},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGxx", "-ERR Protocol error: invalid request\r\n"},
		{"after a good command", "PING\r\n*1\r\n$x\r\nPING\r\n", "+PONG\r\n-ERR Protocol error: invalid request\r\n"},
		{"bulk over the limit", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4096\r\n", "-ERR Protocol error: too big request\r\n"},
		{"array over the limit", "*2000000\r\n", "-ERR Protocol error: too big request\r\n"},
		{"inline over the limit", strings.Repeat("x", 2000), "-ERR Protocol error: too big inline request\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial(t)
			c.send(t, tt.send)
			c.expect(t, tt.want)
			c.expectClosed(t)

			other := ts.dial(t)
			other.send(t, "PING\r\n")
			other.expect(t, "+PONG\r\n")
		})
	}
}

// TestEmptyCommands checks that empty arrays and blank lines are skipped,
// as Redis skips them.
func TestEmptyCommands(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	c.send(t, "*0\r\n\r\n*-1\r\n   \r\nPING\r\n")
	c.expect(t, "+PONG\r\n")
}

func TestQuit(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	c.send(t, "QUIT\r\nPING\r\n")
	c.expect(t, "+OK\r\n")
	c.expectClosed(t)
}
