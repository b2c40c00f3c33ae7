package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// client returns the server's client for a test's connection.
func (ts *testServer) client(t testing.TB, c *rawConn) *client {
	t.Helper()
	id, err := strconv.ParseUint(c.clientID(t), 10, 64)
	require.NoError(t, err)
	ts.clients.mu.Lock()
	defer ts.clients.mu.Unlock()
	cl := ts.clients.m[id]
	require.NotNil(t, cl)
	return cl
}

// loopOf returns the index of the loop serving c.
func (ts *testServer) loopOf(t testing.TB, c *rawConn) int {
	return ts.client(t, c).loop.loop.Index()
}

// dialOnLoop opens connections until one is served by loop i, and
// returns it; the others stay open until the test ends.
func (ts *testServer) dialOnLoop(t testing.TB, i int) *rawConn {
	t.Helper()
	for range 4 * len(ts.loops) {
		c := ts.dial(t)
		if ts.loopOf(t, c) == i {
			return c
		}
	}
	t.Fatalf("no connection landed on loop %d", i)
	return nil
}

// pubsubScripts run on one connection each, against this server and
// Redis, and must get the same bytes back.
var pubsubScripts = []string{
	"UNSUBSCRIBE\r\nPUNSUBSCRIBE\r\nSUNSUBSCRIBE\r\nUNSUBSCRIBE x y\r\n",
	"SUBSCRIBE c1 c2 c1\r\nPSUBSCRIBE p* c?\r\nSSUBSCRIBE s\r\nGET k\r\nPING\r\nPING hi\r\nECHO x\r\nHELLO 3\r\nPING a b\r\n",
	"SUBSCRIBE c\r\nUNSUBSCRIBE c\r\nPING\r\nSSUBSCRIBE s\r\nSUNSUBSCRIBE s\r\nGET k\r\n",
	"SUBSCRIBE\r\nPSUBSCRIBE\r\nPUBLISH c\r\nPUBSUB\r\nPUBSUB FOO\r\nPUBSUB NUMPAT x\r\nPUBSUB CHANNELS a b\r\n",
	"PUBLISH nobody x\r\nSPUBLISH nobody x\r\nPUBSUB NUMSUB a b\r\nPUBSUB NUMPAT\r\nPUBSUB CHANNELS\r\nPUBSUB SHARDNUMSUB a\r\n",
	"SUBSCRIBE c\r\nPUBSUB NUMSUB c\r\nRESET\r\nPUBSUB NUMSUB c\r\nPUBSUB CHANNELS\r\n",
	"HELLO 3\r\nSUBSCRIBE c\r\nPSUBSCRIBE c*\r\nSSUBSCRIBE c\r\nPUBLISH c self\r\nSPUBLISH c shard\r\nGET k\r\nPUBSUB NUMSUB c\r\n" +
		"UNSUBSCRIBE\r\nPUNSUBSCRIBE\r\nSUNSUBSCRIBE\r\nUNSUBSCRIBE\r\nHELLO 2\r\n",
	"HELLO 3\r\nCLIENT REPLY OFF\r\nSUBSCRIBE c\r\nPUBLISH c hidden\r\nCLIENT REPLY ON\r\nCLIENT REPLY SKIP\r\nPING\r\nPUBLISH c seen\r\n",
	"CLIENT REPLY OFF\r\nSUBSCRIBE c\r\nPING\r\nUNSUBSCRIBE\r\nPING\r\nCLIENT REPLY SKIP\r\nSUBSCRIBE d\r\nPING\r\nCLIENT REPLY ON\r\nPING\r\n",
	"CLIENT REPLY SKIP\r\nPING\r\nPING\r\nCLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nPING\r\nPING\r\nCLIENT REPLY MAYBE\r\n",
}

func TestPubSubAsRedis(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	for _, script := range pubsubScripts {
		sameAsRedis(t, ts, r, script)
	}
}

// TestPublishToEveryLoop publishes from one loop to subscribers on every
// loop, by channel and by pattern: each gets every message, in order, and
// PUBLISH counts them all.
func TestPublishToEveryLoop(t *testing.T) {
	const loops, messages = 4, 200
	ts := startServer(t, config{loops: loops})
	subs := make([]*rawConn, loops)
	for i := range subs {
		subs[i] = ts.dialOnLoop(t, i)
		subs[i].send(t, "SUBSCRIBE news\r\nPSUBSCRIBE n*\r\n")
		subs[i].expect(t, "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n")
		subs[i].expect(t, "*3\r\n$10\r\npsubscribe\r\n$2\r\nn*\r\n:2\r\n")
	}
	pub := ts.dialOnLoop(t, 1)
	var b strings.Builder
	for i := range messages {
		b.WriteString(resp("PUBLISH", "news", strconv.Itoa(i)))
	}
	pub.send(t, b.String())
	pub.expect(t, strings.Repeat(":"+strconv.Itoa(2*loops)+"\r\n", messages))

	for _, sub := range subs {
		for i := range messages {
			n := strconv.Itoa(i)
			// The channel's message and the pattern's, in that order, as
			// Redis sends them.
			sub.expect(t, bulkArray(false, "message", "news", n)+bulkArray(false, "pmessage", "n*", "news", n))
		}
	}
}

