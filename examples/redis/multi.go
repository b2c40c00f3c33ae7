package main

import (
	"errors"
	"strings"
)

var (
	errNestedMulti   = errors.New("ERR MULTI calls can not be nested")
	errExecNoMulti   = errors.New("ERR EXEC without MULTI")
	errDiscardNoMult = errors.New("ERR DISCARD without MULTI")
	errWatchInMulti  = errors.New("ERR WATCH inside MULTI is not allowed")
	errExecAbort     = errors.New("EXECABORT Transaction discarded because of previous errors.")
)

// transaction is a client's MULTI: the commands it queued, each with a
// copy of its arguments, and whether one was refused, which dooms it.
type transaction struct {
	cmds   []queuedCommand
	failed bool
}

type queuedCommand struct {
	cmd  *command
	args [][]byte
}

// watched is a key a client watches, and when it was to expire as the
// client began watching it, if it was: a key that expires before EXEC
// fails the transaction, as one changed does.
type watched struct {
	key    string
	expire int64
}

// queues reports whether cmd, sent inside MULTI, is queued rather than
// run: all but those that end or shape the transaction.
func (cmd *command) queues() bool {
	switch cmd.name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return false
	}
	return true
}

// queue queues the command in c.args in the client's transaction.
func (c *call) queue(cmd *command) {
	n := 0
	for _, a := range c.args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	args := make([][]byte, len(c.args))
	for i, a := range c.args {
		buf = append(buf, a...)
		args[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	tx := c.cl.tx
	tx.cmds = append(tx.cmds, queuedCommand{cmd, args})
	c.cl.queued.Store(int32(len(tx.cmds)))
	c.simple("QUEUED")
}

// reject replies msg, an error, for a command refused before it ran; in
// a transaction the refusal dooms it. A refused EXEC discards the
// transaction, if there is one, and says why, as in Redis.
func (c *call) reject(cmd *command, msg string) {
	if cmd != nil && cmd.name == "exec" {
		c.cl.discard()
		c.errorText("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR "))
		return
	}
	if tx := c.cl.tx; tx != nil {
		tx.failed = true
	}
	c.errorText(msg)
}

// multi is MULTI.
func multi(c *call) {
	if c.cl.tx != nil {
		c.error(errNestedMulti)
		return
	}
	c.cl.tx = &transaction{}
	c.cl.queued.Store(0)
	c.cl.setState(inMultiState, true)
	c.ok()
}

// discard is DISCARD.
func discard(c *call) {
	if c.cl.tx == nil {
		c.error(errDiscardNoMult)
		return
	}
	c.cl.discard()
	c.ok()
}

// discard ends the client's transaction unrun, and its watches.
func (cl *client) discard() {
	cl.tx = nil
	cl.setState(inMultiState, false)
	cl.unwatch()
}

// execCmd is EXEC: the queued commands, run one after another with nothing
// of another client's in between, or nothing if a key the client watches
// changed. It locks the shards of every key the commands and the watches
// name, or all of them when a command's keys cannot be known before it
// runs, and holds them while the commands run: other loops wait on those
// shards for the transaction's time, and on no others.
func execCmd(c *call) {
	cl := c.cl
	tx := cl.tx
	if tx == nil {
		c.error(errExecNoMulti)
		return
	}
	if tx.failed {
		cl.discard()
		c.error(errExecAbort)
		return
	}
	db := &c.srv.db
	var m uint64
	for _, q := range tx.cmds {
		keys, all := q.cmd.keysOf(q.args)
		if all {
			m = ^uint64(0)
			break
		}
		for _, k := range keys {
			i, _ := db.locate(k)
			m |= 1 << i
		}
	}
	for _, w := range cl.watching {
		i, _ := db.locate([]byte(w.key))
		m |= 1 << i
	}
	db.lockMask(m, 0)
	if cl.watchFailed(c.now) {
		db.unlockMask(m, 0)
		cl.discard()
		c.nullArray()
		return
	}
	c.held, c.inExec = m, true
	c.array(len(tx.cmds))
	for _, q := range tx.cmds {
		c.args, c.cmd = q.args, q.cmd
		q.cmd.run(c)
	}
	for _, key := range c.readyKeys {
		sh, _ := db.shardOf([]byte(key))
		c.serve(sh, key, m)
	}
	c.held, c.inExec, c.readyKeys = 0, false, c.readyKeys[:0]
	db.unlockMask(m, 0)
	cl.tx = nil
	cl.setState(inMultiState, false)
	cl.unwatch()
}

// watchFailed reports whether a key the client watches changed, or
// expired, since it began watching it; the shards of the keys are locked.
func (cl *client) watchFailed(now int64) bool {
	if cl.dirty.Load() {
		return true
	}
	for _, w := range cl.watching {
		if w.expire != 0 && w.expire <= now {
			return true
		}
	}
	return false
}

// watch is WATCH key [key ...].
func watch(c *call) {
	cl := c.cl
	if cl.tx != nil {
		c.error(errWatchInMulti)
		return
	}
	for _, k := range c.args[1:] {
		key := string(k)
		if cl.isWatching(key) {
			continue
		}
		sh, _ := c.lock(k)
		if sh.watchers == nil {
			sh.watchers = make(map[string][]*client)
		}
		sh.watchers[key] = append(sh.watchers[key], cl)
		w := watched{key: key}
		if e := sh.find(k, c.now); e != nil {
			w.expire = e.expire
		}
		c.unlock(sh)
		cl.watching = append(cl.watching, w)
	}
	c.ok()
}

func (cl *client) isWatching(key string) bool {
	for _, w := range cl.watching {
		if w.key == key {
			return true
		}
	}
	return false
}

// unwatchCmd is UNWATCH.
func unwatchCmd(c *call) {
	c.cl.unwatch()
	c.ok()
}

// unwatch forgets the keys cl watches.
func (cl *client) unwatch() {
	db := &cl.call.srv.db
	for _, w := range cl.watching {
		sh, _ := db.shardOf([]byte(w.key))
		sh.lock()
		ws := sh.watchers[w.key]
		for i, other := range ws {
			if other == cl {
				ws[i] = ws[len(ws)-1]
				ws[len(ws)-1] = nil
				ws = ws[:len(ws)-1]
				break
			}
		}
		if len(ws) == 0 {
			delete(sh.watchers, w.key)
		} else {
			sh.watchers[w.key] = ws
		}
		sh.unlock()
	}
	cl.watching = cl.watching[:0]
	cl.dirty.Store(false)
}
