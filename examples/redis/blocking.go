package main

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/wheel"
)

var (
	errTimeout         = errors.New("ERR timeout is not a float or out of range")
	errTimeoutNegative = errors.New("ERR timeout is negative")
	errNumkeys         = errors.New("ERR numkeys should be greater than 0")
	errCountPositive   = errors.New("ERR count should be greater than 0")
	errUnblocked       = errors.New("UNBLOCKED client unblocked via CLIENT UNBLOCK")
)

// replyForm is how a pop replies what it took.
type replyForm uint8

const (
	formKeyValue       replyForm = iota // BLPOP: [key, element]
	formValue                           // LMOVE, BLMOVE: element
	formKeyMemberScore                  // BZPOPMIN: [key, member, score]
	formKeyValues                       // LMPOP: [key, [element ...]]
	formKeyPairs                        // ZMPOP: [key, [[member, score] ...]]
)

// popOp is what a pop from a list or a sorted set does, blocking or not:
// which end it takes from, how many, where it moves them, and how it
// replies.
type popOp struct {
	zset    bool
	left    bool // from the head of a list, or the lowest scores of a sorted set
	count   int
	form    replyForm
	dst     []byte // LMOVE's destination
	dstLeft bool
}

// popped is what a pop took: from which key, the elements of a list or
// the members and scores of a sorted set.
type popped struct {
	key    string
	values []string
	pairs  []zpair
}

type zpair struct {
	member string
	score  float64
}

// wants reports whether the pop takes from e's value, and whether e is of
// another type, which it cannot take from.
func (op *popOp) wants(e *entry) (ok, wrongType bool) {
	if op.zset {
		z, isZset := e.obj.(*zset)
		return isZset && z.len() > 0, !isZset
	}
	l, isList := e.obj.(*list)
	return isList && l.len() > 0, !isList
}

// take pops from e's value, which it wants, into got.
func (op *popOp) take(e *entry, got *popped) {
	got.key = e.key
	if op.zset {
		z := e.obj.(*zset)
		for range min(op.count, z.len()) {
			x := z.order.first()
			if !op.left {
				x = z.order.tail
			}
			got.pairs = append(got.pairs, zpair{x.member, x.score})
			z.remove(x.member)
		}
		return
	}
	l := e.obj.(*list)
	for range min(op.count, l.len()) {
		if op.left {
			got.values = append(got.values, l.popFront())
		} else {
			got.values = append(got.values, l.popBack())
		}
	}
}

// putBack returns what a pop took to the key it took it from, as it was,
// for a client that closed before it was told. (A move has pushed it to
// its destination already: it stays there.)
func (c *call) putBack(op *popOp, got *popped) {
	key := []byte(got.key)
	sh, h := c.lock(key)
	defer c.unlock(sh)
	e := sh.find(key, c.now)
	if e == nil {
		e = sh.add(key, h)
		if op.zset {
			e.obj = newZset()
		} else {
			e.obj = newList()
		}
	}
	switch v := e.obj.(type) {
	case *zset:
		for _, p := range got.pairs {
			if _, ok := v.scores[p.member]; !ok {
				v.set([]byte(p.member), p.score, c.limits())
			}
		}
	case *list:
		for i := len(got.values) - 1; i >= 0; i-- {
			if op.left {
				v.pushFront(got.values[i])
			} else {
				v.pushBack(got.values[i])
			}
		}
	}
	sh.touch(got.key)
	c.ready(sh, key)
}

// replyPopped replies what a pop took, in the op's form.
func (c *call) replyPopped(op *popOp, got *popped) {
	switch op.form {
	case formValue:
		c.bulkString(got.values[0])
	case formKeyValue:
		c.array(2)
		c.bulkString(got.key)
		c.bulkString(got.values[0])
	case formKeyMemberScore:
		c.array(3)
		c.bulkString(got.key)
		c.bulkString(got.pairs[0].member)
		c.double(got.pairs[0].score)
	case formKeyValues:
		c.array(2)
		c.bulkString(got.key)
		c.array(len(got.values))
		for _, v := range got.values {
			c.bulkString(v)
		}
	case formKeyPairs:
		c.array(2)
		c.bulkString(got.key)
		c.array(len(got.pairs))
		for _, p := range got.pairs {
			c.array(2)
			c.bulkString(p.member)
			c.double(p.score)
		}
	}
}

