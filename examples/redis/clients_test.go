package main

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/proxyproto"
)

// clientID asks the server for c's client ID.
func (c *rawConn) clientID(t testing.TB) string {
	t.Helper()
	c.send(t, "CLIENT ID\r\n")
	id, ok := strings.CutPrefix(c.line(t), ":")
	require.True(t, ok)
	return id
}

// helloReply is HELLO's reply to client id in RESP proto.
func helloReply(proto int, id string) string {
	header := "*14\r\n"
	if proto == 3 {
		header = "%7\r\n"
	}
	return header + "$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$" + strconv.Itoa(len(redisVersion)) + "\r\n" + redisVersion + "\r\n" +
		"$5\r\nproto\r\n:" + strconv.Itoa(proto) + "\r\n$2\r\nid\r\n:" + id + "\r\n" +
		"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
}

func TestHello(t *testing.T) {
	c := startServer(t, config{}).dial(t)
	id := c.clientID(t)
	c.send(t, "HELLO 3 SETNAME app\r\n")
	c.expect(t, helloReply(3, id))
	c.send(t, "GET nope\r\nHGETALL nope\r\nCLIENT GETNAME\r\n")
	c.expect(t, "_\r\n%0\r\n$3\r\napp\r\n")

	c.send(t, "HELLO 2 AUTH default anything\r\n")
	c.expect(t, helloReply(2, id))
	c.send(t, "GET nope\r\nHGETALL nope\r\n")
	c.expect(t, "$-1\r\n*0\r\n")
}

func TestSelect(t *testing.T) {
	ts := startServer(t, config{})
	assert.Equal(t, "OK", ts.do(t, "SELECT", "0"))
	assert.Equal(t, "(error) ERR DB index is out of range", ts.do(t, "SELECT", "1"))
}

// infoLine matches a line of CLIENT LIST, capturing the fields the tests
// look at.
var infoLine = regexp.MustCompile(`^id=(\d+) addr=(\S+) laddr=(\S+) fd=\d+ name=(\S*) age=(\d+) idle=(\d+) ` +
	`flags=(\w+) db=0 sub=(\d+) psub=(\d+) ssub=(\d+) multi=(-1|\d+) qbuf=\d+ qbuf-free=\d+ argv-mem=\d+ multi-mem=\d+ ` +
	`rbs=\d+ rbp=\d+ obl=\d+ oll=\d+ omem=\d+ tot-mem=\d+ events=rw? cmd=(\S+) user=default redir=-1 resp=([23])$`)

// The fields infoLine captures.
const (
	fieldID = 1 + iota
	fieldAddr
	fieldLaddr
	fieldName
	fieldAge
	fieldIdle
	fieldFlags
	fieldSub
	fieldPsub
	fieldSsub
	fieldMulti
	fieldCmd
	fieldResp
)

func TestClientInfoAndList(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	id := c.clientID(t)
	c.send(t, "CLIENT SETNAME worker\r\nHELLO 3\r\n")
	c.expect(t, "+OK\r\n"+helloReply(3, id))

	c.send(t, "CLIENT INFO\r\n")
	line, ok := strings.CutSuffix(c.bulk(t), "\n")
	require.True(t, ok, "a line of CLIENT LIST ends with a newline")
	m := infoLine.FindStringSubmatch(line)
	require.NotNil(t, m, line)
	assert.Equal(t, []string{id, c.LocalAddr().String(), ts.addr(), "worker", "0", "0", "N", "0", "0", "0", "-1", "client|info", "3"}, m[1:])

	list := ts.do(t, "CLIENT", "LIST")
	lines := strings.Split(list, "\n")
	require.Len(t, lines, 2, list)
	ours := infoLine.FindStringSubmatch(lines[0])
	require.NotNil(t, ours, lines[0])
	assert.Equal(t, id, ours[1], "oldest first")
	assert.Equal(t, "client|info", ours[fieldCmd])
	theirs := infoLine.FindStringSubmatch(lines[1])
	require.NotNil(t, theirs, lines[1])
	assert.Equal(t, "client|list", theirs[fieldCmd])

	assert.Equal(t, lines[0], ts.do(t, "CLIENT", "LIST", "ID", id, "99999"))
	assert.Equal(t, lines[0], ts.do(t, "CLIENT", "LIST", "ID", "99999", id))
	assert.Equal(t, lines[0], ts.do(t, "CLIENT", "LIST", "TYPE", "normal", "ID", id))
	assert.Empty(t, ts.do(t, "CLIENT", "LIST", "TYPE", "pubsub"))
}

