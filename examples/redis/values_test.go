package main

import (
	"bufio"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dialRedis opens a raw connection to the test's redis-server.
func (r *realRedis) dial(t testing.TB) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", r.sock)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// valueScripts make a key of every type and size Redis encodes its own
// way, and describeScripts read each back in an order Redis defines.
var valueScripts = []struct{ setup, describe string }{
	{"SET k 12345", "GET k"},
	{"SET k -5", "GET k"},
	{"SET k 70000", "GET k"},
	{"SET k hello", "GET k"},
	{"SET k " + strings.Repeat("abcdefgh", 100), "GET k"},
	{"RPUSH k a 1 -2 300 70000 " + strings.Repeat("x", 100), "LRANGE k 0 -1"},
	{"RPUSH k" + strings.Repeat(" item-with-some-length", 2000), "LRANGE k 0 -1"},
	{"SADD k 1 2 3 -7 100000 5000000000", "SORT k"},
	{"SADD k a b c d", "SORT k ALPHA"},
	{"HSET k f1 v1 f2 2 f3 " + strings.Repeat("y", 70), "HGET k f1\r\nHGET k f2\r\nHGET k f3\r\nHLEN k\r\nOBJECT ENCODING k"},
	{"HSET k b 1 a 2 c 3 d 4 e 5", "HGETALL k\r\nOBJECT ENCODING k"},
	{"HSET k" + strings.Repeat(" f v", 1) + func() string {
		var b strings.Builder
		for i := range 600 {
			b.WriteString(" field" + strconv.Itoa(i) + " value" + strconv.Itoa(i))
		}
		return b.String()
	}(), "HLEN k\r\nHGET k field599\r\nHGET k f\r\nOBJECT ENCODING k"},
	{"ZADD k 1 a 2.5 b -3 c 1e300 d", "ZRANGE k 0 -1 WITHSCORES\r\nOBJECT ENCODING k"},
	{"ZADD k" + func() string {
		var b strings.Builder
		for i := range 300 {
			b.WriteString(" " + strconv.Itoa(i) + ".25 m" + strconv.Itoa(i))
		}
		return b.String()
	}(), "ZCARD k\r\nZRANGE k 0 -1 WITHSCORES\r\nOBJECT ENCODING k"},
}

// TestDumpRestoreWithRedis moves keys of every type each way between this
// server and Redis with DUMP and RESTORE, and reads them back.
func TestDumpRestoreWithRedis(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	ours, theirs := ts.dial(t), r.dial(t)
	for _, v := range valueScripts {
		for _, way := range []struct {
			name     string
			from, to *rawConn
		}{{"Redis to us", theirs, ours}, {"us to Redis", ours, theirs}} {
			for _, c := range []*rawConn{way.from, way.to} {
				c.send(t, "FLUSHALL\r\n")
				c.expect(t, "+OK\r\n")
			}
			way.from.send(t, v.setup+"\r\n")
			way.from.reply(t)
			way.from.send(t, "DUMP k\r\n")
			payload := way.from.bulk(t)
			way.to.send(t, resp("RESTORE", "k", "0", payload))
			require.Equal(t, "+OK\r\n", way.to.reply(t), "%s: %.60s", way.name, v.setup)
			n := strings.Count(v.describe, "\r\n") + 1
			way.from.send(t, v.describe+"\r\n")
			way.to.send(t, v.describe+"\r\n")
			for range n {
				require.Equal(t, way.from.reply(t), way.to.reply(t), "%s: %.60s", way.name, v.setup)
			}
		}
	}
}

// restoreScripts are RESTORE's errors and options, run against this
// server and Redis.
var restoreScripts = []string{
	"SET k v\r\nRESTORE k 0 x\r\nRESTORE k2 0 x\r\nRESTORE k2 0 xxxxxxxxxxxxxxx\r\nRESTORE k2 -1 x\r\nRESTORE k2 x x\r\n" +
		"RESTORE k2 0 x FOO\r\nRESTORE k2 0 x IDLETIME -1\r\nRESTORE k2 0 x FREQ 256\r\nRESTORE k2 0 x IDLETIME 1 FREQ 1\r\nDUMP nope\r\n",
}

func TestRestoreAsRedis(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	for _, script := range restoreScripts {
		sameAsRedis(t, ts, r, "FLUSHALL\r\n"+script)
	}
	// A payload of ours, with its options.
	c := ts.dial(t)
	c.send(t, "SET k v\r\nDUMP k\r\n")
	c.expect(t, "+OK\r\n")
	payload := c.bulk(t)
	c.send(t, resp("RESTORE", "k", "0", payload)+resp("RESTORE", "k", "0", payload, "REPLACE", "IDLETIME", "5")+
		resp("RESTORE", "t", "100000", payload)+"PTTL t\r\n"+
		resp("RESTORE", "old", "1", payload, "ABSTTL")+"EXISTS old\r\n")
	c.expect(t, "-BUSYKEY Target key name already exists.\r\n+OK\r\n+OK\r\n")
	pttl, err := strconv.Atoi(strings.TrimPrefix(c.line(t), ":"))
	require.NoError(t, err)
	assert.True(t, pttl > 90000 && pttl <= 100000, "PTTL %d", pttl)
	c.expect(t, "+OK\r\n:0\r\n")
	// A payload with a byte changed fails its checksum.
	bad := []byte(payload)
	bad[1] ^= 1
	c.send(t, resp("RESTORE", "k2", "0", string(bad)))
	c.expect(t, "-ERR DUMP payload version or checksum are wrong\r\n")
}

// unorderedScripts have replies whose order Redis leaves open: compared
// with Redis's as their lines sorted.
var unorderedScripts = []string{
	"SADD a x y z w\r\nSADD b y z q\r\nSINTER a b\r\nSUNION a b\r\nSDIFF a b\r\nSMEMBERS a\r\n",
	"HSET h a 1 b 2 c 3\r\nHKEYS h\r\nHVALS h\r\nHGETALL h\r\nHSCAN h 0\r\nHELLO 3\r\nHGETALL h\r\nSADD s a b\r\nSUNION s\r\n",
	"HSET h a 1 b 2\r\nHSCAN h 0 MATCH a\r\nSADD s a b c\r\nSSCAN s 0\r\nSSCAN s 0 MATCH b*\r\n",
	"SADD s a b c\r\nSORT s BY nosort\r\nSPOP s 3\r\n",
}

func TestUnorderedAsRedis(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	for _, script := range unorderedScripts {
		script = "FLUSHALL\r\n" + script
		want := strings.Split(clientIDs.ReplaceAllString(exchange(t, "unix", r.sock, script), "${1}ID"), "\r\n")
		got := strings.Split(clientIDs.ReplaceAllString(exchange(t, "tcp", ts.addr(), script), "${1}ID"), "\r\n")
		slices.Sort(want)
		slices.Sort(got)
		assert.Equal(t, want, got, "script %q", script)
	}
}

// TestRandomReplies checks the random commands keep their promises:
// distinct members for a positive count, as many as asked, perhaps
// repeated, for a negative one, and members of the key only.
func TestRandomReplies(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	c.send(t, "SADD s a b c d e\r\nHSET h a 1 b 2 c 3 d 4 e 5\r\nZADD z 1 a 2 b 3 c 4 d 5 e\r\n")
	c.reply(t)
	c.reply(t)
	c.reply(t)
	members := []string{"a", "b", "c", "d", "e"}
	for _, tt := range []struct {
		command string
		n       int
		pairs   bool
		unique  bool
	}{
		{"SRANDMEMBER s 3", 3, false, true},
		{"SRANDMEMBER s 10", 5, false, true},
		{"SRANDMEMBER s -10", 10, false, false},
		{"HRANDFIELD h 4", 4, false, true},
		{"HRANDFIELD h -7 WITHVALUES", 7, true, false},
		{"ZRANDMEMBER z 2 WITHSCORES", 2, true, true},
		{"ZRANDMEMBER z -3", 3, false, false},
	} {
		c.send(t, tt.command+"\r\n")
		width := 1
		if tt.pairs {
			width = 2
		}
		require.Equal(t, "*"+strconv.Itoa(tt.n*width), c.line(t), tt.command)
		seen := map[string]bool{}
		for range tt.n {
			m := c.bulk(t)
			assert.Contains(t, members, m, tt.command)
			if tt.unique {
				assert.False(t, seen[m], "%s repeated %s", tt.command, m)
			}
			seen[m] = true
			if tt.pairs {
				v, err := strconv.Atoi(c.bulk(t))
				require.NoError(t, err)
				assert.Equal(t, slices.Index(members, m)+1, v, tt.command)
			}
		}
	}
	c.send(t, "SRANDMEMBER s\r\nRANDOMKEY\r\nTIME\r\n")
	assert.Contains(t, members, c.bulk(t))
	assert.Contains(t, []string{"s", "h", "z"}, c.bulk(t))
	require.Equal(t, "*2", c.line(t))
	secs, err := strconv.ParseInt(c.bulk(t), 10, 64)
	require.NoError(t, err)
	assert.InDelta(t, time.Now().Unix(), secs, 5)
	us, err := strconv.Atoi(c.bulk(t))
	require.NoError(t, err)
	assert.True(t, us >= 0 && us < 1e6)
}

// TestCollectionScans scans sets, hashes and sorted sets larger than a
// scan returns whole, while they change: every member present for the
// whole scan comes back, once.
func TestCollectionScans(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	const n = 1000
	var sadd, hset, zadd strings.Builder
	for i := range n {
		m := "m" + strconv.Itoa(i)
		sadd.WriteString(" " + m)
		hset.WriteString(" " + m + " v")
		zadd.WriteString(" " + strconv.Itoa(i) + " " + m)
	}
	c.send(t, "SADD s"+sadd.String()+"\r\nHSET h"+hset.String()+"\r\nZADD z"+zadd.String()+"\r\n")
	c.expect(t, ":1000\r\n:1000\r\n:1000\r\n")
	for _, tt := range []struct{ scan, change string }{
		{"SSCAN s", "SADD s new%d"},
		{"HSCAN h", "HSET h new%d v"},
		{"ZSCAN z", "ZADD z 0.5 new%d"},
	} {
		seen := map[string]int{}
		cursor := "0"
		for step := 0; ; step++ {
			c.send(t, tt.scan+" "+cursor+" COUNT 37\r\n"+strings.Replace(tt.change, "%d", strconv.Itoa(step), 1)+"\r\n")
			require.Equal(t, "*2", c.line(t))
			cursor = c.bulk(t)
			header := c.line(t)
			k, err := strconv.Atoi(header[1:])
			require.NoError(t, err)
			width := 1
			if tt.scan != "SSCAN s" {
				width = 2
			}
			for i := 0; i < k; i += width {
				seen[c.bulk(t)]++
				if width == 2 {
					c.bulk(t)
				}
			}
			c.reply(t)
			if cursor == "0" {
				break
			}
			require.Less(t, step, n, "the scan does not end")
		}
		for i := range n {
			assert.Equal(t, 1, seen["m"+strconv.Itoa(i)], "%s: m%d", tt.scan, i)
		}
	}
}

// TestConfigSetApplies checks what CONFIG SET changes takes effect: the
// idle timeout for clients open and to come, the pub/sub limit for the
// next publication, and hz in INFO.
func TestConfigSetApplies(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	open := ts.dial(t)
	admin := ts.dial(t)
	admin.send(t, "CONFIG SET timeout 1 hz 50\r\nINFO server\r\n")
	admin.expect(t, "+OK\r\n")
	assert.Equal(t, "50", infoFields(admin.bulk(t))["hz"])
	open.expectClosed(t)
	later := ts.dial(t)
	later.expectClosed(t)
	admin.expectClosed(t)

	admin = ts.dial(t)
	sub := ts.slowReader(t, 1)
	admin.send(t, "CONFIG SET timeout 0 client-output-buffer-limit \"pubsub 64kb 0 0\"\r\nCONFIG GET client-output-buffer-limit\r\n")
	admin.expect(t, "+OK\r\n*2\r\n$26\r\nclient-output-buffer-limit\r\n")
	assert.Equal(t, "normal 134217728 0 0 pubsub 65536 0 0", admin.bulk(t))
	sub.send(t, "SUBSCRIBE c\r\n")
	sub.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")
	body := strings.Repeat("x", 16<<10)
	require.Eventually(t, func() bool {
		admin.send(t, resp("PUBLISH", "c", body))
		admin.reply(t)
		return ts.outputDrops.Load() == 1
	}, 10*time.Second, time.Millisecond)

	admin.send(t, "CONFIG SET client-output-buffer-limit \"normal 1 1 1\"\r\nCONFIG SET maxclients 7\r\n"+
		"CONFIG SET client-output-buffer-limit \"pubsub 256mb 0 0\"\r\nCONFIG SET client-output-buffer-limit \"slave 1 1 1\"\r\n")
	assert.Contains(t, admin.line(t), "the normal class's bounds are the engine's")
	assert.Contains(t, admin.line(t), "sized as the server starts")
	assert.Contains(t, admin.line(t), "cannot pass the engine's, 134217728 bytes")
	admin.expect(t, "+OK\r\n")

	// All or nothing: a refused parameter leaves the others as they were.
	admin.send(t, "CONFIG SET hz 20 appendonly yes\r\nCONFIG GET hz\r\n")
	assert.Contains(t, admin.line(t), "keeps nothing on disk")
	admin.expect(t, "*2\r\n$2\r\nhz\r\n$2\r\n50\r\n")
}

// TestInfoCPU checks INFO's CPU section: the process's CPU time, growing.
func TestInfoCPU(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows does not tell a process's CPU time this way")
	}
	ts := startServer(t, config{})
	f := infoFields(ts.do(t, "INFO", "cpu"))
	for _, name := range []string{"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"} {
		v, err := strconv.ParseFloat(f[name], 64)
		require.NoError(t, err, name)
		assert.GreaterOrEqual(t, v, 0.0, name)
	}
}