// tryPop pops from the first of keys that has something for op, with
// their shards and the destination's locked, and replies. It reports
// false, having replied nothing, when none had.
func (c *call) tryPop(op *popOp, keys [][]byte) bool {
	for _, k := range keys {
		sh, _ := c.srv.db.shardOf(k)
		e := sh.find(k, c.now)
		if e == nil {
			continue
		}
		ok, wrongType := op.wants(e)
		if wrongType {
			c.error(errWrongType)
			return true
		}
		if !ok {
			continue
		}
		if op.dst != nil && !c.holdsList(op.dst) {
			c.error(errWrongType)
			return true
		}
		var got popped
		op.take(e, &got)
		sh.touch(e.key)
		sh.dropEmpty(e)
		if op.dst != nil {
			c.pushTo(op.dst, op.dstLeft, got.values[0])
		}
		c.replyPopped(op, &got)
		return true
	}
	return false
}

// pushTo pushes v onto the list at key, whose shard is locked, creating
// it, and serves the clients blocked on it. The key must not hold another
// type.
func (c *call) pushTo(key []byte, left bool, v string) {
	c.ready(c.pushList(key, left, v), key)
}

// pushList pushes v onto the list at key, whose shard is locked, creating it,
// and returns the shard. The key must not hold another type.
func (c *call) pushList(key []byte, left bool, v string) *shard {
	sh, h := c.srv.db.shardOf(key)
	e := sh.find(key, c.now)
	if e == nil {
		e = sh.add(key, h)
		e.obj = newList()
	}
	if left {
		e.obj.(*list).pushFront(v)
	} else {
		e.obj.(*list).pushBack(v)
	}
	sh.touch(e.key)
	return sh
}

// holdsList reports whether key, whose shard is locked, can take a push:
// it is absent or holds a list.
func (c *call) holdsList(key []byte) bool {
	sh, _ := c.srv.db.shardOf(key)
	d := sh.find(key, c.now)
	if d == nil {
		return true
	}
	_, isList := d.obj.(*list)
	return isList
}

// lockPop locks the shards of a pop's keys and destination, and returns
// them for unlockKeys.
func (c *call) lockPop(op *popOp, keys [][]byte) uint64 {
	m := c.srv.db.mask(keys, 1)
	if op.dst != nil {
		i, _ := c.srv.db.locate(op.dst)
		m |= 1 << i
	}
	c.srv.db.lockMask(m, c.held)
	return m
}

// pop runs a pop that does not block: LMOVE, RPOPLPUSH, LMPOP, ZMPOP.
// Finding nothing, it replies a null, as the form says.
func (c *call) pop(op popOp, keys [][]byte) {
	m := c.lockPop(&op, keys)
	defer c.unlockKeys(m)
	if c.tryPop(&op, keys) {
		return
	}
	if op.form == formValue {
		c.null()
	} else {
		c.nullArray()
	}
}

// The states of a waiter. Whoever moves it out of waiting, with a
// compare-and-swap, is the one who answers it.
const (
	waiting int32 = iota
	served        // a push, on any loop, popped for it
	timedOut
	unblockedNull  // CLIENT UNBLOCK, or UNBLOCK TIMEOUT
	unblockedError // CLIENT UNBLOCK ERROR
	gone           // its connection closed
)

// waiter is a client blocked on keys until one of them has what its
// command pops, it times out, or CLIENT UNBLOCK ends it. It waits in the
// queue of each of its keys, in the shard of the key: a command that
// pushes to a key serves the waiters there in the order they came, and
// hands what it popped for each to the waiter's loop, which replies.
type waiter struct {
	cl    *client
	op    popOp
	keys  []string
	state atomic.Int32
	got   popped // what a push popped for it, once served
	// wrongType says it was served a WRONGTYPE error: its move's
	// destination held another type when its source had an element.
	wrongType bool
	timer     wheel.Timer
	handle    uint64 // its timer's, in its loop's table
	answerFn  func() // answer, for Loop.Execute
}

// parseTimeout parses a blocking command's timeout, seconds with a
// fraction, as Redis does, into milliseconds: 0 waits for ever.
func parseTimeout(b []byte) (int64, error) {
	// Read as C's strtold reads it: "0x0.8" and "INFINITY" too.
	s, _, ok := cFloat(b)
	if !ok {
		return 0, errTimeout
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !(errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0)) || math.IsNaN(f) {
		return 0, errTimeout
	}
	ms := f * 1000
	if ms < 0 || ms >= math.MaxInt64 {
		// Redis turns a timeout too large for its clock into a negative
		// one, and refuses it so.
		return 0, errTimeoutNegative
	}
	return int64(ms), nil
}

