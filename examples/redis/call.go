package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sluicenet/sluice"
	"github.com/sluicenet/sluice/codec"
)

// call is a client's command being run: its arguments and the reply being
// built. Each client has one, reused for every command, and the replies of
// a batch of commands accumulate in out.
type call struct {
	srv   *server
	cl    *client
	args  [][]byte // alias the connection's inbound bytes: copy what is kept
	cmd   *command // the command running, or the last one run
	now   int64    // Unix milliseconds, read once per batch
	resp3 bool     // the client asked for RESP3 with HELLO 3
	quit  bool     // close the connection once the replies are sent
	muted bool     // CLIENT REPLY silences the command's replies: those after mark go
	mark  int

	// A transaction running (EXEC): the shards it holds locked, and the
	// keys its commands gave elements to, whose blocked clients it serves
	// once it has run.
	inExec    bool
	held      uint64
	readyKeys []string
	out       []byte // the loop's reply buffer while a batch runs (loopState.replies)

	// The command last looked up, by the name the client gave it, which
	// the next command usually repeats.
	lastName [maxNameLen]byte
	lastLen  int
	lastCmd  *command
}

// begin starts a batch of commands. Its replies gather in the loop's
// buffer, which end gives back: a loop runs one batch at a time (what a
// command has for another client of its loop is posted to the loop), and
// a batch begun inside another would only start from an empty buffer.
func (c *call) begin() {
	ls := c.cl.loop
	c.out, ls.replies = ls.replies[:0], nil
	c.now = time.Now().UnixMilli()
	c.resp3 = c.cl.proto.Load() == 3
}

// end finishes a batch whose replies have been written.
func (c *call) end() {
	if cap(c.out) <= maxKeptReply {
		c.cl.loop.replies = c.out[:0]
	}
	c.out, c.args = nil, nil
	c.cl.touch(c.now, c.cmd)
}

// exec runs one command. While CLIENT REPLY silences the client, what it
// would reply is dropped, errors included.
func (c *call) exec(args [][]byte) {
	c.args = args
	if c.cl.skipOne || c.cl.replyOff {
		c.cl.skipOne = false
		c.muted, c.mark = true, len(c.out)
		c.dispatch()
		if c.muted {
			c.out, c.muted = c.out[:c.mark], false
		}
		return
	}
	c.dispatch()
}

