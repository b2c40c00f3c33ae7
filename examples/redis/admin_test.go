package main

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// infoFields parses INFO's reply into its sections' fields.
func infoFields(info string) map[string]string {
	fields := make(map[string]string)
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields
}

func TestInfo(t *testing.T) {
	ts := startServer(t, config{})
	ts.cli(t, "SET a 1\nSET b 2 EX 100\nGET a\nGET nope\n")
	info := ts.do(t, "INFO")
	for _, section := range []string{"# Server", "# Clients", "# Memory", "# Stats", "# Keyspace"} {
		assert.Contains(t, info, section)
	}
	f := infoFields(info)
	assert.Equal(t, redisVersion, f["redis_version"])
	assert.Equal(t, ts.port, f["tcp_port"])
	assert.Equal(t, "1", f["connected_clients"])
	assert.Equal(t, "keys=2,expires=1,avg_ttl=0", f["db0"])
	assert.Equal(t, "1", f["keyspace_hits"])
	assert.Equal(t, "1", f["keyspace_misses"])
	assert.Regexp(t, regexp.MustCompile(`^[1-9]\d*$`), f["used_memory"])
	commands, err := strconv.Atoi(f["total_commands_processed"])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, commands, 4)

	assert.Equal(t, "# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0", ts.do(t, "INFO", "keyspace"))
	server := ts.do(t, "INFO", "SERVER")
	assert.True(t, strings.HasPrefix(server, "# Server\r\nredis_version:"), server)
	assert.NotContains(t, server, "# Clients")
	both := ts.do(t, "INFO", "clients", "stats")
	assert.True(t, strings.HasPrefix(both, "# Clients\r\n"), both)
	assert.Contains(t, both, "\r\n\r\n# Stats\r\n")
	assert.NotContains(t, both, "# Memory")
	assert.Empty(t, ts.do(t, "INFO", "nope"))
}

func TestConfigGet(t *testing.T) {
	ts := startServer(t, config{maxRequest: 4096})
	assert.Equal(t, dedent(`
		 1) "appendonly"
		 2) "no"
		 3) "client-output-buffer-limit"
		 4) "normal 33554432 0 0 pubsub 33554432 8388608 60"
		 5) "client-query-buffer-limit"
		 6) "134217728"
		 7) "databases"
		 8) "1"
		 9) "hash-max-listpack-entries"
		10) "512"
		11) "hash-max-listpack-value"
		12) "64"
		13) "hash-max-ziplist-entries"
		14) "512"
		15) "hash-max-ziplist-value"
		16) "64"
		17) "hz"
		18) "10"
		19) "maxclients"
		20) "0"
		21) "maxmemory"
		22) "0"
		23) "maxmemory-policy"
		24) "noeviction"
		25) "proto-max-bulk-len"
		26) "4096"
		27) "save"
		28) ""
		29) "set-max-intset-entries"
		30) "512"
		31) "timeout"
		32) "0"
		33) "zset-max-listpack-entries"
		34) "128"
		35) "zset-max-listpack-value"
		36) "64"
		37) "zset-max-ziplist-entries"
		38) "128"
		39) "zset-max-ziplist-value"
		40) "64"
	`), ts.cli(t, "CONFIG GET *"))
	assert.Equal(t, "1) \"maxmemory\"\n2) \"0\"", ts.do(t, "CONFIG", "GET", "MAXMEM?RY"))
}

func TestConfigGetLimits(t *testing.T) {
	ts := startServer(t, config{maxClients: 5, idleTimeout: 90 * time.Second})
	assert.Equal(t, "1) \"maxclients\"\n2) \"5\"\n3) \"timeout\"\n4) \"90\"", ts.do(t, "CONFIG", "GET", "maxclients", "timeout"))
}

func TestCommandIntrospection(t *testing.T) {
	ts := startServer(t, config{})
	assert.Equal(t, "(integer) "+strconv.Itoa(len(commands.all)), ts.do(t, "COMMAND", "COUNT"))

	get := ts.do(t, "COMMAND", "INFO", "get", "nope")
	assert.Equal(t, dedent(`
		1)  1) "get"
		    2) (integer) 2
		    3) 1) readonly
		       2) fast
		    4) (integer) 1
		    5) (integer) 1
		    6) (integer) 1
		    7) 1) @read
		       2) @string
		       3) @fast
		    8) (empty array)
		    9) (empty array)
		   10) (empty array)
		2) (nil)
	`), get+"\n")

	all := ts.do(t, "COMMAND")
	for _, cmd := range commands.all {
		assert.Contains(t, all, `"`+cmd.name+`"`)
	}
	assert.Contains(t, all, `"client|kill"`)
	assert.Contains(t, ts.do(t, "COMMAND", "LIST"), `"zpopmin"`)

	docs := ts.do(t, "COMMAND", "DOCS", "set")
	assert.Contains(t, docs, `"group"`)
	assert.Contains(t, docs, `"string"`)
	assert.Contains(t, ts.do(t, "COMMAND", "DOCS", "client"), `"client|setname"`)
}