func TestClientIdle(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	id := c.clientID(t)
	idle := regexp.MustCompile(`(?m)^id=` + id + ` .* idle=([1-9]\d*) `)
	require.Eventually(t, func() bool {
		return idle.MatchString(ts.do(t, "CLIENT", "LIST"))
	}, 5*time.Second, 100*time.Millisecond)
}

// TestClientKill kills clients each way CLIENT KILL selects them; each
// sees its connection reset.
func TestClientKill(t *testing.T) {
	ts := startServer(t, config{})
	tests := []struct {
		name string
		args func(c *rawConn) []string
		want string
	}{
		{"by id", func(c *rawConn) []string { return []string{"ID", c.clientID(t)} }, "(integer) 1"},
		{"by addr", func(c *rawConn) []string { return []string{"ADDR", c.LocalAddr().String()} }, "(integer) 1"},
		{"by addr, old form", func(c *rawConn) []string { return []string{c.LocalAddr().String()} }, "OK"},
		{"by laddr and id", func(c *rawConn) []string { return []string{"LADDR", ts.addr(), "ID", c.clientID(t)} }, "(integer) 1"},
		{"by user, type and addr", func(c *rawConn) []string {
			return []string{"USER", "default", "TYPE", "normal", "ADDR", c.LocalAddr().String()}
		}, "(integer) 1"},
		{"by type", func(c *rawConn) []string {
			c.send(t, "SUBSCRIBE ch\r\n")
			c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n")
			return []string{"TYPE", "pubsub"}
		}, "(integer) 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			victim, bystander := ts.dial(t), ts.dial(t)
			bystander.clientID(t) // the connection is open
			args := append([]string{"CLIENT", "KILL"}, tt.args(victim)...)
			assert.Equal(t, tt.want, ts.do(t, args...))
			victim.expectReset(t)
			bystander.send(t, "PING\r\n")
			bystander.expect(t, "+PONG\r\n")
		})
	}
	assert.Equal(t, "(error) ERR No such client", ts.do(t, "CLIENT", "KILL", "127.0.0.1:1"))
	assert.Equal(t, "(integer) 0", ts.do(t, "CLIENT", "KILL", "ID", "99999999"))
}

// TestClientKillSelf checks that a client that kills itself gets its reply
// before its connection ends, and that SKIPME spares it by default.
func TestClientKillSelf(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	id := c.clientID(t)
	c.send(t, "CLIENT KILL ID "+id+"\r\n")
	c.expect(t, ":0\r\n")
	c.send(t, fmt.Sprintf("CLIENT KILL ID %s SKIPME no\r\nPING\r\n", id))
	c.expect(t, ":1\r\n")
	c.expectClosed(t)
}

// TestClientListForgetsClosed waits for a closed client to leave the list.
func TestClientListForgetsClosed(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	id := c.clientID(t)
	require.Contains(t, ts.do(t, "CLIENT", "LIST"), "id="+id+" ")
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool {
		return !strings.Contains(ts.do(t, "CLIENT", "LIST"), "id="+id+" ")
	}, 5*time.Second, 10*time.Millisecond)
}

// TestUnixSocket serves a Unix socket, whose clients Redis lists by its
// path.
func TestUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redis.sock")
	startServer(t, config{addr: "unix://" + path})
	out, err := exec.Command(tool(t, "redis-cli"), "-s", path, "CLIENT", "LIST").Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), " addr="+path+":0 laddr="+path+":0 ")
	assert.Contains(t, string(out), " flags=U ")
}

// TestClientListBehindProxy checks that a client relayed by a load balancer
// is listed, and can be killed, by the address its PROXY header names.
func TestClientListBehindProxy(t *testing.T) {
	ts := startServer(t, config{proxy: sluice.ProxyRequired})
	h := proxyproto.Header{
		Command:     proxyproto.Proxy,
		Transport:   proxyproto.TCP4,
		Source:      netip.MustParseAddrPort("203.0.113.7:4242"),
		Destination: netip.MustParseAddrPort("198.51.100.1:6379"),
	}
	header, err := h.AppendV2(nil)
	require.NoError(t, err)

	c := ts.dial(t)
	c.send(t, string(header)+"CLIENT LIST\r\n")
	m := infoLine.FindStringSubmatch(strings.TrimSuffix(c.bulk(t), "\n"))
	require.NotNil(t, m)
	assert.Equal(t, "203.0.113.7:4242", m[fieldAddr], "addr")
	assert.Equal(t, ts.addr(), m[fieldLaddr], "laddr: the socket's, not the header's")

	admin := ts.dial(t)
	admin.send(t, string(header)+"CLIENT KILL ADDR 203.0.113.7:4242\r\n")
	admin.expect(t, ":1\r\n")
	c.expectReset(t)
}
