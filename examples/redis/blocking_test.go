package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockingScripts run on one connection, against this server and Redis:
// blocking commands that find something at once, errors, and timeouts.
var blockingScripts = []string{
	"RPUSH l a b c\r\nZADD z 1 a 2 b 3 c\r\nBLPOP nothing l 0\r\nBRPOP l 0\r\nBZPOPMIN z 0\r\nBZPOPMAX z 0\r\n" +
		"BLMPOP 0 2 x l RIGHT COUNT 5\r\nBZMPOP 0 1 z MIN COUNT 9\r\nEXISTS l z\r\n",
	"RPUSH src a b\r\nBLMOVE src dst LEFT RIGHT 0\r\nBRPOPLPUSH src dst 0\r\nLRANGE dst 0 -1\r\nEXISTS src\r\n" +
		"LMOVE dst dst LEFT RIGHT\r\nLRANGE dst 0 -1\r\nRPOPLPUSH nothing dst\r\nLMOVE nothing dst LEFT LEFT\r\n",
	"BLPOP nothing 0.01\r\nBRPOPLPUSH nothing x 0.01\r\nBZPOPMAX nothing 0.01\r\nBLMPOP 0.01 1 nothing LEFT\r\n" +
		"BZMPOP 0.01 1 nothing MIN\r\nBLMOVE nothing x LEFT LEFT 0.01\r\n",
	"HELLO 3\r\nRPUSH l a b c\r\nZADD z 1 a 2 b\r\nBZPOPMIN z 0\r\nBZMPOP 0 1 z MAX COUNT 1\r\nBLMPOP 0 1 l LEFT\r\n" +
		"BLPOP nothing 0.01\r\nZMPOP 1 nothing MIN\r\nLMPOP 1 nothing LEFT\r\n",
	"BLPOP k -1\r\nBLPOP k abc\r\nBLPOP k 1e400\r\nBLPOP k inf\r\nBLPOP k nan\r\nBLPOP k 0.5x\r\nBLMOVE s d UP LEFT 0\r\n" +
		"BLMOVE s d LEFT LEFT x\r\nBLPOP k\r\n",
	"BLMPOP 0 0 l LEFT\r\nBLMPOP 0 -1 l LEFT\r\nBLMPOP 0 x l LEFT\r\nBLMPOP 0 2 l LEFT\r\nBLMPOP 0 1 l MIDDLE\r\n" +
		"BLMPOP 0 1 l LEFT COUNT 0\r\nBLMPOP 0 1 l LEFT COUNT -1\r\nBLMPOP 0 1 l LEFT COUNT 1 COUNT 2\r\n" +
		"BLMPOP 0 1 l LEFT FOO\r\nLMPOP 1 l\r\nBZMPOP 0 1 z\r\nBLMPOP x 1 l LEFT\r\nLMPOP 0 l LEFT\r\nZMPOP 1 z LEFT\r\n",
	"SET s v\r\nBLPOP s 0\r\nBZPOPMIN s 0\r\nBLMOVE s d LEFT LEFT 0\r\nRPUSH src x\r\nBLMOVE src s LEFT LEFT 0\r\n" +
		"LMOVE src s LEFT LEFT\r\nRPOPLPUSH src s\r\nLMPOP 1 s LEFT\r\nZMPOP 1 s MIN\r\nBLPOP nothing s 0\r\n",
	"CLIENT UNBLOCK 99999\r\nCLIENT UNBLOCK x\r\nCLIENT UNBLOCK 1 MAYBE\r\nCLIENT UNBLOCK 1 TIMEOUT\r\n",
}

func TestBlockingAsRedis(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	for _, script := range blockingScripts {
		// Whole: each script's commands after one that times out are
		// answered only if the connection stays open meanwhile.
		sameAsRedisBy(t, exchangeWhole, ts, r, "FLUSHALL\r\n"+script)
	}
}

// blockedOn sends a blocking command on c and waits until the server has
// the client blocked.
func (ts *testServer) blockedOn(t testing.TB, c *rawConn, command string) *client {
	t.Helper()
	cl := ts.client(t, c)
	c.send(t, command)
	require.Eventually(t, func() bool { return cl.blockRef.Load() != nil }, 5*time.Second, time.Millisecond)
	return cl
}

