package main

import (
	"fmt"
	"slices"
	"strings"
)

// command is a command the server knows: how to run it, and what COMMAND
// tells clients of it.
type command struct {
	name     string // in lower case; "parent|sub" for a subcommand
	arity    int    // as in Redis: n means exactly n words with the name, -n at least n
	flags    []string
	firstKey int // position of the first key argument, 0 for none
	lastKey  int // of the last, negative counting from the end
	step     int // between keys
	group    string
	summary  string
	run      func(*call)
	subs     *commandTable // for a container command such as CLIENT
	pubsubOK bool          // allowed to a RESP2 client with subscriptions

	// keys finds the keys of a command whose keys are not at fixed places
	// (movablekeys), and says whether it may touch keys it cannot name
	// before it runs; allShards says a command goes through the whole
	// keyspace. Both tell EXEC what to lock.
	keys      func(args [][]byte) (keys [][]byte, all bool)
	allShards bool

	upper    string // the name in capitals, for messages
	arityErr string // the reply to a wrong number of arguments
}

// commandTable finds commands by name, in any case, without allocating.
// It is a small open-addressing hash table, at most a quarter full, over
// the names in lower case: cheaper than a map for the lookup every command
// starts with, since the name is hashed as it is lowered.
type commandTable struct {
	slots []tableSlot // a power of two long
	all   []*command  // by name
}

type tableSlot struct {
	key string // the name within the table: "kill" for CLIENT KILL
	cmd *command
}

// maxNameLen bounds the names lookup tries; no command's is longer.
const maxNameLen = 32

// FNV-1a, over the bytes of a name.
const fnvOffset = 2166136261

func fnvByte(h uint32, c byte) uint32 { return (h ^ uint32(c)) * 16777619 }

// lookup finds the command called name. A nil table has none.
func (t *commandTable) lookup(name []byte) *command {
	if t == nil || len(name) > maxNameLen {
		return nil
	}
	var lower [maxNameLen]byte
	h := uint32(fnvOffset)
	for i, c := range name {
		lower[i] = toLower(c)
		h = fnvByte(h, lower[i])
	}
	key := lower[:len(name)]
	for i := h; ; i++ {
		slot := &t.slots[i&uint32(len(t.slots)-1)]
		if slot.cmd == nil || slot.key == string(key) {
			return slot.cmd
		}
	}
}

// sorted returns the table's commands by name; none for a nil table.
func (t *commandTable) sorted() []*command {
	if t == nil {
		return nil
	}
	return t.all
}

// keysOf returns the keys cmd, with args, names, and whether it may touch
// others, which only running it would tell.
func (cmd *command) keysOf(args [][]byte) (keys [][]byte, all bool) {
	switch {
	case cmd.allShards:
		return nil, true
	case cmd.keys != nil:
		return cmd.keys(args)
	case cmd.firstKey == 0:
		return nil, false
	}
	last := cmd.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.step {
		keys = append(keys, args[i])
	}
	return keys, false
}

// numkeysAt returns a keys function for a command with a count of keys at
// index at, followed by the keys.
func numkeysAt(at int) func(args [][]byte) ([][]byte, bool) {
	return func(args [][]byte) ([][]byte, bool) {
		if at >= len(args) {
			return nil, false
		}
		n, err := parseInt(args[at])
		if err != nil || n <= 0 || n > int64(len(args)-at-1) {
			return nil, false
		}
		return args[at+1 : at+1+int(n)], false
	}
}

func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

// commands is every command the server knows. It is built in init, since
// COMMAND, one of them, reads it.
var commands *commandTable

