package main

import (
	"errors"
	"fmt"
)

// redisVersion is the Redis release whose behaviour the server follows,
// which it reports to clients that gate features on the version: every
// command it serves is in Redis 7.0, and it writes scores as 7.0 does.
const redisVersion = "7.0.15"

var (
	errNoProto      = errors.New("NOPROTO unsupported protocol version")
	errProtoVersion = errors.New("ERR Protocol version is not an integer or out of range")
	//lint:ignore ST1005 Redis's wording, full stop included
	errWrongPass = errors.New("WRONGPASS invalid username-password pair or user is disabled.")
	errDBIndex   = errors.New("ERR DB index is out of range")
)

// ping is PING [message]. A RESP2 client with subscriptions, which
// cannot tell a reply from a message, gets it as a message: ["pong",
// message].
func ping(c *call) {
	if len(c.args) > 2 {
		c.errorText(c.cmd.arityErr)
		return
	}
	if !c.resp3 && c.cl.inPubSub() {
		c.array(2)
		c.bulkString("pong")
		if len(c.args) == 2 {
			c.bulk(c.args[1])
		} else {
			c.bulkString("")
		}
		return
	}
	if len(c.args) == 2 {
		c.bulk(c.args[1])
	} else {
		c.simple("PONG")
	}
}

// reset is RESET: the connection as it was when it opened, but for its
// ID and address. Its subscriptions end, it speaks RESP2, it has no name,
// and its replies are on.
func reset(c *call) {
	cl := c.cl
	cl.discard()
	for kind := range numSubKinds {
		cl.unsubscribeAll(kind, nil)
	}
	cl.setState(inPubSubState, false)
	cl.proto.Store(2)
	c.resp3 = false
	cl.mu.Lock()
	cl.name = ""
	cl.mu.Unlock()
	cl.replyOff, cl.skipOne = false, false
	c.simple("RESET")
}

func echo(c *call) { c.bulk(c.args[1]) }

func quit(c *call) {
	c.ok()
	c.quit = true
}

// selectDB is SELECT index. There is one database, 0.
func selectDB(c *call) {
	n, err := parseInt(c.args[1])
	switch {
	case err != nil:
		c.error(err)
	case n != 0:
		c.error(errDBIndex)
	default:
		c.ok()
	}
}

// hello is HELLO [protover [AUTH username password] [SETNAME name]]: it
// switches the client to RESP2 or RESP3 and describes the server. There
// are no passwords, so AUTH accepts the default user with any password,
// as Redis does when the default user has none.
func hello(c *call) {
	proto := c.cl.proto.Load()
	args := c.args[1:]
	if len(args) > 0 {
		v, err := parseInt(args[0])
		if err != nil {
			c.error(errProtoVersion)
			return
		}
		if v != 2 && v != 3 {
			c.error(errNoProto)
			return
		}
		proto, args = int32(v), args[1:]
	}
	var name []byte
	for i := 0; i < len(args); i++ {
		switch {
		case eqFold(args[i], "auth") && i+2 < len(args):
			if string(args[i+1]) != "default" {
				c.error(errWrongPass)
				return
			}
			i += 2
		case eqFold(args[i], "setname") && i+1 < len(args):
			name = args[i+1]
			i++
		default:
			c.errorText(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", args[i]))
			return
		}
	}
	if name != nil {
		if err := c.cl.setName(name); err != nil {
			c.error(err)
			return
		}
	}
	c.cl.proto.Store(proto)
	c.resp3 = proto == 3
	c.mapOf(7)
	c.bulkString("server")
	c.bulkString("redis")
	c.bulkString("version")
	c.bulkString(redisVersion)
	c.bulkString("proto")
	c.integer(int64(proto))
	c.bulkString("id")
	c.integer(int64(c.cl.id))
	c.bulkString("mode")
	c.bulkString("standalone")
	c.bulkString("role")
	c.bulkString("master")
	c.bulkString("modules")
	c.array(0)
}