// TestBlockedWokenFromAnotherLoop blocks a client on one loop and pushes
// on another: the push wakes it, and the commands it sent while blocked
// run after.
func TestBlockedWokenFromAnotherLoop(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	w := ts.dialOnLoop(t, 0)
	p := ts.dialOnLoop(t, 1)
	ts.blockedOn(t, w, "BLPOP k 0\r\nPING\r\n")
	release := ts.holdLoop(t, 0) // so that its loop cannot answer it before INFO runs
	defer release()
	p.send(t, "RPUSH k v\r\nINFO clients\r\n")
	p.expect(t, ":1\r\n")
	assert.Equal(t, "1", infoFields(p.bulk(t))["blocked_clients"], "the push serves it on its own loop, after")
	release()
	w.expect(t, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n+PONG\r\n")
	p.send(t, "EXISTS k\r\n")
	p.expect(t, ":0\r\n")
	require.Eventually(t, func() bool {
		p.send(t, "INFO clients\r\n")
		return infoFields(p.bulk(t))["blocked_clients"] == "0"
	}, 5*time.Second, time.Millisecond)
}

// TestBlockedServedInArrivalOrder blocks clients on three loops, one after
// another, and pushes from a fourth: each gets an element in the order
// they blocked, whatever the loops.
func TestBlockedServedInArrivalOrder(t *testing.T) {
	ts := startServer(t, config{loops: 4})
	order := []int{2, 0, 1}
	waiters := make([]*rawConn, len(order))
	for i, loop := range order {
		waiters[i] = ts.dialOnLoop(t, loop)
		ts.blockedOn(t, waiters[i], "BRPOP k other 0\r\n")
	}
	p := ts.dialOnLoop(t, 3)
	p.send(t, "LPUSH k first\r\n")
	p.expect(t, ":1\r\n")
	waiters[0].expect(t, "*2\r\n$1\r\nk\r\n$5\r\nfirst\r\n")
	p.send(t, "LPUSH k second third\r\n")
	p.expect(t, ":2\r\n")
	waiters[1].expect(t, "*2\r\n$1\r\nk\r\n$6\r\nsecond\r\n")
	waiters[2].expect(t, "*2\r\n$1\r\nk\r\n$5\r\nthird\r\n")
}

// TestBlockingTimeout checks a fractional timeout on the loop's wheel: the
// client waits at least that long, and then not much longer.
func TestBlockingTimeout(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	c := ts.dial(t)
	for _, command := range []string{"BLPOP k 0.15", "BLMOVE k d LEFT LEFT 0.15", "BZMPOP 0.15 1 k MIN"} {
		start := time.Now()
		c.send(t, command+"\r\n")
		c.expect(t, "*-1\r\n")
		took := time.Since(start)
		assert.GreaterOrEqual(t, took, 150*time.Millisecond, command)
		assert.Less(t, took, 2*time.Second, command)
	}
}

// TestClientUnblock ends waits from another loop, as a timeout and as an
// error, and says 0 for a client that is not blocked.
func TestClientUnblock(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	w := ts.dialOnLoop(t, 0)
	id := w.clientID(t)
	admin := ts.dialOnLoop(t, 1)
	admin.send(t, "CLIENT UNBLOCK "+id+"\r\n")
	admin.expect(t, ":0\r\n")

	ts.blockedOn(t, w, "BLPOP k 0\r\nPING\r\n")
	admin.send(t, "CLIENT LIST ID "+id+"\r\n")
	m := infoLine.FindStringSubmatch(strings.TrimSuffix(admin.bulk(t), "\n"))
	require.NotNil(t, m)
	assert.Equal(t, "b", m[fieldFlags])
	admin.send(t, "CLIENT UNBLOCK "+id+" TIMEOUT\r\n")
	admin.expect(t, ":1\r\n")
	w.expect(t, "*-1\r\n+PONG\r\n")

	ts.blockedOn(t, w, "BZPOPMIN k 0\r\n")
	admin.send(t, "CLIENT UNBLOCK "+id+" ERROR\r\nCLIENT UNBLOCK "+id+" ERROR\r\n")
	admin.expect(t, ":1\r\n:0\r\n")
	w.expect(t, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")
	admin.send(t, "RPUSH k v\r\n")
	admin.expect(t, ":1\r\n")
}

// TestBlockedClientCloses checks a closed client waits no more: a push
// after it closed stays in the list.
func TestBlockedClientCloses(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	w := ts.dialOnLoop(t, 0)
	cl := ts.blockedOn(t, w, "BLPOP k 0\r\n")
	require.NoError(t, w.Close())
	require.Eventually(t, func() bool { return cl.blockRef.Load() == nil }, 5*time.Second, time.Millisecond)
	p := ts.dialOnLoop(t, 1)
	p.send(t, "RPUSH k v\r\nLLEN k\r\n")
	p.expect(t, ":1\r\n:1\r\n")
}

// TestBlockedClientKilled checks a client CLIENT KILL ended waits no more
// once the kill is answered, as in Redis, though its loop closes it later:
// a push from the killer, on either loop, stays in the list, whole, and
// goes to the next client waiting.
func TestBlockedClientKilled(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	for loop := range 2 {
		victim := ts.dialOnLoop(t, 0)
		id := victim.clientID(t)
		ts.blockedOn(t, victim, "BLPOP k 0\r\n")
		killer := ts.dialOnLoop(t, loop)
		killer.send(t, "CLIENT KILL ID "+id+"\r\nRPUSH k v\r\nLLEN k\r\nLPOP k\r\n")
		killer.expect(t, ":1\r\n:1\r\n:1\r\n$1\r\nv\r\n")
		victim.expectReset(t)

		victim = ts.dialOnLoop(t, 0)
		id = victim.clientID(t)
		ts.blockedOn(t, victim, "BLPOP k 0\r\n")
		next := ts.dialOnLoop(t, 1)
		ts.blockedOn(t, next, "BLPOP k 0\r\n")
		killer.send(t, "CLIENT KILL ID "+id+"\r\nRPUSH k w\r\n")
		killer.expect(t, ":1\r\n:1\r\n")
		next.expect(t, "*2\r\n$1\r\nk\r\n$1\r\nw\r\n")
	}
}

// TestServedClientClosesFirst has a push serve a client whose connection
// closes before its loop could tell it: what the push took for it goes
// back to the list, and to the next client waiting.
func TestServedClientClosesFirst(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	gone := ts.dialOnLoop(t, 0)
	goneClient := ts.blockedOn(t, gone, "BLPOP k 0\r\n")
	next := ts.dialOnLoop(t, 0)
	ts.blockedOn(t, next, "BLPOP k 0\r\n")
	p := ts.dialOnLoop(t, 1)

	// Hold loop 0, so that it takes up the close before the reply the push
	// posts it.
	release := make(chan struct{})
	holding := make(chan struct{})
	require.NoError(t, ts.loops[0].loop.Execute(func() {
		close(holding)
		<-release
	}))
	<-holding
	require.NoError(t, ts.eng.Kill(goneClient.conn.ID()))
	p.send(t, "RPUSH k v\r\n")
	p.expect(t, ":1\r\n")
	close(release)

	next.expect(t, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n")
	gone.expectReset(t)
}

// moveScene is a BLMOVE blocked on loop 0, from a source to a destination
// in another shard, with a client on loop 1 to push and one on loop 2 to
// look.
type moveScene struct {
	ts                      *testServer
	src, dst                string
	mover, pusher, observer *rawConn
}

func newMoveScene(t *testing.T) *moveScene {
	ts := startServer(t, config{loops: 3})
	s := &moveScene{ts: ts, src: "src"}
	i, _ := ts.db.locate([]byte(s.src))
	for n := 0; s.dst == ""; n++ {
		dst := fmt.Sprintf("dst%d", n)
		if j, _ := ts.db.locate([]byte(dst)); j != i {
			s.dst = dst
		}
	}
	s.mover, s.pusher, s.observer = ts.dialOnLoop(t, 0), ts.dialOnLoop(t, 1), ts.dialOnLoop(t, 2)
	ts.blockedOn(t, s.mover, "BLMOVE "+s.src+" "+s.dst+" RIGHT LEFT 0\r\n")
	return s
}

// push pushes the element "a" to the source, after the commands first.
func (s *moveScene) push(t *testing.T, first string) {
	s.pusher.send(t, first+"RPUSH "+s.src+" a\r\n")
	s.pusher.expect(t, strings.Repeat("+OK\r\n", strings.Count(first, "\r\n"))+":1\r\n")
}

// expect checks, in one transaction, what the source and the destination
// hold.
func (s *moveScene) expect(t *testing.T, src, dst string) {
	s.observer.send(t, "MULTI\r\nLRANGE "+s.src+" 0 -1\r\nLRANGE "+s.dst+" 0 -1\r\nEXEC\r\n")
	s.observer.expect(t, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n"+src+dst)
}

const (
	noElements = "*0\r\n"
	elementA   = "*1\r\n$1\r\na\r\n"
)

// TestBlockingMoveAcrossLoops serves a BLMOVE blocked on one loop with a
// push on another: the element lands in the destination, and a client
// blocked on the destination, on a third loop, is served from it in turn.
func TestBlockingMoveAcrossLoops(t *testing.T) {
	s := newMoveScene(t)
	s.ts.blockedOn(t, s.observer, "BLPOP "+s.dst+" 0\r\n")
	s.push(t, "")
	s.mover.expect(t, "$1\r\na\r\n")
	s.observer.expect(t, "*2\r\n$"+strconv.Itoa(len(s.dst))+"\r\n"+s.dst+"\r\n$1\r\na\r\n")
}

// holdLoop keeps loop i busy until the test releases it.
func (ts *testServer) holdLoop(t testing.TB, i int) (release func()) {
	held, done := make(chan struct{}), make(chan struct{})
	require.NoError(t, ts.loops[i].loop.Execute(func() {
		close(held)
		<-done
	}))
	<-held
	return sync.OnceFunc(func() { close(done) })
}

// TestBlockingMoveIsAtomic serves a BLMOVE with the mover's loop held
// busy: once the push has replied, every client sees the element in the
// destination, none in neither list, though the mover is told only once
// its loop is free.
func TestBlockingMoveIsAtomic(t *testing.T) {
	s := newMoveScene(t)
	release := s.ts.holdLoop(t, 0)
	defer release()
	s.push(t, "")
	s.expect(t, noElements, elementA)
	release()
	s.mover.expect(t, "$1\r\na\r\n")
}

// TestBlockingMoveWhileDestinationBusy serves a BLMOVE from a push whose
// command holds the destination's shard (LMOVE from the destination to
// the source): the element stays in the source, where every client sees
// it, until the mover's loop has locked both; then it moves, and the
// mover is told.
func TestBlockingMoveWhileDestinationBusy(t *testing.T) {
	s := newMoveScene(t)
	s.pusher.send(t, "RPUSH "+s.dst+" a\r\n")
	s.pusher.expect(t, ":1\r\n")
	release := s.ts.holdLoop(t, 0)
	defer release()
	s.pusher.send(t, "LMOVE "+s.dst+" "+s.src+" LEFT LEFT\r\n")
	s.pusher.expect(t, "$1\r\na\r\n")
	s.expect(t, elementA, noElements)
	release()
	s.mover.expect(t, "$1\r\na\r\n")
	s.expect(t, noElements, elementA)
}

// TestBlockingMoveToWrongType serves a BLMOVE whose destination came to
// hold another type while it waited: as in Redis 7.0, it replies
// WRONGTYPE and the element stays where it was.
func TestBlockingMoveToWrongType(t *testing.T) {
	s := newMoveScene(t)
	s.push(t, "SET "+s.dst+" string\r\n")
	s.mover.expect(t, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
	s.observer.send(t, "LRANGE "+s.src+" 0 -1\r\n")
	s.observer.expect(t, elementA)
}

// TestBlockingMoveChain serves BLMOVEs that feed each other, a to b and b
// to a, and a BLPOP on b behind them, from one push: the element passes
// through both moves, in the order the clients came.
func TestBlockingMoveChain(t *testing.T) {
	ts := startServer(t, config{loops: 3})
	first := ts.dialOnLoop(t, 0)
	ts.blockedOn(t, first, "BLMOVE a b LEFT LEFT 0\r\n")
	second := ts.dialOnLoop(t, 1)
	ts.blockedOn(t, second, "BLMOVE b a LEFT LEFT 0\r\n")
	third := ts.dialOnLoop(t, 2)
	ts.blockedOn(t, third, "BLPOP b 0\r\n")
	p := ts.dialOnLoop(t, 1)
	p.send(t, "LPUSH a x\r\n")
	p.expect(t, ":1\r\n")
	first.expect(t, "$1\r\nx\r\n")
	second.expect(t, "$1\r\nx\r\n")
	p.send(t, "LRANGE a 0 -1\r\nEXISTS b\r\n")
	p.expect(t, "*1\r\n$1\r\nx\r\n:0\r\n")
	require.Eventually(t, func() bool {
		p.send(t, "INFO clients\r\n")
		return infoFields(p.bulk(t))["blocked_clients"] == "1" // the BLPOP on b
	}, 5*time.Second, time.Millisecond)
}

// TestBlockingPopsOfSortedSets blocks BZPOPMIN and BZMPOP on one loop, fed
// by ZADD on another.
func TestBlockingPopsOfSortedSets(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	a, b := ts.dialOnLoop(t, 0), ts.dialOnLoop(t, 0)
	ts.blockedOn(t, a, "BZPOPMIN z 0\r\n")
	ts.blockedOn(t, b, "BZMPOP 0 1 z MAX COUNT 5\r\n")
	p := ts.dialOnLoop(t, 1)
	p.send(t, "ZADD z 1 one 2 two 3 three\r\n")
	p.expect(t, ":3\r\n")
	a.expect(t, "*3\r\n$1\r\nz\r\n$3\r\none\r\n$1\r\n1\r\n")
	b.expect(t, "*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$5\r\nthree\r\n$1\r\n3\r\n*2\r\n$3\r\ntwo\r\n$1\r\n2\r\n")
}

// TestBlockedWhileEngineStops stops the server with clients blocked, with
// and without timeouts: nothing hangs.
func TestBlockedWhileEngineStops(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	ts.blockedOn(t, ts.dialOnLoop(t, 0), "BLPOP k 0\r\n")
	ts.blockedOn(t, ts.dialOnLoop(t, 1), "BLPOP k 100\r\n")
}
