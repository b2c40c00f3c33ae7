package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// protocolCases are input that is not quite a command, or is one in an
// unusual form. Each is answered as Redis 7.0 answers it, errors and
// disconnections included: TestProtocolAsRedis holds the server to Redis's
// bytes, and the replies here were recorded from it.
var protocolCases = []struct {
	name, send, want string
}{
	{"multibulk length not a number", "*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk length with a plus", "*+1\r\n$4\r\nPING\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk length with a zero first", "*01\r\n$4\r\nPING\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk length with a space", "*1 \r\n$4\r\nPING\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk length over 32 bits", "*2147483648\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk line ended by LF", "*1\n$4\r\nPING\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"negative multibulk length", "*-5\r\nPING\r\n", "+PONG\r\n"},
	{"empty multibulk", "*0\r\nPING\r\n", "+PONG\r\n"},
	{"minus zero", "*-0\r\nPING\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"not a bulk", "*1\r\nx4\r\n", "-ERR Protocol error: expected '$', got 'x'\r\n"},
	{"an integer for a bulk", "PING\r\n*1\r\n:4\r\n", "+PONG\r\n-ERR Protocol error: expected '$', got ':'\r\n"},
	{"a nested array", "*2\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", "-ERR Protocol error: expected '$', got '*'\r\n"},
	{"a line end for a bulk", "*1\r\n\r\n\r\n", "-ERR Protocol error: expected '$', got ' '\r\n"},
	{"bulk length not a number", "*1\r\n$abc\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"null bulk", "*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk length with a plus", "*1\r\n$+4\r\nPING\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk length with a zero first", "*1\r\n$04\r\nPING\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk not ended by CRLF", "*1\r\n$4\r\nPINGxx", "+PONG\r\n"},
	{"after a good command", "PING\r\n*1\r\n$x\r\nPING\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
	{"a blank line after a command", "*1\r\n$4\r\nPING\r\n\r\n", "+PONG\r\n"},
	{"blank lines", "\r\n\n   \nPING\r\n", "+PONG\r\n"},
	{"inline ended by LF", "PING\n", "+PONG\r\n"},
	{"double quotes", "ECHO \"a b\"\r\n", "$3\r\na b\r\n"},
	{"hex escapes", "ECHO \"a\\x41\\x4g\\n\\q\"\r\n", "$7\r\naAx4g\nq\r\n"},
	{"single quotes", "ECHO 'a\\'b\\n'\r\n", "$5\r\na'b\\n\r\n"},
	{"empty quotes", "ECHO \"\"\r\nECHO ''\r\n", "$0\r\n\r\n$0\r\n\r\n"},
	{"a vertical tab in a word", "ECHO \vx\vy\r\n", "$3\r\nx\vy\r\n"},
	{"a quote closed inside a word", "ECHO \"a\"b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"a single quote closed inside a word", "ECHO 'a'b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"a quote opened inside a word", "ECHO a\"b c\"d\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"an escaped closing quote", "ECHO \"\\\"\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"an unclosed quote", "PING\r\nECHO \"abc\r\nPING\r\n", "+PONG\r\n-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"a NUL byte in an inline line", "PING\r\nECHO a\x00b\r\nPING\r\n", "+PONG\r\n"},
	{"HTTP", "POST / HTTP/1.1\r\nHost: x\r\n\r\n", ""},
	{"a Host line", "Host: x\r\nPING\r\n", ""},
}

// TestProtocolAsRedis sends each of protocolCases to the server and checks
// what comes back before the server closes, or the client does.
func TestProtocolAsRedis(t *testing.T) {
	ts := startServer(t, config{})
	var r *realRedis
	if hasTool("redis-server") {
		r = startRedis(t)
	}
	for _, tt := range protocolCases {
		t.Run(tt.name, func(t *testing.T) {
			got := exchange(t, "tcp", ts.addr(), tt.send)
			assert.Equal(t, tt.want, got)
			if r != nil {
				assert.Equal(t, exchange(t, "unix", r.sock, tt.send), got, "Redis replies otherwise")
			}
		})
	}
}

// TestProtocolErrorCloses checks that a client that sent what is not a
// command is disconnected once answered, while the server carries on.
func TestProtocolErrorCloses(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	c.send(t, "PING\r\n*1\r\n$x\r\n")
	c.expect(t, "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n")
	c.expectClosed(t)
	other := ts.dial(t)
	other.send(t, "PING\r\n")
	other.expect(t, "+PONG\r\n")
}

// TestRequestLimits sends more than -max-request allows: a bulk string
// longer than it is refused as Redis refuses one past its
// proto-max-bulk-len, and a command that outgrows it, or a line that does
// not end, is refused as soon as it does.
func TestRequestLimits(t *testing.T) {
	ts := startServer(t, config{maxRequest: 1024})
	tests := []struct {
		name, send, want string
	}{
		{"bulk over the limit", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4096\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulks over the limit", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n", "-ERR Protocol error: too big request\r\n"},
		{"more bulks than fit", "*2000000\r\n", "-ERR Protocol error: too big request\r\n"},
		{"empty bulks whose arguments pass the limit", "*100\r\n" + strings.Repeat("$0\r\n\r\n", 100), "-ERR Protocol error: too big request\r\n"},
		{"inline over the limit", strings.Repeat("x", 2000), "-ERR Protocol error: too big inline request\r\n"},
		{"multibulk header that does not end", "*" + strings.Repeat("1", 70000), "-ERR Protocol error: too big mbulk count string\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial(t)
			c.send(t, tt.send)
			c.expect(t, tt.want)
			c.expectClosed(t)
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