// dispatch finds the command c.args names and runs it, queues it in the
// client's transaction, or replies why it does neither.
func (c *call) dispatch() {
	args := c.args
	cmd := c.lookup(args[0])
	if cmd == nil {
		if eqFold(args[0], "post") || eqFold(args[0], "host:") {
			// As Redis, take HTTP for an attack and hang up on it.
			c.quit = true
			return
		}
		c.reject(nil, c.unknownCommand())
		return
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.subs.lookup(args[1])
		if sub == nil {
			c.reject(nil, fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.", args[1], cmd.upper))
			return
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		c.reject(cmd, cmd.arityErr)
		return
	}
	if !c.resp3 && !cmd.pubsubOK && c.cl.inPubSub() {
		c.reject(cmd, fmt.Sprintf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", cmd.name))
		return
	}
	if c.cl.tx != nil && cmd.noMulti {
		c.reject(cmd, "ERR Command not allowed inside a transaction")
		return
	}
	if c.cl.tx != nil && cmd.queues() {
		c.queue(cmd)
		return
	}
	c.cmd = cmd
	cmd.run(c)
}

// lookup returns the command called name, as commands.lookup does,
// without lowering and hashing a name the last lookup was given.
func (c *call) lookup(name []byte) *command {
	if c.lastCmd != nil && string(name) == string(c.lastName[:c.lastLen]) {
		return c.lastCmd
	}
	cmd := commands.lookup(name)
	if cmd != nil {
		c.lastLen = copy(c.lastName[:], name)
		c.lastCmd = cmd
	}
	return cmd
}

// pushing brackets what a command writes that CLIENT REPLY does not
// silence, as in Redis: subscriptions' confirmations and messages. What
// the command replied before is dropped now, and what it pushes kept.
func (c *call) pushing() {
	if c.muted {
		c.out = c.out[:c.mark]
	}
}

func (c *call) pushed() {
	if c.muted {
		c.mark = len(c.out)
	}
}

// unknownCommand returns Redis's error for a command it does not know,
// which quotes its first arguments.
func (c *call) unknownCommand() string {
	var args []byte
	for _, a := range c.args[1:] {
		if len(args) >= 128 {
			break
		}
		args = fmt.Appendf(args, "'%.*s' ", 128-len(args), a)
	}
	return fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", c.args[0], args)
}

// protocolError answers input that is not a command the way Redis does,
// drops the rest of the input and ends the connection.
func (c *call) protocolError(conn sluice.Conn, err error) {
	c.error(err)
	conn.Discard(0)
	c.cl.req.reset()
	c.quit = true
}

// The replies. Those whose RESP2 and RESP3 forms differ choose by the
// client's protocol.

func (c *call) ok() { c.out = append(c.out, "+OK\r\n"...) }

func (c *call) simple(s string) { c.out = codec.AppendSimple(c.out, s) }

func (c *call) bulk(b []byte) { c.out = codec.AppendBulk(c.out, b) }

func (c *call) bulkString(s string) { c.out = codec.AppendBulk(c.out, s) }

func (c *call) integer(n int64) { c.out = codec.AppendInt(c.out, n) }

// boolean replies 1 or 0, as Redis does for yes-or-no answers.
func (c *call) boolean(b bool) {
	if b {
		c.out = append(c.out, ":1\r\n"...)
	} else {
		c.out = append(c.out, ":0\r\n"...)
	}
}

func (c *call) array(n int) { c.out = codec.AppendArray(c.out, n) }

// null replies a missing value: the null bulk string in RESP2.
func (c *call) null() {
	if c.resp3 {
		c.out = codec.AppendNull(c.out)
	} else {
		c.out = codec.AppendNullBulk(c.out)
	}
}

// nullArray replies a missing list of values: the null array in RESP2.
func (c *call) nullArray() {
	if c.resp3 {
		c.out = codec.AppendNull(c.out)
	} else {
		c.out = codec.AppendNullArray(c.out)
	}
}

// mapOf starts a map of n pairs: a flat array of 2n elements in RESP2.
func (c *call) mapOf(n int) {
	if c.resp3 {
		c.out = codec.AppendMap(c.out, n)
	} else {
		c.out = codec.AppendArray(c.out, 2*n)
	}
}

// setOf starts a set of n elements: an array in RESP2.
func (c *call) setOf(n int) {
	if c.resp3 {
		c.out = codec.AppendSet(c.out, n)
	} else {
		c.out = codec.AppendArray(c.out, n)
	}
}

// double replies a floating-point number as Redis 7.0 does: in 17
// significant digits, as C's "%.17g" writes them ("0.10000000000000001"),
// in a bulk string in RESP2 and a double in RESP3.
func (c *call) double(f float64) {
	var buf [32]byte
	d := formatDouble(buf[:0], f)
	if c.resp3 {
		c.out = append(c.out, ',')
		c.out = append(c.out, d...)
		c.out = append(c.out, "\r\n"...)
		return
	}
	c.out = codec.AppendBulk(c.out, d)
}

// formatDouble appends f as Redis writes scores: "inf", "-inf", or "%.17g".
func formatDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// verbatim replies text that is for people to read, as INFO and CLIENT
// LIST are: a verbatim string of format "txt" in RESP3, a bulk string in
// RESP2.
func (c *call) verbatim(b []byte) {
	if !c.resp3 {
		c.bulk(b)
		return
	}
	c.out = append(c.out, '=')
	c.out = strconv.AppendInt(c.out, int64(len(b)+4), 10)
	c.out = append(c.out, "\r\ntxt:"...)
	c.out = append(c.out, b...)
	c.out = append(c.out, "\r\n"...)
}

// error replies err, whose text is a Redis error such as "ERR syntax error".
func (c *call) error(err error) { c.errorText(err.Error()) }

func (c *call) errorText(msg string) { c.out = codec.AppendError(c.out, msg) }
