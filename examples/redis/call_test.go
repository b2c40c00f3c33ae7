package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// BenchmarkExec runs common commands as a server with several loops runs
// them, locking their keys' shards, and as one with a single loop does,
// without locks.
func BenchmarkExec(b *testing.B) {
	for _, loops := range []string{"loops", "one-loop"} {
		for _, command := range []string{"GET k", "SET k v", "INCR n", "LPUSH l a", "HSET h f v"} {
			b.Run(loops+"/"+strings.Fields(command)[0], func(b *testing.B) {
				c := newTestCall()
				if loops == "one-loop" {
					c.srv.db.serveAlone()
				}
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
	"RPUSH l a b\nBLPOP l 0\nBLMOVE l m LEFT RIGHT 1\nLMPOP 1 l LEFT COUNT 2\nBZMPOP 1 1 z MIN\nLPOS l a RANK -1",
	"MULTI\nSET k v\nWATCH k\nEXEC\nWATCH k\nUNWATCH\nDISCARD",
	"HELLO 3\nSUBSCRIBE c\nPSUBSCRIBE *\nPUBLISH c m\nPUBSUB NUMSUB c\nUNSUBSCRIBE\nRESET",
	"SETBIT b 9 1\nBITCOUNT b 0 -1 BIT\nBITPOS b 1\nBITOP NOT d b\nLCS b d IDX WITHMATCHLEN\nGETRANGE d 0 -1",
	"ZADD z 1 a 2 b\nZRANGE z (1 +inf BYSCORE LIMIT 0 1 WITHSCORES\nZUNIONSTORE u 2 z z WEIGHTS 1 2\nZRANGEBYLEX z - +\nZSCAN z 0",
	"SADD s a b\nSINTERCARD 1 s LIMIT 1\nSORT s ALPHA DESC\nDUMP s\nSRANDMEMBER s -3\nSSCAN s 0 MATCH *",
	"HSET h f 1\nHINCRBYFLOAT h f 0.5\nHRANDFIELD h -2 WITHVALUES\nCOPY h g\nRENAMENX g h\nCONFIG SET hz 20",
}

// FuzzExec runs scripts of commands and checks that the replies are valid
// RESP, one for each command, whatever the commands. The commands that
// reply otherwise (one reply for each channel, none while CLIENT REPLY
// says so, none to HTTP) are only held to valid RESP.
func FuzzExec(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		c := newTestCall()
		n, counted := 0, true
		for line := range strings.Lines(script) {
			args := words(line)
			if len(args) == 0 {
				continue
			}
			switch strings.ToLower(string(args[0])) {
			case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe", "client", "post", "host:":
				counted = false
			}
			// No loop runs here to wait on: blocking commands answer at
			// once, as they do in a transaction.
			c.inExec = true
			c.exec(args)
			n++
			if c.quit {
				break
			}
		}
		replies, err := countReplies(c.out)
		require.NoError(t, err, "%q", c.out)
		if counted {
			require.Equal(t, n, replies, "%q", c.out)
		}
	})
}

// countReplies counts the RESP values in b, pushes apart, and fails
// unless b is nothing but whole values.
func countReplies(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		push := b[0] == '>'
		rest, err := skipValue(b)
		if err != nil {
			return n, err
		}
		if !push {
			n++
		}
		b = rest
	}
	return n, nil
}

// skipValue returns what follows the RESP value b starts with.
func skipValue(b []byte) ([]byte, error) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 1 {
		return nil, fmt.Errorf("no line at %.20q", b)
	}
	typ, line, rest := b[0], string(b[1:end]), b[end+2:]
	switch typ {
	case '+', '-', ':', ',', '#', '_', '(':
		return rest, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("bad length %q", line)
		}
		if n == -1 {
			return rest, nil
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, fmt.Errorf("short string of %d", n)
		}
		return rest[n+2:], nil
	case '*', '~', '>', '%':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("bad length %q", line)
		}
		if typ == '%' {
			n *= 2
		}
		for range n {
			if rest, err = skipValue(rest); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}