// block runs a blocking pop: at once if a key has something for it, as
// the command without the B would; else, unless the client runs it in a
// transaction, it blocks the client on the keys for timeout milliseconds
// (0: for ever). The client's loop reads none of its commands meanwhile.
func (c *call) block(op popOp, keys [][]byte, timeout int64) {
	m := c.lockPop(&op, keys)
	if c.tryPop(&op, keys) {
		c.unlockKeys(m)
		return
	}
	if c.inExec {
		// As in Redis, a transaction does not wait, and a move that does
		// not wait replies as LMOVE would.
		c.unlockKeys(m)
		if op.form == formValue {
			c.null()
		} else {
			c.nullArray()
		}
		return
	}
	w := &waiter{cl: c.cl, op: op}
	w.answerFn = w.answer
	if op.dst != nil {
		w.op.dst = append([]byte(nil), op.dst...)
	}
	for _, k := range keys {
		key := string(k)
		if slices.Contains(w.keys, key) {
			continue // a key named twice waits once
		}
		sh, _ := c.srv.db.shardOf(k)
		if sh.waiters == nil {
			sh.waiters = make(map[string][]*waiter)
		}
		sh.waiters[key] = append(sh.waiters[key], w)
		w.keys = append(w.keys, key)
	}
	c.unlockKeys(m)
	c.cl.block = w
	c.cl.blockRef.Store(w)
	c.cl.setState(blockedState, true)
	c.srv.blocked.Add(1)
	if timeout > 0 {
		c.cl.loop.startTimer(w, timeout)
	}
}

// ready serves the clients blocked on key, whose shard is locked, now
// that a command has given it elements; in a transaction, once it has
// run, as Redis does.
func (c *call) ready(sh *shard, key []byte) {
	if _, ok := sh.waiters[string(key)]; !ok {
		return
	}
	if c.inExec {
		c.readyKeys = append(c.readyKeys, string(key))
		return
	}
	c.serve(sh, string(key), c.held)
}

// serve pops for the clients waiting on key, in the order they came,
// while it has something for them, and hands each what it took on its
// loop. Key's shard is locked, and so are those in held.
//
// A move (BLMOVE, BRPOPLPUSH) pushes what it took to its destination here,
// with both shards locked, so that no client, on any loop, sees the
// element in neither list. The destination's shard, unless held, is taken
// with TryLock, since waiting for it here could deadlock against a command
// that holds it and waits for this one; when another holds it, the
// waiter's loop serves the key again with both locked in order (retry),
// and the waiters after it wait for that. The clients blocked on a
// destination that got elements are served next, with its shard still
// locked.
func (c *call) serve(sh *shard, key string, held uint64) {
	held |= 1 << sh.idx
	var locked uint64 // the destinations' shards this call locked
	var moved []string
	q := sh.waiters[key]
	e := sh.find([]byte(key), c.now)
	kept := q[:0]
	for i, w := range q {
		if w.state.Load() != waiting {
			continue // answered otherwise, and on its way out
		}
		if e == nil {
			kept = append(kept, w)
			continue
		}
		if ok, _ := w.op.wants(e); !ok {
			kept = append(kept, w)
			continue
		}
		if w.op.dst != nil {
			d, _ := c.srv.db.locate(w.op.dst)
			if (held|locked)&(1<<d) == 0 {
				if !c.srv.db.shards[d].tryLock() {
					w.retry(key)
					kept = append(kept, q[i:]...)
					break
				}
				locked |= 1 << d
			}
		}
		if !w.state.CompareAndSwap(waiting, served) {
			kept = append(kept, w)
			continue
		}
		switch {
		case w.op.dst == nil:
			w.op.take(e, &w.got)
			sh.touch(key)
		case !c.holdsList(w.op.dst):
			// As Redis 7.0: the element stays, and the client is told.
			w.wrongType = true
		default:
			w.op.take(e, &w.got)
			sh.touch(key)
			dsh := c.pushList(w.op.dst, w.op.dstLeft, w.got.values[0])
			dst := string(w.op.dst)
			if dst != key && dsh.waiters[dst] != nil && !slices.Contains(moved, dst) {
				moved = append(moved, dst)
			}
		}
		if e.obj.(collection).len() == 0 {
			sh.remove(e)
			e = nil
		}
		if w.cl.loop.loop.Execute(w.answerFn) != nil {
			// The engine is stopping; the client goes with it.
			continue
		}
	}
	clear(q[len(kept):])
	if len(kept) == 0 {
		delete(sh.waiters, key)
	} else {
		sh.waiters[key] = kept
	}
	for _, dst := range moved {
		dsh, _ := c.srv.db.shardOf([]byte(dst))
		c.serve(dsh, dst, held|locked)
	}
	c.srv.db.unlockMask(locked, 0)
}

