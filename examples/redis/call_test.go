package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/codec"
)

// newTestCall returns the call of a client with no connection, on a
// server that is not serving, to run commands directly.
func newTestCall() *call {
	cl := &client{id: 1}
	cl.proto.Store(2)
	cl.call = call{srv: newServer(config{}), cl: cl, now: time.Now().UnixMilli()}
	return &cl.call
}

func words(s string) [][]byte { return bytes.Fields([]byte(s)) }

// do runs a command, given as words, and returns its reply.
func (c *call) do(command string) string {
	c.out = c.out[:0]
	c.exec(words(command))
	return string(c.out)
}

// TestHotPathDoesNotAllocate checks that the common commands allocate
// nothing once their keys exist: arguments are read where they arrived,
// and replies appended to a reused buffer.
func TestHotPathDoesNotAllocate(t *testing.T) {
	c := newTestCall()
	for _, setup := range []string{"SET k v", "INCR n", "RPUSH l a b c", "HSET h f v", "SADD s m", "ZADD z 1 m"} {
		c.do(setup)
	}
	for _, command := range []string{
		"PING", "ECHO hello", "GET k", "GET nope", "SET k w", "SET k v", "INCR n", "INCRBY n 5", "EXISTS k",
		"LRANGE l 0 -1", "LINDEX l 1", "LLEN l", "HGET h f", "SISMEMBER s m", "ZSCORE z m", "TTL k",
	} {
		args := words(command)
		allocs := testing.AllocsPerRun(100, func() {
			c.out = c.out[:0]
			c.exec(args)
		})
		assert.Zero(t, allocs, command)
	}
}

func BenchmarkExec(b *testing.B) {
	for _, command := range []string{"GET k", "SET k v", "INCR n", "LPUSH l a", "HSET h f v"} {
		b.Run(strings.Fields(command)[0], func(b *testing.B) {
			c := newTestCall()
			c.do("SET k v")
			args := words(command)
			b.ReportAllocs()
			for b.Loop() {
				c.out = c.out[:0]
				c.exec(args)
			}
		})
	}
}

// fuzzSeeds are scripts of commands, one a line, for FuzzExec.
var fuzzSeeds = []string{
	"SET k v EX 10\nGET k\nTTL k\nAPPEND k x\nGETRANGE k 0 -1",
	"INCRBY n 9223372036854775807\nINCR n\nDECRBY n -9223372036854775808",
	"LPUSH l a b c\nLRANGE l 0 -1\nRPOP l 2\nLINDEX l -1\nLPOP l 5",
	"SADD s a b\nSPOP s 1\nSMEMBERS s\nSREM s a b",
	"HSET h f 1 g x\nHINCRBY h f 2\nHINCRBY h g 1\nHGETALL h",
	"ZADD z INCR 1 a\nZADD z GT CH 2 a 3 b\nZRANGE z 0 -1 REV WITHSCORES\nZPOPMIN z 2",
	"HELLO 3\nZADD z inf a\nZSCORE z a\nCONFIG GET *\nHGETALL nope\nCOMMAND DOCS client",
	"MSET a 1 b 2\nMGET a b c\nRENAME a c\nKEYS *\nSCAN 0 MATCH * COUNT 1 TYPE string",
	"COMMAND\nCOMMAND INFO get set\nINFO\nCLIENT LIST\nCLIENT INFO\nDBSIZE\nFLUSHALL",
	"EXPIRE k 10 GT\nPEXPIRE k -1\nPERSIST k\nSET k v PXAT 1\nSET k v KEEPTTL GET",
}

// FuzzExec runs scripts of commands and checks that the replies are valid
// RESP, one for each command, whatever the commands.
func FuzzExec(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		c := newTestCall()
		n := 0
		for line := range strings.Lines(script) {
			args := words(line)
			if len(args) == 0 {
				continue
			}
			c.exec(args)
			n++
			if c.quit {
				break
			}
		}
		if n == 0 {
			return
		}
		// As the elements of an array, the replies make one RESP value.
		var in codec.Buffer
		fmt.Fprintf(&in, "*%d\r\n", n)
		in.Write(c.out)
		var r codec.RESP
		_, err := r.Decode(&in)
		require.NoError(t, err, "%q", c.out)
		require.Zero(t, in.Len(), "%q", c.out)
		require.Len(t, r.Args(), n, "%q", c.out)
	})
}
