package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipelined mixes RESP and inline commands; pipelinedReplies answers it.
const (
	pipelined = "PING\r\n" +
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n" +
		"GET k\r\n" +
		"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n" +
		"get  k\n" + // two spaces, and a bare LF, as telnet users type
		"*1\r\n$4\r\nNOPE\r\n" +
		"INCR k\r\n" +
		"DEL k\r\n"
	pipelinedReplies = "+PONG\r\n" +
		"+OK\r\n" +
		"$5\r\nhello\r\n" +
		"$0\r\n\r\n" +
		"$5\r\nhello\r\n" +
		"-ERR unknown command 'NOPE', with args beginning with: \r\n" +
		"-ERR value is not an integer or out of range\r\n" +
		":1\r\n"
)

func TestPipelineInOneWrite(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	c.send(t, pipelined)
	c.expect(t, pipelinedReplies)
}

// TestPipelineByteByByte sends the same commands a byte at a time, so
// they arrive split everywhere a read can split them.
func TestPipelineByteByByte(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	for i := range len(pipelined) {
		c.send(t, pipelined[i:i+1])
	}
	c.expect(t, pipelinedReplies)
}

// TestLongPipeline sends more commands in one write than one read takes,
// and every one is answered, in order.
func TestLongPipeline(t *testing.T) {
	const n = 20000
	c := startServer(t, config{}).dial(t)
	var b strings.Builder
	var want strings.Builder
	for i := range n {
		b.WriteString("*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n")
		fmt.Fprintf(&want, ":%d\r\n", i+1)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c, b.String())
		sent <- err
	}()
	c.expect(t, want.String())
	require.NoError(t, <-sent)
}

func TestLargeValue(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	value := strings.Repeat("0123456789", 300_000) // 3 MB, over many reads
	c.send(t, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$"+strconv.Itoa(len(value))+"\r\n"+value+"\r\n")
	c.expect(t, "+OK\r\n")
	c.send(t, "STRLEN big\r\nGET big\r\n")
	c.expect(t, ":3000000\r\n$3000000\r\n"+value+"\r\n")
}

// TestPipelinedGetsOfALargeValue asks for a 1 MB value 16 times in one
// write, without reading (four times the 4 MB a call queues): the
// replies come out in bounded slices, each call leaving the rest of the
// pipeline for the next, and all arrive.
func TestPipelinedGetsOfALargeValue(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	value := strings.Repeat("v", 1<<20)
	c.send(t, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$"+strconv.Itoa(len(value))+"\r\n"+value+"\r\n")
	c.expect(t, "+OK\r\n")
	const gets = 16
	c.send(t, strings.Repeat("GET big\r\n", gets))
	c.expect(t, strings.Repeat("$"+strconv.Itoa(len(value))+"\r\n"+value+"\r\n", gets))
}

// TestMassInsertion loads 100,000 keys with redis-cli --pipe, as the Redis
// documentation's mass insertion does, and counts them.
func TestMassInsertion(t *testing.T) {
	const n = 100_000
	ts := startServer(t, config{})
	var b strings.Builder
	for i := range n {
		key, value := "key:"+strconv.Itoa(i), "value:"+strconv.Itoa(i)
		fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(value), value)
	}
	out := run(t, "redis-cli", ts.addr(), b.String(), "--pipe")
	assert.Contains(t, out, fmt.Sprintf("errors: 0, replies: %d", n))
	require.Equal(t, "(integer) 100000", ts.do(t, "DBSIZE"))
	assert.Equal(t, `"value:99999"`, ts.do(t, "GET", "key:99999"))
}

// TestLargeValueReadBack stores a string longer than the engine's default
// bound on a client's queued output (32 MB), as -max-request's default
// allows, and reads it back twice in one pipeline: Redis, whose normal
// clients have no bound, sends it, and so must this server's default.
func TestLargeValueReadBack(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	// 100 MB each way: slow under the race detector, on io_uring slower.
	require.NoError(t, c.SetDeadline(time.Now().Add(2*time.Minute)))
	value := strings.Repeat("v", 34<<20)
	c.send(t, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$"+strconv.Itoa(len(value))+"\r\n"+value+"\r\n")
	c.expect(t, "+OK\r\n")
	c.send(t, "GET big\r\nGET big\r\n")
	for range 2 {
		require.True(t, c.bulk(t) == value, "GET big: the value stored")
	}
}

// TestPipelineFloodIsBounded has a client pipeline GETs of a large value
// and read nothing: once its replies fill the socket the server leaves its
// commands unread, and once those pass client-query-buffer-limit, as
// CONFIG GET reports it, the client is disconnected, as Redis disconnects
// it, rather than holding more of the server's memory.
func TestPipelineFloodIsBounded(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	reply := strings.Fields(ts.do(t, "CONFIG", "GET", "client-query-buffer-limit"))
	require.Len(t, reply, 4)
	limit, err := strconv.Atoi(strings.Trim(reply[3], `"`))
	require.NoError(t, err)
	value := strings.Repeat("v", 1<<20)
	c.send(t, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$"+strconv.Itoa(len(value))+"\r\n"+value+"\r\n")
	c.expect(t, "+OK\r\n")
	gets := []byte(strings.Repeat("GET big\r\n", 64<<10))
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Minute)))
	sent := 0
	for ; sent <= 2*limit; sent += len(gets) {
		if _, err = c.Write(gets); err != nil {
			break
		}
	}
	require.Error(t, err, "a client that sent %d bytes of commands and read none is still connected", sent)
	require.False(t, os.IsTimeout(err), "the server stopped reading a client that sent %d bytes of commands, and left it connected", sent)
	assert.Greater(t, sent, limit/2, "disconnected before its commands neared the limit")
	assert.EqualValues(t, 1, ts.eng.Stats().InboundTooLarge)
	assert.Equal(t, "PONG", ts.do(t, "PING"), "others are served")
}