// retry has w's loop serve key again with key's shard and the shard of
// w's destination locked, in order, for a serve that could not take the
// destination's.
func (w *waiter) retry(key string) {
	cl := w.cl
	_ = cl.loop.loop.Execute(func() {
		c := &cl.call
		c.now = time.Now().UnixMilli()
		db := &c.srv.db
		m := db.mask([][]byte{[]byte(key), w.op.dst}, 1)
		db.lockMask(m, 0)
		sh, _ := db.shardOf([]byte(key))
		c.serve(sh, key, m)
		db.unlockMask(m, 0)
	})
}

// answer replies to a served waiter, on its client's loop, and lets the
// client go on. A move was done when it was served.
func (w *waiter) answer() {
	cl := w.cl
	if cl.block != w {
		return // closed, and what it took put back
	}
	c := &cl.call
	c.begin()
	if w.wrongType {
		c.error(errWrongType)
	} else {
		c.replyPopped(&w.op, &w.got)
	}
	c.srv.reply(cl, c.out)
	c.end()
	cl.unblock(w)
}

// unblock lets cl, blocked by w, go on, on its loop: w leaves the queues
// and the timers, and the commands cl sent meanwhile run.
func (cl *client) unblock(w *waiter) {
	c := &cl.call
	for _, key := range w.keys {
		sh, _ := c.lock([]byte(key))
		q := sh.waiters[key]
		if i := slices.Index(q, w); i >= 0 {
			q = slices.Delete(q, i, i+1)
		}
		if len(q) == 0 {
			delete(sh.waiters, key)
		} else {
			sh.waiters[key] = q
		}
		c.unlock(sh)
	}
	cl.loop.stopTimer(w)
	cl.block = nil
	cl.blockRef.Store(nil)
	cl.setState(blockedState, false)
	c.srv.blocked.Add(-1)
	if !cl.closed {
		cl.conn.Wake(nil)
	}
}

// timeout answers a waiter whose time is up, on its loop.
func (w *waiter) timeout() {
	if w.state.CompareAndSwap(waiting, timedOut) {
		w.cl.answerUnblocked(w)
	}
}

// answerUnblocked replies to a waiter that timed out or that CLIENT
// UNBLOCK ended, on its client's loop.
func (cl *client) answerUnblocked(w *waiter) {
	if cl.block != w {
		return
	}
	c := &cl.call
	c.begin()
	if w.state.Load() == unblockedError {
		c.error(errUnblocked)
	} else {
		c.nullArray()
	}
	c.srv.reply(cl, c.out)
	c.end()
	cl.unblock(w)
}

// closeBlocked ends cl's wait as its connection closes, putting back what
// a push took for it and never told it.
func (cl *client) closeBlocked() {
	w := cl.block
	if w == nil {
		return
	}
	if !w.state.CompareAndSwap(waiting, gone) && w.state.Load() == served && w.op.dst == nil {
		c := &cl.call
		c.now = time.Now().UnixMilli()
		c.putBack(&w.op, &w.got)
	}
	cl.unblock(w)
}

// stopWaiting ends the wait of a client being killed, from any loop, so
// that no push pops for it from now on, as none does for a client Redis
// freed, though its loop takes it out of the queues only as it closes.
func (cl *client) stopWaiting() {
	if w := cl.blockRef.Load(); w != nil {
		w.state.CompareAndSwap(waiting, gone)
	}
}