// TestPushesBetweenReplies has a RESP3 client, subscribed, run commands
// while messages arrive from another loop: each reply and each push
// arrives whole, replies in order.
func TestPushesBetweenReplies(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	sub := ts.dialOnLoop(t, 0)
	pub := ts.dialOnLoop(t, 1)
	sub.send(t, "HELLO 3\r\nSET k v\r\nSUBSCRIBE c\r\n")
	sub.reply(t)
	sub.expect(t, "+OK\r\n>3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")

	const n = 500
	var publications strings.Builder
	for i := range n {
		publications.WriteString(resp("PUBLISH", "c", strconv.Itoa(i)))
	}
	// The publications and the GETs go at once, each from its loop.
	pub.send(t, publications.String())
	sub.send(t, strings.Repeat("GET k\r\n", n))
	var replies, pushes int
	for replies < n || pushes < n {
		r := sub.reply(t)
		if strings.HasPrefix(r, ">") {
			assert.Equal(t, bulkArray(true, "message", "c", strconv.Itoa(pushes)), r)
			pushes++
			continue
		}
		assert.Equal(t, "$1\r\nv\r\n", r)
		replies++
	}
	pub.expect(t, strings.Repeat(":1\r\n", n))
}

// TestNoMessageAfterUnsubscribe unsubscribes a RESP2 client, on one loop,
// from a channel published to from another without a pause: once its
// unsubscribe is confirmed, no message for the channel comes, or the
// client would take it for the reply to its next command.
func TestNoMessageAfterUnsubscribe(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	pub := ts.dialOnLoop(t, 1)
	// The publisher publishes until the test ends, reading its replies as
	// they come; the test reads none of them.
	stop := make(chan struct{})
	published := make(chan error, 1)
	go func() {
		go io.Copy(io.Discard, pub.r)
		batch := strings.Repeat(resp("PUBLISH", "c", "m"), 16)
		for {
			select {
			case <-stop:
				published <- nil
				return
			default:
			}
			if _, err := io.WriteString(pub, batch); err != nil {
				published <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		assert.NoError(t, <-published)
	}()
	for range 20 {
		sub := ts.dialOnLoop(t, 0)
		sub.send(t, "SUBSCRIBE c\r\n")
		sub.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")
		// Some messages, then unsubscribe while they keep coming.
		sub.expect(t, bulkArray(false, "message", "c", "m"))
		sub.send(t, "UNSUBSCRIBE c\r\nPING\r\n")
		for {
			r := sub.reply(t)
			if r != bulkArray(false, "message", "c", "m") {
				require.Equal(t, "*3\r\n$11\r\nunsubscribe\r\n$1\r\nc\r\n:0\r\n", r)
				break
			}
		}
		sub.expect(t, "+PONG\r\n")
		sub.Close()
	}
}

// TestPubSubIntrospection checks PUBSUB and CLIENT LIST see subscribers on
// every loop, and forget those that close.
func TestPubSubIntrospection(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	a, b := ts.dialOnLoop(t, 0), ts.dialOnLoop(t, 1)
	idA := a.clientID(t)
	a.send(t, "SUBSCRIBE x y\r\nPSUBSCRIBE p*\r\n")
	for range 3 {
		a.reply(t)
	}
	b.send(t, "SUBSCRIBE y\r\nSSUBSCRIBE s\r\nPSUBSCRIBE p*\r\n")
	for range 3 {
		b.reply(t)
	}
	admin := ts.dial(t)
	admin.send(t, "PUBSUB NUMSUB x y z\r\nPUBSUB NUMPAT\r\nPUBSUB CHANNELS\r\nPUBSUB SHARDCHANNELS\r\nPUBSUB SHARDNUMSUB s\r\n")
	admin.expect(t, "*6\r\n$1\r\nx\r\n:1\r\n$1\r\ny\r\n:2\r\n$1\r\nz\r\n:0\r\n:1\r\n")
	admin.expect(t, "*2\r\n$1\r\nx\r\n$1\r\ny\r\n*1\r\n$1\r\ns\r\n*2\r\n$1\r\ns\r\n:1\r\n")

	admin.send(t, "CLIENT LIST TYPE pubsub ID "+idA+"\r\n")
	m := infoLine.FindStringSubmatch(strings.TrimSuffix(admin.bulk(t), "\n"))
	require.NotNil(t, m)
	assert.Equal(t, []string{"P", "2", "1", "0"}, []string{m[fieldFlags], m[fieldSub], m[fieldPsub], m[fieldSsub]})
	admin.send(t, "CLIENT LIST TYPE normal ID "+idA+"\r\n")
	admin.expect(t, "$0\r\n\r\n")

	a.Close()
	b.Close()
	require.Eventually(t, func() bool {
		admin.send(t, "PUBSUB NUMSUB y\r\nPUBSUB NUMPAT\r\nPUBSUB SHARDNUMSUB s\r\n")
		return admin.reply(t)+admin.reply(t)+admin.reply(t) == "*2\r\n$1\r\ny\r\n:0\r\n:0\r\n*2\r\n$1\r\ns\r\n:0\r\n"
	}, 5*time.Second, time.Millisecond)
}

// slowReader opens a connection to ts on loop i whose socket takes little
// before the kernel stops the server sending: a subscriber that does not
// read fills it at once, and its messages pile up in the server.
func (ts *testServer) slowReader(t testing.TB, i int) *rawConn {
	t.Helper()
	for range 4 * len(ts.loops) {
		nc, err := net.Dial("tcp", ts.addr())
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(4096))
		c := &rawConn{Conn: nc, r: bufio.NewReader(nc)}
		require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
		if ts.loopOf(t, c) == i {
			return c
		}
	}
	t.Fatalf("no connection landed on loop %d", i)
	return nil
}

// TestSlowSubscriberIsDropped publishes from one loop to a subscriber on
// another that stops reading, and to one that reads: the slow one is
// disconnected once its messages pass the pub/sub class's hard bound,
// holding no more than that, while the publisher never waits and the
// other subscriber gets every message.
func TestSlowSubscriberIsDropped(t *testing.T) {
	// More than the bound and the kernel buffers between the server and a
	// client that does not read, which grow to a few megabytes.
	const bound, messages, size = 1 << 20, 400, 32 << 10
	var limit outputLimit
	require.NoError(t, limit.Set(fmt.Sprintf("pubsub %d 0 0", bound)))
	ts := startServer(t, config{loops: 3, output: limit})
	slow := ts.slowReader(t, 1)
	slowClient := ts.client(t, slow)
	fast := ts.dialOnLoop(t, 2)
	fast.send(t, "SUBSCRIBE c\r\n")
	fast.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")
	pub := ts.dialOnLoop(t, 0)

	body := strings.Repeat("x", size)
	// publish publishes the messages, each once the last has reached the
	// fast subscriber, and returns how long that took and the most the
	// slow subscriber held meanwhile.
	publish := func() (time.Duration, int64) {
		var most int64
		start := time.Now()
		for range messages {
			pub.send(t, resp("PUBLISH", "c", body))
			pub.reply(t)
			fast.expect(t, bulkArray(false, "message", "c", body))
			most = max(most, slowClient.outbound()+slowClient.pending.Load())
		}
		return time.Since(start), most
	}
	alone, _ := publish()
	slow.send(t, "SUBSCRIBE c\r\n")
	slow.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")
	stuck, most := publish()
	slow.expectResetAfterAll(t)
	assert.EqualValues(t, 1, ts.outputDrops.Load())
	// A message on its way from the loop's inbox to the connection counts
	// in both for a moment, which the test may see.
	assert.LessOrEqual(t, most, int64(bound+size+64), "the slow subscriber held more than its bound")
	t.Logf("%d publications of %d bytes: %v with one subscriber, %v with a second one stuck", messages, size, alone, stuck)
	// The publisher never waits on the stuck subscriber; allow for a
	// machine shared with other work.
	assert.Less(t, stuck, 10*alone+time.Second, "the stuck subscriber slowed the publisher")
}

// TestSubscriberOverSoftLimit checks the soft bound: a subscriber whose
// unsent messages stay over it for its time is disconnected, one that
// only passes it for a moment is not.
func TestSubscriberOverSoftLimit(t *testing.T) {
	var limit outputLimit
	require.NoError(t, limit.Set("pubsub 0 64kb 0"))
	ts := startServer(t, config{loops: 2, output: limit})
	slow := ts.slowReader(t, 1)
	slow.send(t, "SUBSCRIBE c\r\n")
	slow.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")
	pub := ts.dialOnLoop(t, 0)
	body := strings.Repeat("x", 16<<10)
	require.Eventually(t, func() bool {
		pub.send(t, resp("PUBLISH", "c", body))
		pub.reply(t)
		return ts.outputDrops.Load() == 1
	}, 10*time.Second, time.Millisecond)
	slow.expectResetAfterAll(t)
}
