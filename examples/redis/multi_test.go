package main

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// multiScripts run on one connection, against this server and Redis.
var multiScripts = []string{
	"EXEC\r\nDISCARD\r\nMULTI\r\nMULTI\r\nSET a 1\r\nINCR a\r\nFOO\r\nGET\r\nEXEC\r\nGET a\r\n",
	"MULTI\r\nSET a x\r\nINCR a\r\nLPUSH a y\r\nGET a\r\nEXEC\r\n",
	"WATCH a\r\nMULTI\r\nWATCH b\r\nGET a\r\nEXEC\r\n",
	"WATCH a\r\nSET a 1\r\nMULTI\r\nGET a\r\nEXEC\r\nMULTI\r\nGET a\r\nEXEC\r\n",
	"MULTI\r\nBLPOP nothing 0\r\nBZMPOP 0 1 nothing MIN\r\nBLMOVE nothing x LEFT LEFT 0\r\nEXEC\r\n",
	"MULTI\r\nPING\r\nDISCARD\r\nEXEC\r\nMULTI\r\nEXEC\r\n",
	"EXEC x\r\nMULTI x\r\nMULTI\r\nEXEC x\r\nEXEC\r\nWATCH\r\nUNWATCH x\r\nMULTI\r\nUNWATCH\r\nDISCARD\r\n",
	"HELLO 3\r\nMULTI\r\nGET nope\r\nHGETALL nope\r\nEXEC\r\nMULTI\r\nFOO\r\nEXEC\r\nSET a 1\r\nWATCH a\r\nDEL a\r\nMULTI\r\nPING\r\nEXEC\r\n",
	"MULTI\r\nSUBSCRIBE x\r\nPUBLISH x m\r\nEXEC\r\nMULTI\r\nPING\r\nEXEC\r\nRESET\r\n",
	"RPUSH l a\r\nMULTI\r\nLPUSH l b\r\nLPOP l\r\nLRANGE l 0 -1\r\nEXEC\r\nMULTI\r\nQUIT\r\n",
	"SET a 1\r\nWATCH a\r\nFLUSHALL\r\nMULTI\r\nPING\r\nEXEC\r\nWATCH nokey\r\nFLUSHALL\r\nMULTI\r\nPING\r\nEXEC\r\n",
	"WATCH a b a\r\nMULTI\r\nMSET a 1 b 2 c 3\r\nMGET a b c\r\nKEYS a\r\nDBSIZE\r\nEXEC\r\nEXEC\r\n",
}

func TestTransactionsAsRedis(t *testing.T) {
	eachAsRedis(t, multiScripts)
}

// TestWatchSeesWritesFromAnyLoop watches a key on one loop and changes it
// on another, in every way a key changes: the transaction fails. A write
// to another key, or one that changes nothing, does not fail it.
func TestWatchSeesWritesFromAnyLoop(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	w := ts.dialOnLoop(t, 0)
	other := ts.dialOnLoop(t, 1)
	for _, tt := range []struct {
		setup, write string
		fails        bool
	}{
		{"", "SET k v", true},
		{"SET k 1", "INCR k", true},
		{"SET k v", "APPEND k x", true},
		{"SET k v", "DEL k", true},
		{"SET k v", "EXPIRE k 100", true},
		{"SET k v EX 100", "PERSIST k", true},
		{"SET j v", "RENAME j k", true},
		{"SET k v", "RENAME k j", true},
		{"", "LPUSH k a", true},
		{"RPUSH k a", "RPOP k", true},
		{"", "SADD k a", true},
		{"SADD k a", "SADD k a", false},
		{"", "HSET k f v", true},
		{"", "ZADD k 1 m", true},
		{"ZADD k 1 m", "ZPOPMIN k", true},
		{"SET k v", "FLUSHALL", true},
		{"", "FLUSHALL", false},
		{"SET k v", "SET other v", false},
		{"SET k v", "PERSIST k", false},
		{"SET k v", "GET k", false},
	} {
		t.Run(tt.write, func(t *testing.T) {
			if tt.setup != "" {
				other.send(t, "FLUSHALL\r\n"+tt.setup+"\r\n")
				other.reply(t)
				other.reply(t)
			} else {
				other.send(t, "FLUSHALL\r\n")
				other.expect(t, "+OK\r\n")
			}
			w.send(t, "WATCH k\r\n")
			w.expect(t, "+OK\r\n")
			other.send(t, tt.write+"\r\n")
			other.reply(t)
			w.send(t, "MULTI\r\nPING\r\nEXEC\r\n")
			w.expect(t, "+OK\r\n+QUEUED\r\n")
			if tt.fails {
				w.expect(t, "*-1\r\n")
			} else {
				w.expect(t, "*1\r\n+PONG\r\n")
			}
		})
	}
}