func init() {
	commands = newTable("", []*command{
		// Connection.
		{name: "ping", arity: -1, flags: flags("fast"), group: "connection", summary: "Returns the server's liveliness response.", run: ping, pubsubOK: true},
		{name: "echo", arity: 2, flags: flags("fast"), group: "connection", summary: "Returns the given string.", run: echo},
		{name: "quit", arity: -1, flags: flags("fast"), group: "connection", summary: "Closes the connection.", run: quit, pubsubOK: true},
		{name: "reset", arity: 1, flags: flags("fast"), group: "connection", summary: "Resets the connection.", run: reset, pubsubOK: true},
		{name: "select", arity: 2, flags: flags("fast"), group: "connection", summary: "Changes the selected database.", run: selectDB},
		{name: "hello", arity: -1, flags: flags("fast"), group: "connection", summary: "Handshakes with the Redis server.", run: hello},
		{name: "client", arity: -2, group: "connection", summary: "A container for client connection commands.", subs: newTable("client", []*command{
			{name: "id", arity: 2, group: "connection", summary: "Returns the unique client ID of the connection.", run: clientID},
			{name: "getname", arity: 2, group: "connection", summary: "Returns the name of the connection.", run: clientGetName},
			{name: "setname", arity: 3, group: "connection", summary: "Sets the connection name.", run: clientSetName},
			{name: "reply", arity: 3, group: "connection", summary: "Instructs the server whether to reply to commands.", run: clientReply},
			{name: "info", arity: 2, group: "connection", summary: "Returns information about the connection.", run: clientInfo},
			{name: "list", arity: -2, group: "connection", summary: "Lists open connections.", run: clientList},
			{name: "kill", arity: -3, group: "connection", summary: "Terminates open connections.", run: clientKill},
			{name: "unblock", arity: -3, group: "connection", summary: "Unblocks a client blocked by a blocking command from a different connection.", run: clientUnblock},
		})},

		// Transactions.
		{name: "multi", arity: 1, flags: flags("fast"), group: "transactions", summary: "Starts a transaction.", run: multi},
		{name: "exec", arity: 1, group: "transactions", summary: "Executes all commands in a transaction.", run: execCmd},
		{name: "discard", arity: 1, flags: flags("fast"), group: "transactions", summary: "Discards a transaction.", run: discard},
		{name: "watch", arity: -2, flags: flags("fast"), firstKey: 1, lastKey: -1, step: 1, group: "transactions", summary: "Monitors changes to keys to determine the execution of a transaction.", run: watch},
		{name: "unwatch", arity: 1, flags: flags("fast"), group: "transactions", summary: "Forgets about watched keys of a transaction.", run: unwatchCmd},

		// Pub/sub.
		{name: "subscribe", arity: -2, group: "pubsub", summary: "Listens for messages published to channels.", run: subscribe, pubsubOK: true},
		{name: "unsubscribe", arity: -1, group: "pubsub", summary: "Stops listening to messages posted to channels.", run: unsubscribe, pubsubOK: true},
		{name: "psubscribe", arity: -2, group: "pubsub", summary: "Listens for messages published to channels that match one or more patterns.", run: psubscribe, pubsubOK: true},
		{name: "punsubscribe", arity: -1, group: "pubsub", summary: "Stops listening to messages published to channels that match one or more patterns.", run: punsubscribe, pubsubOK: true},
		{name: "ssubscribe", arity: -2, firstKey: 1, lastKey: -1, step: 1, group: "pubsub", summary: "Listens for messages published to shard channels.", run: ssubscribe, pubsubOK: true},
		{name: "sunsubscribe", arity: -1, firstKey: 1, lastKey: -1, step: 1, group: "pubsub", summary: "Stops listening to messages posted to shard channels.", run: sunsubscribe, pubsubOK: true},
		{name: "publish", arity: 3, flags: flags("fast"), group: "pubsub", summary: "Posts a message to a channel.", run: publishCmd},
		{name: "spublish", arity: 3, flags: flags("fast"), firstKey: 1, lastKey: 1, step: 1, group: "pubsub", summary: "Post a message to a shard channel", run: spublish},
		{name: "pubsub", arity: -2, group: "pubsub", summary: "A container for Pub/Sub commands.", subs: newTable("pubsub", []*command{
			{name: "channels", arity: -2, group: "pubsub", summary: "Returns the active channels.", run: pubsubChannels},
			{name: "numsub", arity: -2, group: "pubsub", summary: "Returns a count of subscribers to channels.", run: pubsubNumsub},
			{name: "numpat", arity: 2, group: "pubsub", summary: "Returns a count of unique pattern subscriptions.", run: pubsubNumpat},
			{name: "shardchannels", arity: -2, group: "pubsub", summary: "Returns the active shard channels.", run: pubsubChannels},
			{name: "shardnumsub", arity: -2, group: "pubsub", summary: "Returns the count of subscribers of shard channels.", run: pubsubNumsub},
		})},

		// Server.
		{name: "command", arity: -1, group: "server", summary: "Returns detailed information about all commands.", run: commandInfo, subs: newTable("command", []*command{
			{name: "count", arity: 2, group: "server", summary: "Returns a count of commands.", run: commandCount},
			{name: "docs", arity: -2, group: "server", summary: "Returns documentary information about one, multiple or all commands.", run: commandDocs},
			{name: "info", arity: -2, group: "server", summary: "Returns information about one, multiple or all commands.", run: commandInfo},
			{name: "list", arity: -2, group: "server", summary: "Returns a list of command names.", run: commandList},
		})},
		{name: "info", arity: -1, group: "server", summary: "Returns information and statistics about the server.", run: info, allShards: true},
		{name: "config", arity: -2, group: "server", summary: "A container for server configuration commands.", subs: newTable("config", []*command{
			{name: "get", arity: -3, group: "server", summary: "Returns the effective values of configuration parameters.", run: configGet},
		})},
		{name: "dbsize", arity: 1, flags: flags("readonly", "fast"), group: "server", summary: "Returns the number of keys in the database.", run: dbsize, allShards: true},
		{name: "flushdb", arity: -1, flags: flags("write"), group: "server", summary: "Removes all keys from the current database.", run: flush, allShards: true},
		{name: "flushall", arity: -1, flags: flags("write"), group: "server", summary: "Removes all keys from all databases.", run: flush, allShards: true},

		// Generic.
		keyCommand("generic", "del", -2, -1, "write", "Deletes one or more keys.", del),
		keyCommand("generic", "exists", -2, -1, "readonly", "Determines whether one or more keys exist.", exists),
		keyCommand("generic", "type", 2, 1, "readonly", "Determines the type of value stored at a key.", typeOf),
		keyCommand("generic", "expire", -3, 1, "write", "Sets the expiration time of a key in seconds.", expire),
		keyCommand("generic", "pexpire", -3, 1, "write", "Sets the expiration time of a key in milliseconds.", expire),
		keyCommand("generic", "ttl", 2, 1, "readonly", "Returns the expiration time in seconds of a key.", ttl),
		keyCommand("generic", "pttl", 2, 1, "readonly", "Returns the expiration time in milliseconds of a key.", ttl),
		keyCommand("generic", "persist", 2, 1, "write", "Removes the expiration time of a key.", persist),
		keyCommand("generic", "rename", 3, 2, "write", "Renames a key and overwrites the destination.", rename),
		{name: "keys", arity: 2, flags: flags("readonly"), group: "generic", summary: "Returns all key names that match a pattern.", run: keys, allShards: true},
		{name: "scan", arity: -2, flags: flags("readonly"), group: "generic", summary: "Iterates over the key names in the database.", run: scan, allShards: true},

		// Strings.
		keyCommand("string", "get", 2, 1, "readonly", "Returns the string value of a key.", get),
		keyCommand("string", "set", -3, 1, "write", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", setKey),
		keyCommand("string", "setnx", 3, 1, "write", "Set the string value of a key only when the key doesn't exist.", setnx),
		keyCommand("string", "setex", 4, 1, "write", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", setex),
		keyCommand("string", "getdel", 2, 1, "write", "Returns the string value of a key after deleting the key.", getdel),
		keyCommand("string", "mget", -2, -1, "readonly", "Atomically returns the string values of one or more keys.", mget),
		{name: "mset", arity: -3, flags: flags("write"), firstKey: 1, lastKey: -1, step: 2, group: "string",
			summary: "Atomically creates or modifies the string values of one or more keys.", run: mset},
		keyCommand("string", "incr", 2, 1, "write", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", incr),
		keyCommand("string", "incrby", 3, 1, "write", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", incrby),
		keyCommand("string", "decr", 2, 1, "write", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", decr),
		keyCommand("string", "decrby", 3, 1, "write", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", decrby),
		keyCommand("string", "append", 3, 1, "write", "Appends a string to the value of a key. Creates the key if it doesn't exist.", appendString),
		keyCommand("string", "strlen", 2, 1, "readonly", "Returns the length of a string value.", strlen),
		keyCommand("string", "getrange", 4, 1, "readonly", "Returns a substring of the string stored at a key.", getrange),

		// Lists.
		keyCommand("list", "lpush", -3, 1, "write", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", lpush),
		keyCommand("list", "rpush", -3, 1, "write", "Appends one or more elements to a list. Creates the key if it doesn't exist.", rpush),
		keyCommand("list", "lpop", -2, 1, "write", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", lpop),
		keyCommand("list", "rpop", -2, 1, "write", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", rpop),
		keyCommand("list", "llen", 2, 1, "readonly", "Returns the length of a list.", llen),
		keyCommand("list", "lrange", 4, 1, "readonly", "Returns a range of elements from a list.", lrange),
		keyCommand("list", "lindex", 3, 1, "readonly", "Returns an element from a list by its index.", lindex),
		keyCommand("list", "lmove", 5, 2, "write", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", lmove),
		keyCommand("list", "rpoplpush", 3, 2, "write", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", rpoplpush),
		{name: "lmpop", arity: -4, flags: flags("write", "movablekeys"), group: "list", summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", run: lmpop, keys: numkeysAt(1)},
		blockingCommand("list", "blpop", -3, 1, -2, "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blpop),
		blockingCommand("list", "brpop", -3, 1, -2, "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", brpop),
		blockingCommand("list", "blmove", 6, 1, 2, "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", blmove),
		blockingCommand("list", "brpoplpush", 4, 1, 2, "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", brpoplpush),
		blockingCommand("list", "blmpop", -5, 0, 0, "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blmpop),

		// Sets.
		keyCommand("set", "sadd", -3, 1, "write", "Adds one or more members to a set. Creates the key if it doesn't exist.", sadd),
		keyCommand("set", "srem", -3, 1, "write", "Removes one or more members from a set. Deletes the set if the last member was removed.", srem),
		keyCommand("set", "spop", -2, 1, "write", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", spop),
		keyCommand("set", "smembers", 2, 1, "readonly", "Returns all members of a set.", smembers),
		keyCommand("set", "sismember", 3, 1, "readonly", "Determines whether a member belongs to a set.", sismember),
		keyCommand("set", "scard", 2, 1, "readonly", "Returns the number of members in a set.", scard),

		// Hashes.
		keyCommand("hash", "hset", -4, 1, "write", "Creates or modifies the value of a field in a hash.", hset),
		keyCommand("hash", "hget", 3, 1, "readonly", "Returns the value of a field in a hash.", hget),
		keyCommand("hash", "hdel", -3, 1, "write", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", hdel),
		keyCommand("hash", "hgetall", 2, 1, "readonly", "Returns all fields and values in a hash.", hgetall),
		keyCommand("hash", "hlen", 2, 1, "readonly", "Returns the number of fields in a hash.", hlen),
		keyCommand("hash", "hincrby", 4, 1, "write", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", hincrby),

		// Sorted sets.
		keyCommand("sorted-set", "zadd", -4, 1, "write", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", zadd),
		keyCommand("sorted-set", "zscore", 3, 1, "readonly", "Returns the score of a member in a sorted set.", zscore),
		keyCommand("sorted-set", "zrange", -4, 1, "readonly", "Returns members in a sorted set within a range of indexes.", zrange),
		keyCommand("sorted-set", "zpopmin", -2, 1, "write", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopmin),
		keyCommand("sorted-set", "zpopmax", -2, 1, "write", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopmax),
		{name: "zmpop", arity: -4, flags: flags("write", "movablekeys"), group: "sorted-set", summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", run: zmpop, keys: numkeysAt(1)},
		blockingCommand("sorted-set", "bzpopmin", -3, 1, -2, "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", bzpopmin),
		blockingCommand("sorted-set", "bzpopmax", -3, 1, -2, "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", bzpopmax),
		blockingCommand("sorted-set", "bzmpop", -5, 0, 0, "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", bzmpop),
		keyCommand("sorted-set", "zcard", 2, 1, "readonly", "Returns the number of members in a sorted set.", zcard),
		keyCommand("sorted-set", "zrem", -3, 1, "write", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", zrem),
	})
}

// newTable indexes cmds, the subcommands of parent when it is not empty,
// and fills in what follows from each command's name and arity.
func newTable(parent string, cmds []*command) *commandTable {
	size := 4
	for size < 4*len(cmds) {
		size *= 2
	}
	t := &commandTable{slots: make([]tableSlot, size)}
	for _, cmd := range cmds {
		h := uint32(fnvOffset)
		for i := range len(cmd.name) {
			h = fnvByte(h, cmd.name[i])
		}
		for t.slots[h&uint32(size-1)].cmd != nil {
			h++
		}
		t.slots[h&uint32(size-1)] = tableSlot{key: cmd.name, cmd: cmd}
		if parent != "" {
			cmd.name = parent + "|" + cmd.name
		}
		cmd.upper = strings.ToUpper(cmd.name)
		cmd.arityErr = fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.name)
	}
	t.all = slices.SortedFunc(slices.Values(cmds), func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return t
}

func flags(f ...string) []string { return f }

// blockingCommand describes a blocking command of the group on the keys
// from first to last, or with a count of keys before them when first is
// 0.
func blockingCommand(group, name string, arity, first, last int, summary string, run func(*call)) *command {
	cmd := &command{name: name, arity: arity, flags: flags("write", "blocking"), firstKey: first, lastKey: last, step: 1,
		group: group, summary: summary, run: run}
	if first == 0 {
		cmd.flags = append(cmd.flags, "movablekeys")
		cmd.step = 0
		cmd.keys = numkeysAt(2)
	}
	return cmd
}

// keyCommand describes a command of the group on the keys from position 1
// to last.
func keyCommand(group, name string, arity, last int, flag, summary string, run func(*call)) *command {
	return &command{name: name, arity: arity, flags: flags(flag), firstKey: 1, lastKey: last, step: 1,
		group: group, summary: summary, run: run}
}

// namedCommands returns the commands named after the subcommand, nil for
// names it does not know, or every command when none is named.
func (c *call) namedCommands() []*command {
	if len(c.args) <= 2 {
		return commands.all
	}
	cmds := make([]*command, len(c.args)-2)
	for i, name := range c.args[2:] {
		cmds[i] = commands.lookup(name)
	}
	return cmds
}

// commandInfo is COMMAND, and COMMAND INFO [name ...]: the description of
// each command, or a null for a name it does not know.
func commandInfo(c *call) {
	cmds := c.namedCommands()
	c.array(len(cmds))
	for _, cmd := range cmds {
		if cmd == nil {
			c.nullArray()
		} else {
			c.commandEntry(cmd)
		}
	}
}

// commandEntry replies cmd's description, as Redis 7 does: name, arity,
// flags, first key, last key, key step, ACL categories, tips, key
// specifications and subcommands. This server has no ACLs, tips or key
// specifications, so those are empty.
func (c *call) commandEntry(cmd *command) {
	c.array(10)
	c.bulkString(cmd.name)
	c.integer(int64(cmd.arity))
	c.setOf(len(cmd.flags))
	for _, f := range cmd.flags {
		c.simple(f)
	}
	c.integer(int64(cmd.firstKey))
	c.integer(int64(cmd.lastKey))
	c.integer(int64(cmd.step))
	c.array(0)
	c.array(0)
	c.array(0)
	subs := cmd.subs.sorted()
	c.array(len(subs))
	for _, sub := range subs {
		c.commandEntry(sub)
	}
}

func commandCount(c *call) { c.integer(int64(len(commands.all))) }

// commandList is COMMAND LIST: every command's name. Its filters are not
// supported.
func commandList(c *call) {
	if len(c.args) > 2 {
		c.error(errSyntax)
		return
	}
	c.array(len(commands.all))
	for _, cmd := range commands.all {
		c.bulkString(cmd.name)
	}
}

// commandDocs is COMMAND DOCS [name ...]: a map from each command named,
// or every command, to its summary and group, which redis-cli shows as
// help. Names it does not know are left out.
func commandDocs(c *call) {
	var cmds []*command
	for _, cmd := range c.namedCommands() {
		if cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	c.mapOf(len(cmds))
	for _, cmd := range cmds {
		c.bulkString(cmd.name)
		c.commandDoc(cmd)
	}
}

func (c *call) commandDoc(cmd *command) {
	subs := cmd.subs.sorted()
	n := 3
	if len(subs) > 0 {
		n++
	}
	c.mapOf(n)
	c.bulkString("summary")
	c.bulkString(cmd.summary)
	c.bulkString("since")
	c.bulkString("1.0.0")
	c.bulkString("group")
	c.bulkString(cmd.group)
	if len(subs) > 0 {
		c.bulkString("subcommands")
		c.mapOf(len(subs))
		for _, sub := range subs {
			c.bulkString(sub.name)
			c.commandDoc(sub)
		}
	}
}