// clientUnblock is CLIENT UNBLOCK client-id [TIMEOUT|ERROR]: it ends the
// wait of a client blocked on any loop, as if it had timed out, or with
// an error, and replies 1, or 0 when that client was not blocked.
func clientUnblock(c *call) {
	id, err := parseInt(c.args[2])
	if err != nil {
		c.error(err)
		return
	}
	how := unblockedNull
	if len(c.args) == 4 {
		switch {
		case eqFold(c.args[3], "timeout"):
		case eqFold(c.args[3], "error"):
			how = unblockedError
		default:
			c.errorText("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	cl := c.srv.clients.get(uint64(id))
	if cl == nil {
		c.integer(0)
		return
	}
	w := cl.blockRef.Load()
	if w == nil || !w.state.CompareAndSwap(waiting, how) {
		c.integer(0)
		return
	}
	if cl.loop.loop.Execute(func() { cl.answerUnblocked(w) }) != nil {
		c.integer(0)
		return
	}
	c.integer(1)
}

// The blocking commands. Each parses its arguments as Redis does, in the
// order Redis checks them, and blocks, or pops at once.

func blpop(c *call) { c.blockingPop(popOp{left: true, count: 1, form: formKeyValue}) }
func brpop(c *call) { c.blockingPop(popOp{count: 1, form: formKeyValue}) }
func bzpopmin(c *call) {
	c.blockingPop(popOp{zset: true, left: true, count: 1, form: formKeyMemberScore})
}
func bzpopmax(c *call) { c.blockingPop(popOp{zset: true, count: 1, form: formKeyMemberScore}) }

// blockingPop is BLPOP, BRPOP, BZPOPMIN and BZPOPMAX key [key ...] timeout.
func (c *call) blockingPop(op popOp) {
	timeout, err := parseTimeout(c.args[len(c.args)-1])
	if err != nil {
		c.error(err)
		return
	}
	c.block(op, c.args[1:len(c.args)-1], timeout)
}

// parseEnd parses LEFT or RIGHT.
func parseEnd(b []byte) (left bool, ok bool) {
	switch {
	case eqFold(b, "left"):
		return true, true
	case eqFold(b, "right"):
		return false, true
	}
	return false, false
}

// lmove is LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
func lmove(c *call) {
	op, ok := moveOp(c.args[3], c.args[4], c.args[2])
	if !ok {
		c.error(errSyntax)
		return
	}
	c.pop(op, c.args[1:2])
}

// rpoplpush is RPOPLPUSH source destination.
func rpoplpush(c *call) {
	c.pop(popOp{count: 1, form: formValue, dst: c.args[2], dstLeft: true}, c.args[1:2])
}

// blmove is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
func blmove(c *call) {
	op, ok := moveOp(c.args[3], c.args[4], c.args[2])
	if !ok {
		c.error(errSyntax)
		return
	}
	timeout, err := parseTimeout(c.args[5])
	if err != nil {
		c.error(err)
		return
	}
	c.block(op, c.args[1:2], timeout)
}

// brpoplpush is BRPOPLPUSH source destination timeout.
func brpoplpush(c *call) {
	timeout, err := parseTimeout(c.args[3])
	if err != nil {
		c.error(err)
		return
	}
	c.block(popOp{count: 1, form: formValue, dst: c.args[2], dstLeft: true}, c.args[1:2], timeout)
}

func moveOp(from, to, dst []byte) (popOp, bool) {
	left, ok1 := parseEnd(from)
	dstLeft, ok2 := parseEnd(to)
	return popOp{left: left, count: 1, form: formValue, dst: dst, dstLeft: dstLeft}, ok1 && ok2
}

// parseMpop parses what LMPOP, ZMPOP and their blocking forms take from
// numkeys on: numkeys key [key ...] LEFT|RIGHT or MIN|MAX [COUNT count].
func parseMpop(args [][]byte, zset bool) (popOp, [][]byte, error) {
	op := popOp{zset: zset, count: 1, form: formKeyValues}
	if zset {
		op.form = formKeyPairs
	}
	n, err := parseInt(args[0])
	if err != nil || n <= 0 {
		return op, nil, errNumkeys
	}
	if n > int64(len(args)-2) {
		return op, nil, errSyntax
	}
	keys, rest := args[1:1+n], args[1+n:]
	switch where := rest[0]; {
	case !zset && eqFold(where, "left"), zset && eqFold(where, "min"):
		op.left = true
	case !zset && eqFold(where, "right"), zset && eqFold(where, "max"):
	default:
		return op, nil, errSyntax
	}
	rest = rest[1:]
	if len(rest) > 0 {
		if len(rest) != 2 || !eqFold(rest[0], "count") {
			return op, nil, errSyntax
		}
		count, err := parseInt(rest[1])
		if err != nil || count <= 0 {
			return op, nil, errCountPositive
		}
		op.count = int(min(count, math.MaxInt32))
	}
	return op, keys, nil
}

// lmpop is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count], and
// zmpop ZMPOP, with MIN|MAX.
func lmpop(c *call) { c.mpop(false) }
func zmpop(c *call) { c.mpop(true) }

func (c *call) mpop(zset bool) {
	op, keys, err := parseMpop(c.args[1:], zset)
	if err != nil {
		c.error(err)
		return
	}
	c.pop(op, keys)
}

// blmpop is BLMPOP timeout numkeys ..., and bzmpop BZMPOP.
func blmpop(c *call) { c.blockingMpop(false) }
func bzmpop(c *call) { c.blockingMpop(true) }

func (c *call) blockingMpop(zset bool) {
	timeout, err := parseTimeout(c.args[1])
	if err != nil {
		c.error(err)
		return
	}
	op, keys, err := parseMpop(c.args[2:], zset)
	if err != nil {
		c.error(err)
		return
	}
	c.block(op, keys, timeout)
}