// TestWatchedKeyExpires checks that a watched key expiring before EXEC
// fails the transaction, as in Redis, though nobody touched it.
func TestWatchedKeyExpires(t *testing.T) {
	ts := startServer(t, config{})
	c := ts.dial(t)
	c.send(t, "SET k v PX 20\r\nWATCH k\r\n")
	c.expect(t, "+OK\r\n+OK\r\n")
	require.Eventually(t, func() bool {
		sh, _ := ts.db.shardOf([]byte("k"))
		sh.mu.Lock()
		defer sh.mu.Unlock()
		e := sh.keys["k"]
		return e == nil || e.expire <= time.Now().UnixMilli()
	}, 5*time.Second, time.Millisecond)
	c.send(t, "MULTI\r\nPING\r\nEXEC\r\n")
	c.expect(t, "+OK\r\n+QUEUED\r\n*-1\r\n")
}

// TestExecIsAtomic has a client on one loop move an amount between keys
// of different shards in transactions, while a client on another loop
// reads both: it never sees one changed without the other.
func TestExecIsAtomic(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	a, b := keysOnTwoShards(ts)
	writer, reader := ts.dialOnLoop(t, 0), ts.dialOnLoop(t, 1)
	writer.send(t, "MSET "+a+" 1000 "+b+" 0\r\n")
	writer.expect(t, "+OK\r\n")
	const rounds = 300
	done := make(chan struct{})
	var failed error
	go func() {
		defer close(done)
		tx := strings.Repeat("MULTI\r\nDECR "+a+"\r\nINCR "+b+"\r\nEXEC\r\n", rounds)
		if _, err := writer.Write([]byte(tx)); err != nil {
			failed = err
		}
	}()
	for range rounds {
		reader.send(t, "MGET "+a+" "+b+"\r\n")
		require.Equal(t, "*2", reader.line(t))
		x, err1 := strconv.Atoi(reader.bulk(t))
		y, err2 := strconv.Atoi(reader.bulk(t))
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.Equal(t, 1000, x+y, "a transaction seen half done")
	}
	<-done
	require.NoError(t, failed)
	for range rounds {
		writer.expect(t, "+OK\r\n+QUEUED\r\n+QUEUED\r\n")
		writer.line(t)
		writer.line(t)
		writer.line(t)
	}
}

// keysOnTwoShards returns two keys of different shards.
func keysOnTwoShards(ts *testServer) (string, string) {
	a := "key:0"
	first, _ := ts.db.locate([]byte(a))
	for i := 1; ; i++ {
		b := "key:" + strconv.Itoa(i)
		if s, _ := ts.db.locate([]byte(b)); s != first {
			return a, b
		}
	}
}

// TestOptimisticLocking increments a counter from clients on every loop
// with WATCH, GET and a transaction, retrying those that fail: no
// increment is lost.
func TestOptimisticLocking(t *testing.T) {
	const loops, increments = 4, 50
	ts := startServer(t, config{loops: loops})
	var wg sync.WaitGroup
	retries := make([]int, loops)
	conns := make([]*rawConn, loops)
	for i := range conns {
		conns[i] = ts.dialOnLoop(t, i)
	}
	errs := make(chan string, loops)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < increments; {
				if _, err := c.Write([]byte("WATCH counter\r\nGET counter\r\n")); err != nil {
					errs <- err.Error()
					return
				}
				c.r.ReadString('\n') // +OK
				header, _ := c.r.ReadString('\n')
				n := 0
				if header != "$-1\r\n" {
					v, _ := c.r.ReadString('\n')
					n, _ = strconv.Atoi(strings.TrimSpace(v))
				}
				tx := "MULTI\r\nSET counter " + strconv.Itoa(n+1) + "\r\nEXEC\r\n"
				if _, err := c.Write([]byte(tx)); err != nil {
					errs <- err.Error()
					return
				}
				c.r.ReadString('\n') // +OK
				c.r.ReadString('\n') // +QUEUED
				result, _ := c.r.ReadString('\n')
				if result == "*-1\r\n" {
					retries[i]++
					continue
				}
				if ok, _ := c.r.ReadString('\n'); ok != "+OK\r\n" {
					errs <- "EXEC replied " + result + ok
					return
				}
				done++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c := ts.dial(t)
	c.send(t, "GET counter\r\n")
	assert.Equal(t, strconv.Itoa(loops*increments), c.bulk(t))
	t.Logf("retries by loop: %v", retries)
}

// TestMultiInClientList checks CLIENT LIST shows a transaction: flag x,
// its commands counted, and d once a watched key changed.
func TestMultiInClientList(t *testing.T) {
	ts := startServer(t, config{loops: 2})
	c := ts.dialOnLoop(t, 0)
	id := c.clientID(t)
	c.send(t, "WATCH k\r\nMULTI\r\nPING\r\nPING\r\n")
	c.expect(t, "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n")
	admin := ts.dialOnLoop(t, 1)
	admin.send(t, "SET k v\r\nCLIENT LIST ID "+id+"\r\n")
	admin.expect(t, "+OK\r\n")
	m := infoLine.FindStringSubmatch(strings.TrimSuffix(admin.bulk(t), "\n"))
	require.NotNil(t, m)
	assert.Equal(t, "xd", m[fieldFlags])
	assert.Equal(t, "2", m[fieldMulti])
}