// TestCommandListByCategory checks COMMAND LIST FILTERBY ACLCAT against
// the categories Redis 7.0 gives the commands here.
func TestCommandListByCategory(t *testing.T) {
	ts := startServer(t, config{})
	blocking := strings.Fields(strings.NewReplacer("\"", "", "\n", " ").Replace(
		numbering.ReplaceAllString(ts.do(t, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "blocking"), "")))
	slices.Sort(blocking)
	assert.Equal(t, []string{"blmove", "blmpop", "blpop", "brpop", "brpoplpush", "bzmpop", "bzpopmax", "bzpopmin"}, blocking)
	assert.Equal(t, "(empty array)", ts.do(t, "COMMAND", "LIST", "FILTERBY", "MODULE", "any"))
}

// TestHashOrder holds the small hash to its promises: fields in the order
// they were added, kept by a replaced value and by a deletion, and a move
// to a map, for good, past either bound.
func TestHashOrder(t *testing.T) {
	lim := limits{hashEntries: 4, hashValue: 3}
	h := newHash()
	for _, f := range []string{"c", "a", "b"} {
		require.True(t, h.set([]byte(f), []byte("1"), lim))
	}
	require.False(t, h.set([]byte("a"), []byte("2"), lim))
	require.True(t, h.del([]byte("c")))
	require.False(t, h.del([]byte("c")))
	require.True(t, h.set([]byte("c"), []byte("3"), lim))
	fields, values := h.all()
	require.Equal(t, []string{"a", "b", "c"}, fields)
	require.Equal(t, []string{"2", "1", "3"}, values)
	require.Equal(t, "listpack", h.encoding())

	long := h.clone()
	long.set([]byte("a"), []byte("1234"), lim)
	require.Equal(t, "hashtable", long.encoding())
	long.del([]byte("a"))
	require.Equal(t, "hashtable", long.encoding(), "a hash converted stays converted")
	require.Equal(t, "listpack", h.encoding(), "a clone shares nothing")

	h.set([]byte("d"), []byte("4"), lim)
	require.Equal(t, "listpack", h.encoding())
	h.set([]byte("e"), []byte("5"), lim)
	require.Equal(t, "hashtable", h.encoding())
	require.Equal(t, 5, h.len())
	for _, f := range []string{"a", "b", "c", "d", "e"} {
		require.True(t, h.has([]byte(f)))
	}
}