// The reply limits come from the command line in Redis's form, and a
// client that stops reading while its replies pile up past the soft limit
// is disconnected once it has stayed over it for its time.
func TestClientOutputBufferLimit(t *testing.T) {
	var o outputLimit
	require.NoError(t, o.Set("normal 1mb 256kb 0"))
	assert.Equal(t, "normal 1048576 262144 0 pubsub 33554432 8388608 60", o.String(), "pubsub as Redis's default")
	assert.Equal(t, 33554432, o.engineBound())
	require.NoError(t, o.Set("pubsub 64mb 0 0"))
	assert.Equal(t, "normal 1048576 262144 0 pubsub 67108864 0 0", o.String(), "each class as last set")
	assert.Equal(t, 67108864, o.engineBound(), "the looser bound")
	require.NoError(t, o.Set("NORMAL 0 0 0 PubSub 1k 1k 1"))
	assert.Equal(t, "normal 0 0 0 pubsub 1000 1000 1", o.String())
	assert.Equal(t, 0, o.engineBound(), "zero set is no bound, as in Redis")
	for _, bad := range []string{"slave 32mb 8mb 60", "normal 1mb", "normal x 0 0", "normal 1mb 1mb -1", "normal 1 1 1 pubsub"} {
		assert.Error(t, o.Set(bad), bad)
	}
	assert.Equal(t, "normal 0 0 0 pubsub 1000 1000 1", o.String(), "a bad value changes nothing")
	assert.Equal(t, "normal 33554432 0 0 pubsub 33554432 8388608 60", outputLimit{}.String(), "the defaults")
	assert.Equal(t, "normal 209715200 0 0 pubsub 33554432 8388608 60", outputLimit{maxRequest: 100 << 20}.String(),
		"the normal class's default takes any string a command could store, and the replies before it")

	var limit outputLimit
	require.NoError(t, limit.Set("normal 8mb 256kb 0"))
	ts := startServer(t, config{output: limit})
	c := ts.dial(t)
	c.send(t, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1048576\r\n"+strings.Repeat("v", 1<<20)+"\r\n")
	c.expect(t, "+OK\r\n")
	// Ask for the value many times and read nothing: the replies pile up.
	c.send(t, strings.Repeat("GET big\r\n", 64))
	require.Eventually(t, func() bool { return ts.eng.Stats().OutboundOverLimit == 1 }, 3*time.Second, time.Millisecond, "%+v", ts.eng.Stats())
	_, err := io.Copy(io.Discard, c.r)
	require.ErrorIs(t, err, syscall.ECONNRESET, "the replies queued for it were dropped")
}

// asked reports whether a client's SHUTDOWN asked the server to stop.
func (ts *testServer) asked() bool {
	select {
	case <-ts.shutdown:
		return true
	default:
		return false
	}
}

// SHUTDOWN, in any case and with any of the modifiers that change
// nothing here, asks serve to stop the server and closes the caller's
// connection with no reply of its own: the replies before it are sent,
// and the commands after it are not run. (The in-process server is not
// serve's, so it serves on, and a second SHUTDOWN finds it asked.)
func TestShutdownAsks(t *testing.T) {
	for _, cmd := range []string{"SHUTDOWN", "shutdown nosave", "SHUTDOWN NOW FORCE", "SHUTDOWN NOSAVE NOSAVE NOW",
		"Shutdown Save Force", resp("SHUTDOWN", "NOW")} {
		t.Run(cmd, func(t *testing.T) {
			ts := startServer(t, config{})
			c := ts.dial(t)
			c.send(t, "PING\r\n"+strings.TrimSuffix(cmd, "\r\n")+"\r\nSET k v\r\n")
			c.expect(t, "+PONG\r\n")
			c.expectClosed(t)
			assert.True(t, ts.asked())
			d := ts.dial(t)
			d.send(t, "GET k\r\nSHUTDOWN\r\n")
			d.expect(t, "$-1\r\n")
			d.expectClosed(t) // asked again, as another client may
		})
	}
}

// What Redis 7.0 refuses is refused in its words (the differential test
// holds them to a redis-server's too), and SAVE, which would need a disk,
// unless FORCE; none of it asks the server to stop, or closes the
// connection.
func TestShutdownRefused(t *testing.T) {
	syntax := "-ERR syntax error\r\n"
	notInMulti := "-ERR Command not allowed inside a transaction\r\n"
	pong := "+PONG\r\n"
	ts := startServer(t, config{})
	for _, tt := range []struct{ script, want string }{
		{"SHUTDOWN NOSAVE SAVE", syntax + pong},
		{"SHUTDOWN SAVE NOW NOSAVE", syntax + pong},
		{"SHUTDOWN foo", syntax + pong},
		{"SHUTDOWN NOW foo", syntax + pong},
		{resp("SHUTDOWN", ""), syntax + pong},
		{"SHUTDOWN ABORT NOW", syntax + pong},
		{"SHUTDOWN FORCE ABORT", syntax + pong},
		{"SHUTDOWN ABORT", "-ERR No shutdown in progress.\r\n" + pong},
		{"shutdown abort abort", "-ERR No shutdown in progress.\r\n" + pong},
		{"SHUTDOWN SAVE", "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" + pong},
		{"SHUTDOWN NOW SAVE", "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" + pong},
		{"MULTI\r\nSHUTDOWN\r\nSHUTDOWN ABORT\r\nSET k v\r\nEXEC\r\nGET k",
			"+OK\r\n" + notInMulti + notInMulti + "+QUEUED\r\n" +
				"-EXECABORT Transaction discarded because of previous errors.\r\n$-1\r\n" + pong},
		{"SUBSCRIBE a\r\nSHUTDOWN NOSAVE",
			"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n" +
				"-ERR Can't execute 'shutdown': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n" +
				"*2\r\n$4\r\npong\r\n$0\r\n\r\n"},
	} {
		c := ts.dial(t)
		c.send(t, strings.TrimSuffix(tt.script, "\r\n")+"\r\nPING\r\n")
		c.expect(t, tt.want)
	}
	assert.False(t, ts.asked())
}
