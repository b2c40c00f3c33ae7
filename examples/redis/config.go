package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// param is a configuration parameter CONFIG GET reports and CONFIG SET
// may change. set validates value and returns what applies it, so that
// CONFIG SET applies all it was given or none.
type param struct {
	name string
	get  func(s *server) string
	set  func(s *server, value string) (apply func(), err error)
}

// errImmutable refuses to change what is fixed when the server starts.
var errImmutable = errors.New("can't set immutable config")

// onlyValue returns a set that accepts only the value the server has: a
// parameter of Redis's that clients ask about and this server does not
// vary, such as save.
func onlyValue(value, why string) func(*server, string) (func(), error) {
	return func(_ *server, v string) (func(), error) {
		if v != value {
			return nil, errors.New(why)
		}
		return func() {}, nil
	}
}

// configParams are the parameters, by name.
var configParams = []param{
	{name: "appendonly", get: func(*server) string { return "no" }, set: func(_ *server, v string) (func(), error) {
		switch strings.ToLower(v) {
		case "no":
			return func() {}, nil
		case "yes":
			return nil, errors.New("this server keeps nothing on disk")
		}
		return nil, errors.New("argument must be 'yes' or 'no'")
	}},
	{name: "client-output-buffer-limit", get: func(s *server) string { return s.outputLimit().String() }, set: setOutputLimit},
	{name: "client-query-buffer-limit", get: func(s *server) string { return strconv.Itoa(s.cfg.inboundLimit()) },
		set: func(*server, string) (func(), error) { return nil, errImmutable }},
	{name: "databases", get: func(*server) string { return "1" },
		set: func(*server, string) (func(), error) { return nil, errImmutable }},
	limit("hash-max-listpack-entries", func(s *server) *atomic.Int64 { return &s.limits.hashEntries }, false),
	limit("hash-max-listpack-value", func(s *server) *atomic.Int64 { return &s.limits.hashValue }, true),
	limit("hash-max-ziplist-entries", func(s *server) *atomic.Int64 { return &s.limits.hashEntries }, false),
	limit("hash-max-ziplist-value", func(s *server) *atomic.Int64 { return &s.limits.hashValue }, true),
	{name: "hz", get: func(s *server) string { return strconv.FormatInt(s.hz.Load(), 10) }, set: func(s *server, v string) (func(), error) {
		n, err := configInt(v, 0, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		return func() { s.hz.Store(min(max(n, 1), 500)) }, nil // as Redis keeps it
	}},
	{name: "maxclients", get: func(s *server) string { return strconv.Itoa(s.cfg.maxClients) },
		set: func(s *server, v string) (func(), error) {
			if v == strconv.Itoa(s.cfg.maxClients) {
				return func() {}, nil
			}
			return nil, errors.New("the engine's table of connections is sized as the server starts (-maxclients)")
		}},
	{name: "maxmemory", get: func(*server) string { return "0" }, set: func(_ *server, v string) (func(), error) {
		if n, err := parseMemory(v); err != nil || n != 0 {
			return nil, errors.New("this server evicts nothing: maxmemory is 0")
		}
		return func() {}, nil
	}},
	{name: "maxmemory-policy", get: func(*server) string { return "noeviction" },
		set: onlyValue("noeviction", "this server evicts nothing: the policy is noeviction")},
	{name: "proto-max-bulk-len", get: func(s *server) string { return strconv.Itoa(s.cfg.requestLimit()) },
		set: func(*server, string) (func(), error) { return nil, errImmutable }},
	{name: "save", get: func(*server) string { return "" }, set: onlyValue("", "this server keeps nothing on disk")},
	limit("set-max-intset-entries", func(s *server) *atomic.Int64 { return &s.limits.intsetEntries }, false),
	{name: "timeout", get: func(s *server) string { return strconv.FormatInt(s.idleTimeout.Load()/int64(time.Second), 10) },
		set: func(s *server, v string) (func(), error) {
			n, err := configInt(v, 0, math.MaxInt32)
			if err != nil {
				return nil, err
			}
			return func() { s.setIdleTimeout(time.Duration(n) * time.Second) }, nil
		}},
	limit("zset-max-listpack-entries", func(s *server) *atomic.Int64 { return &s.limits.zsetEntries }, false),
	limit("zset-max-listpack-value", func(s *server) *atomic.Int64 { return &s.limits.zsetValue }, true),
	limit("zset-max-ziplist-entries", func(s *server) *atomic.Int64 { return &s.limits.zsetEntries }, false),
	limit("zset-max-ziplist-value", func(s *server) *atomic.Int64 { return &s.limits.zsetValue }, true),
}

// limit is one of the limits, by its name or by the name Redis 6 gave
// it (ziplist), which Redis 7.0 keeps as another: a count, or a size,
// which takes a unit as maxmemory does. It applies to collections as they
// next change.
func limit(name string, v func(*server) *atomic.Int64, size bool) param {
	return param{
		name: name,
		get:  func(s *server) string { return strconv.FormatInt(v(s).Load(), 10) },
		set: func(s *server, value string) (func(), error) {
			var n int64
			var err error
			if size {
				var m int
				switch m, err = parseMemory(value); {
				case errors.Is(err, errSizeRange):
					err = errSizeRange
				case err != nil:
					err = errors.New("argument must be a memory value")
				}
				n = int64(m)
			} else {
				n, err = configInt(value, 0, math.MaxInt64)
			}
			if err != nil {
				return nil, err
			}
			return func() { v(s).Store(n) }, nil
		},
	}
}

// configInt parses an integer parameter within [lo, hi], with Redis's
// errors.
func configInt(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errors.New("argument couldn't be parsed into an integer")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
	}
	return n, nil
}

// setOutputLimit sets client-output-buffer-limit. The pub/sub class
// changes at once for every subscriber, within the engine's bound on any
// connection's output (WithMaxOutbound), which is fixed as it starts, as
// are the normal class's bounds; replicas there are none, so a replica
// class is taken and has nothing to hold.
func setOutputLimit(s *server, v string) (func(), error) {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		//lint:ignore ST1005 Redis's wording
		return nil, errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	next := s.outputLimit()
	for ; len(f) > 0; f = f[4:] {
		class := strings.ToLower(f[0])
		if class == "slave" || class == "replica" {
			continue
		}
		var o outputLimit
		if class != "normal" && class != "pubsub" || o.Set(strings.Join(f[:4], " ")) != nil {
			if class != "normal" && class != "pubsub" {
				//lint:ignore ST1005 Redis's wording
				return nil, errors.New("Invalid client class specified in buffer limit configuration.")
			}
			//lint:ignore ST1005 Redis's wording
			return nil, errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		if class == "normal" {
			if o.normal != next.normalLimit() {
				return nil, errors.New("the normal class's bounds are the engine's, set as the server starts (-client-output-buffer-limit)")
			}
			continue
		}
		if bound := s.cfg.output.engineBound(); bound > 0 && (o.pubsub.hard == 0 || o.pubsub.hard > bound) {
			return nil, fmt.Errorf("the pubsub class's hard bound cannot pass the engine's, %d bytes, set as the server starts", bound)
		}
		next.pubsub, next.pubsubSet = o.pubsub, true
	}
	return func() { s.output.Store(&next) }, nil
}

// configGet is CONFIG GET pattern [pattern ...]: the parameters any of
// the patterns names, each once, by name; Redis replies them in the order
// of its hash table. As in Redis, a name given in full is replied as it
// was given, in whatever case.
func configGet(c *call) {
	var found [][2]string
	for _, p := range configParams {
		for _, pattern := range c.args[2:] {
			if eqFold(pattern, p.name) {
				found = append(found, [2]string{string(pattern), p.get(c.srv)})
				break
			}
			if globMatch(pattern, []byte(p.name), true) {
				found = append(found, [2]string{p.name, p.get(c.srv)})
				break
			}
		}
	}
	c.mapOf(len(found))
	for _, p := range found {
		c.bulkString(p[0])
		c.bulkString(p[1])
	}
}

// configSet is CONFIG SET parameter value [parameter value ...]: all of
// them, or, if one is refused, none.
func configSet(c *call) {
	args := c.args[2:]
	if len(args)%2 != 0 {
		c.error(errSyntax)
		return
	}
	var applies []func()
	seen := make(map[string]bool)
	for i := 0; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		var p *param
		for j := range configParams {
			if configParams[j].name == name {
				p = &configParams[j]
			}
		}
		if p == nil {
			c.errorText(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", args[i]))
			return
		}
		if seen[name] {
			c.errorText(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - duplicate parameter", args[i]))
			return
		}
		seen[name] = true
		apply, err := p.set(c.srv, string(args[i+1]))
		if err != nil {
			c.errorText(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", args[i], err))
			return
		}
		applies = append(applies, apply)
	}
	for _, apply := range applies {
		apply()
	}
	c.ok()
}

// configResetstat is CONFIG RESETSTAT: INFO's counters start again.
func configResetstat(c *call) {
	s := c.srv
	s.commands.Store(0)
	s.connections.Store(0)
	s.outputDrops.Store(0)
	for i := range numShards {
		sh := c.lockShard(i)
		sh.hits, sh.misses, sh.expired = 0, 0, 0
		c.unlock(sh)
	}
	c.ok()
}

// configRewrite is CONFIG REWRITE: there is no file to rewrite.
func configRewrite(c *call) { c.errorText("ERR The server is running without a config file") }

// setIdleTimeout changes the idle timeout of every client, those open now
// on their loops, and those to come as they open.
func (s *server) setIdleTimeout(d time.Duration) {
	s.idleTimeout.Store(int64(d))
	for _, cl := range s.clients.list() {
		cl.loop.loop.Execute(func() {
			if !cl.closed {
				cl.conn.SetIdleTimeout(d)
			}
		})
	}
}

// outputLimit returns client-output-buffer-limit as it stands.
func (s *server) outputLimit() outputLimit { return *s.output.Load() }

// idleTimeoutSet reports the idle timeout a client opening now gets, and
// whether CONFIG SET changed it from the engine's (WithIdleTimeout).
func (s *server) idleTimeoutSet() (time.Duration, bool) {
	d := time.Duration(s.idleTimeout.Load())
	return d, d != s.cfg.idleTimeout
}
