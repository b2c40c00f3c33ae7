package main

import (
	"bytes"
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
	acl      []string // its ACL categories, as Redis 7.0 lists them
	firstKey int      // position of the first key argument, 0 for none
	lastKey  int      // of the last, negative counting from the end
	step     int      // between keys
	group    string
	since    string // the Redis release that brought it
	summary  string
	run      func(*call)
	subs     *commandTable // for a container command such as CLIENT
	pubsubOK bool          // allowed to a RESP2 client with subscriptions
	noMulti  bool          // refused inside MULTI: its flags name no_multi

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
		{name: "ping", arity: -1, flags: flags("fast"), acl: flags("@fast", "@connection"), group: "connection", since: "1.0.0", summary: "Ping the server", run: ping, pubsubOK: true},
		{name: "echo", arity: 2, flags: flags("loading", "stale", "fast"), acl: flags("@fast", "@connection"), group: "connection", since: "1.0.0", summary: "Echo the given string", run: echo},
		{name: "quit", arity: -1, flags: flags("noscript", "loading", "stale", "fast", "no_auth", "allow_busy"), acl: flags("@fast", "@connection"), group: "connection", since: "1.0.0", summary: "Close the connection", run: quit, pubsubOK: true},
		{name: "reset", arity: 1, flags: flags("noscript", "loading", "stale", "fast", "no_auth", "allow_busy"), acl: flags("@fast", "@connection"), group: "connection", since: "6.2.0", summary: "Reset the connection", run: reset, pubsubOK: true},
		{name: "select", arity: 2, flags: flags("loading", "stale", "fast"), acl: flags("@fast", "@connection"), group: "connection", since: "1.0.0", summary: "Change the selected database for the current connection", run: selectDB},
		{name: "hello", arity: -1, flags: flags("noscript", "loading", "stale", "fast", "no_auth", "allow_busy"), acl: flags("@fast", "@connection"), group: "connection", since: "6.0.0", summary: "Handshake with Redis", run: hello},
		{name: "client", arity: -2, acl: flags("@slow"), group: "connection", since: "2.4.0", summary: "A container for client connection commands", subs: newTable("client", []*command{
			{name: "id", arity: 2, flags: flags("noscript", "loading", "stale"), acl: flags("@slow", "@connection"), group: "connection", since: "5.0.0", summary: "Returns the client ID for the current connection", run: clientID},
			{name: "help", arity: 2, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "connection", since: "5.0.0", summary: "Show helpful text about the different subcommands", run: helpReply(clientHelp)},
			{name: "getname", arity: 2, flags: flags("noscript", "loading", "stale"), acl: flags("@slow", "@connection"), group: "connection", since: "2.6.9", summary: "Get the current connection name", run: clientGetName},
			{name: "setname", arity: 3, flags: flags("noscript", "loading", "stale"), acl: flags("@slow", "@connection"), group: "connection", since: "2.6.9", summary: "Set the current connection name", run: clientSetName},
			{name: "reply", arity: 3, flags: flags("noscript", "loading", "stale"), acl: flags("@slow", "@connection"), group: "connection", since: "3.2.0", summary: "Instruct the server whether to reply to commands", run: clientReply},
			{name: "info", arity: 2, flags: flags("noscript", "loading", "stale"), acl: flags("@slow", "@connection"), group: "connection", since: "6.2.0", summary: "Returns information about the current client connection.", run: clientInfo},
			{name: "list", arity: -2, flags: flags("admin", "noscript", "loading", "stale"), acl: flags("@admin", "@slow", "@dangerous", "@connection"), group: "connection", since: "2.4.0", summary: "Get the list of client connections", run: clientList},
			{name: "kill", arity: -3, flags: flags("admin", "noscript", "loading", "stale"), acl: flags("@admin", "@slow", "@dangerous", "@connection"), group: "connection", since: "2.4.0", summary: "Kill the connection of a client", run: clientKill},
			{name: "unblock", arity: -3, flags: flags("admin", "noscript", "loading", "stale"), acl: flags("@admin", "@slow", "@dangerous", "@connection"), group: "connection", since: "5.0.0", summary: "Unblock a client blocked in a blocking command from a different connection", run: clientUnblock},
		})},

		// Transactions.
		{name: "multi", arity: 1, flags: flags("noscript", "loading", "stale", "fast", "allow_busy"), acl: flags("@fast", "@transaction"), group: "transactions", since: "1.2.0", summary: "Mark the start of a transaction block", run: multi},
		{name: "exec", arity: 1, flags: flags("noscript", "loading", "stale", "skip_slowlog"), acl: flags("@slow", "@transaction"), group: "transactions", since: "1.2.0", summary: "Execute all commands issued after MULTI", run: execCmd},
		{name: "discard", arity: 1, flags: flags("noscript", "loading", "stale", "fast", "allow_busy"), acl: flags("@fast", "@transaction"), group: "transactions", since: "2.0.0", summary: "Discard all commands issued after MULTI", run: discard},
		{name: "watch", arity: -2, flags: flags("noscript", "loading", "stale", "fast", "allow_busy"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@fast", "@transaction"), group: "transactions", since: "2.2.0", summary: "Watch the given keys to determine execution of the MULTI/EXEC block", run: watch},
		{name: "unwatch", arity: 1, flags: flags("noscript", "loading", "stale", "fast", "allow_busy"), acl: flags("@fast", "@transaction"), group: "transactions", since: "2.2.0", summary: "Forget about all watched keys", run: unwatchCmd},

		// Pub/sub.
		{name: "subscribe", arity: -2, flags: flags("pubsub", "noscript", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "2.0.0", summary: "Listen for messages published to the given channels", run: subscribe, pubsubOK: true},
		{name: "unsubscribe", arity: -1, flags: flags("pubsub", "noscript", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "2.0.0", summary: "Stop listening for messages posted to the given channels", run: unsubscribe, pubsubOK: true},
		{name: "psubscribe", arity: -2, flags: flags("pubsub", "noscript", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "2.0.0", summary: "Listen for messages published to channels matching the given patterns", run: psubscribe, pubsubOK: true},
		{name: "punsubscribe", arity: -1, flags: flags("pubsub", "noscript", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "2.0.0", summary: "Stop listening for messages posted to channels matching the given patterns", run: punsubscribe, pubsubOK: true},
		{name: "ssubscribe", arity: -2, flags: flags("pubsub", "noscript", "loading", "stale"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@pubsub", "@slow"), group: "pubsub", since: "7.0.0", summary: "Listen for messages published to the given shard channels", run: ssubscribe, pubsubOK: true},
		{name: "sunsubscribe", arity: -1, flags: flags("pubsub", "noscript", "loading", "stale"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@pubsub", "@slow"), group: "pubsub", since: "7.0.0", summary: "Stop listening for messages posted to the given shard channels", run: sunsubscribe, pubsubOK: true},
		{name: "publish", arity: 3, flags: flags("pubsub", "loading", "stale", "fast"), acl: flags("@pubsub", "@fast"), group: "pubsub", since: "2.0.0", summary: "Post a message to a channel", run: publishCmd},
		{name: "spublish", arity: 3, flags: flags("pubsub", "loading", "stale", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@pubsub", "@fast"), group: "pubsub", since: "7.0.0", summary: "Post a message to a shard channel", run: spublish},
		{name: "pubsub", arity: -2, acl: flags("@slow"), group: "pubsub", since: "2.8.0", summary: "A container for Pub/Sub commands", subs: newTable("pubsub", []*command{
			{name: "channels", arity: -2, flags: flags("pubsub", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "2.8.0", summary: "List active channels", run: pubsubChannels},
			{name: "numsub", arity: -2, flags: flags("pubsub", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "2.8.0", summary: "Get the count of subscribers for channels", run: pubsubNumsub},
			{name: "help", arity: 2, flags: flags("loading", "stale"), acl: flags("@slow"), group: "pubsub", since: "6.2.0", summary: "Show helpful text about the different subcommands", run: helpReply(pubsubHelp)},
			{name: "numpat", arity: 2, flags: flags("pubsub", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "2.8.0", summary: "Get the count of unique patterns pattern subscriptions", run: pubsubNumpat},
			{name: "shardchannels", arity: -2, flags: flags("pubsub", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "7.0.0", summary: "List active shard channels", run: pubsubChannels},
			{name: "shardnumsub", arity: -2, flags: flags("pubsub", "loading", "stale"), acl: flags("@pubsub", "@slow"), group: "pubsub", since: "7.0.0", summary: "Get the count of subscribers for shard channels", run: pubsubNumsub},
		})},

		// Server.
		{name: "command", arity: -1, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "server", since: "2.8.13", summary: "Get array of Redis command details", run: commandInfo, subs: newTable("command", []*command{
			{name: "count", arity: 2, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "server", since: "2.8.13", summary: "Get total number of Redis commands", run: commandCount},
			{name: "docs", arity: -2, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "server", since: "7.0.0", summary: "Get array of specific Redis command documentation", run: commandDocs},
			{name: "help", arity: 2, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "server", since: "5.0.0", summary: "Show helpful text about the different subcommands", run: helpReply(commandHelp)},
			{name: "info", arity: -2, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "server", since: "2.8.13", summary: "Get array of specific Redis command details, or all when no argument is given.", run: commandInfo},
			{name: "list", arity: -2, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "server", since: "7.0.0", summary: "Get an array of Redis command names", run: commandList},
			{name: "getkeys", arity: -4, flags: flags("loading", "stale"), acl: flags("@slow", "@connection"), group: "server", since: "2.8.13", summary: "Extract keys given a full Redis command", run: commandGetkeys},
		})},
		{name: "info", arity: -1, flags: flags("loading", "stale"), acl: flags("@slow", "@dangerous"), group: "server", since: "1.0.0", summary: "Get information and statistics about the server", run: info, allShards: true},
		{name: "config", arity: -2, acl: flags("@slow"), group: "server", since: "2.0.0", summary: "A container for server configuration commands", subs: newTable("config", []*command{
			{name: "get", arity: -3, flags: flags("admin", "noscript", "loading", "stale"), acl: flags("@admin", "@slow", "@dangerous"), group: "server", since: "2.0.0", summary: "Get the values of configuration parameters", run: configGet},
			{name: "set", arity: -4, flags: flags("admin", "noscript", "loading", "stale"), acl: flags("@admin", "@slow", "@dangerous"), group: "server", since: "2.0.0", summary: "Set configuration parameters to the given values", run: configSet},
			{name: "help", arity: 2, flags: flags("loading", "stale"), acl: flags("@slow"), group: "server", since: "5.0.0", summary: "Show helpful text about the different subcommands", run: helpReply(configHelp)},
			{name: "resetstat", arity: 2, flags: flags("admin", "noscript", "loading", "stale"), acl: flags("@admin", "@slow", "@dangerous"), group: "server", since: "2.0.0", summary: "Reset the stats returned by INFO", run: configResetstat, allShards: true},
			{name: "rewrite", arity: 2, flags: flags("admin", "noscript", "loading", "stale"), acl: flags("@admin", "@slow", "@dangerous"), group: "server", since: "2.8.0", summary: "Rewrite the configuration file with the in memory configuration", run: configRewrite},
		})},
		{name: "dbsize", arity: 1, flags: flags("readonly", "fast"), acl: flags("@keyspace", "@read", "@fast"), group: "server", since: "1.0.0", summary: "Return the number of keys in the selected database", run: dbsize, allShards: true},
		{name: "flushdb", arity: -1, flags: flags("write"), acl: flags("@keyspace", "@write", "@slow", "@dangerous"), group: "server", since: "1.0.0", summary: "Remove all keys from the current database", run: flush, allShards: true},
		{name: "flushall", arity: -1, flags: flags("write"), acl: flags("@keyspace", "@write", "@slow", "@dangerous"), group: "server", since: "1.0.0", summary: "Remove all keys from all databases", run: flush, allShards: true},
		{name: "shutdown", arity: -1, flags: flags("admin", "noscript", "loading", "stale", "no_multi", "allow_busy"), acl: flags("@admin", "@slow", "@dangerous"), group: "server", since: "1.0.0", summary: "Synchronously save the dataset to disk and then shut down the server", run: shutdown},
		{name: "time", arity: 1, flags: flags("loading", "stale", "fast"), acl: flags("@fast"), group: "server", since: "2.6.0", summary: "Return the current server time", run: timeCmd},

		// Generic.
		{name: "del", arity: -2, flags: flags("write"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@keyspace", "@write", "@slow"), group: "generic", since: "1.0.0", summary: "Delete a key", run: del},
		{name: "unlink", arity: -2, flags: flags("write", "fast"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@keyspace", "@write", "@fast"), group: "generic", since: "4.0.0", summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.", run: del},
		{name: "exists", arity: -2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@keyspace", "@read", "@fast"), group: "generic", since: "1.0.0", summary: "Determine if a key exists", run: exists},
		{name: "touch", arity: -2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@keyspace", "@read", "@fast"), group: "generic", since: "3.2.1", summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.", run: touchCmd},
		{name: "object", arity: -2, acl: flags("@slow"), group: "generic", since: "2.2.3", summary: "A container for object introspection commands", subs: newTable("object", []*command{
			{name: "encoding", arity: 3, flags: flags("readonly"), firstKey: 2, lastKey: 2, step: 1, acl: flags("@keyspace", "@read", "@slow"), group: "generic", since: "2.2.3", summary: "Inspect the internal encoding of a Redis object", run: objectEncoding},
			{name: "freq", arity: 3, flags: flags("readonly"), firstKey: 2, lastKey: 2, step: 1, acl: flags("@keyspace", "@read", "@slow"), group: "generic", since: "4.0.0", summary: "Get the logarithmic access frequency counter of a Redis object", run: objectFreq},
			{name: "help", arity: 2, flags: flags("loading", "stale"), acl: flags("@keyspace", "@slow"), group: "generic", since: "6.2.0", summary: "Show helpful text about the different subcommands", run: helpReply(objectHelp)},
			{name: "idletime", arity: 3, flags: flags("readonly"), firstKey: 2, lastKey: 2, step: 1, acl: flags("@keyspace", "@read", "@slow"), group: "generic", since: "2.2.3", summary: "Get the time since a Redis object was last accessed", run: objectIdletime},
			{name: "refcount", arity: 3, flags: flags("readonly"), firstKey: 2, lastKey: 2, step: 1, acl: flags("@keyspace", "@read", "@slow"), group: "generic", since: "2.2.3", summary: "Get the number of references to the value of the key", run: objectRefcount},
		})},
		{name: "type", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@read", "@fast"), group: "generic", since: "1.0.0", summary: "Determine the type stored at key", run: typeOf},
		{name: "expire", arity: -3, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@write", "@fast"), group: "generic", since: "1.0.0", summary: "Set a key's time to live in seconds", run: expire},
		{name: "pexpire", arity: -3, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@write", "@fast"), group: "generic", since: "2.6.0", summary: "Set a key's time to live in milliseconds", run: expire},
		{name: "expireat", arity: -3, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@write", "@fast"), group: "generic", since: "1.2.0", summary: "Set the expiration for a key as a UNIX timestamp", run: expire},
		{name: "pexpireat", arity: -3, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@write", "@fast"), group: "generic", since: "2.6.0", summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds", run: expire},
		{name: "expiretime", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@read", "@fast"), group: "generic", since: "7.0.0", summary: "Get the expiration Unix timestamp for a key", run: expiretime},
		{name: "pexpiretime", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@read", "@fast"), group: "generic", since: "7.0.0", summary: "Get the expiration Unix timestamp for a key in milliseconds", run: expiretime},
		{name: "ttl", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@read", "@fast"), group: "generic", since: "1.0.0", summary: "Get the time to live for a key in seconds", run: ttl},
		{name: "pttl", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@read", "@fast"), group: "generic", since: "2.6.0", summary: "Get the time to live for a key in milliseconds", run: ttl},
		{name: "persist", arity: 2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@write", "@fast"), group: "generic", since: "2.2.0", summary: "Remove the expiration from a key", run: persist},
		{name: "rename", arity: 3, flags: flags("write"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@keyspace", "@write", "@slow"), group: "generic", since: "1.0.0", summary: "Rename a key", run: rename},
		{name: "renamenx", arity: 3, flags: flags("write", "fast"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@keyspace", "@write", "@fast"), group: "generic", since: "1.0.0", summary: "Rename a key, only if the new key does not exist", run: rename},
		{name: "copy", arity: -3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@keyspace", "@write", "@slow"), group: "generic", since: "6.2.0", summary: "Copy a key", run: copyCmd},
		{name: "keys", arity: 2, flags: flags("readonly"), acl: flags("@keyspace", "@read", "@slow", "@dangerous"), group: "generic", since: "1.0.0", summary: "Find all keys matching the given pattern", run: keys, allShards: true},
		{name: "scan", arity: -2, flags: flags("readonly"), acl: flags("@keyspace", "@read", "@slow"), group: "generic", since: "2.8.0", summary: "Incrementally iterate the keys space", run: scan, allShards: true},
		{name: "randomkey", arity: 1, flags: flags("readonly"), acl: flags("@keyspace", "@read", "@slow"), group: "generic", since: "1.0.0", summary: "Return a random key from the keyspace", run: randomkey, allShards: true},
		{name: "sort", arity: -2, flags: flags("write", "denyoom", "movablekeys"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@set", "@sortedset", "@list", "@slow", "@dangerous"), group: "generic", since: "1.0.0", summary: "Sort the elements in a list, set or sorted set", run: sortCmd, keys: sortKeys},
		{name: "sort_ro", arity: -2, flags: flags("readonly", "movablekeys"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@set", "@sortedset", "@list", "@slow", "@dangerous"), group: "generic", since: "7.0.0", summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.", run: sortCmd, keys: sortKeys},
		{name: "dump", arity: 2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@read", "@slow"), group: "generic", since: "2.6.0", summary: "Return a serialized version of the value stored at the specified key.", run: dump},
		{name: "restore", arity: -4, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@keyspace", "@write", "@slow", "@dangerous"), group: "generic", since: "2.6.0", summary: "Create a key using the provided serialized value, previously obtained using DUMP.", run: restore},

		// Strings.
		{name: "get", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Get the value of a key", run: get},
		{name: "set", arity: -3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@slow"), group: "string", since: "1.0.0", summary: "Set the string value of a key", run: setKey},
		{name: "setnx", arity: 3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Set the value of a key, only if the key does not exist", run: setnx},
		{name: "setex", arity: 4, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@slow"), group: "string", since: "2.0.0", summary: "Set the value and expiration of a key", run: setex},
		{name: "psetex", arity: 4, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@slow"), group: "string", since: "2.6.0", summary: "Set the value and expiration in milliseconds of a key", run: psetex},
		{name: "getset", arity: 3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Set the string value of a key and return its old value", run: getset},
		{name: "getdel", arity: 2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "6.2.0", summary: "Get the value of a key and delete the key", run: getdel},
		{name: "getex", arity: -2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "6.2.0", summary: "Get the value of a key and optionally set its expiration", run: getex},
		{name: "mget", arity: -2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@read", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Get the values of all the given keys", run: mget},
		{name: "mset", arity: -3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: -1, step: 2, acl: flags("@write", "@string", "@slow"), group: "string", since: "1.0.1", summary: "Set multiple keys to multiple values", run: mset},
		{name: "msetnx", arity: -3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: -1, step: 2, acl: flags("@write", "@string", "@slow"), group: "string", since: "1.0.1", summary: "Set multiple keys to multiple values, only if none of the keys exist", run: msetnx},
		{name: "incr", arity: 2, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Increment the integer value of a key by one", run: incr},
		{name: "incrby", arity: 3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Increment the integer value of a key by the given amount", run: incrby},
		{name: "incrbyfloat", arity: 3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "2.6.0", summary: "Increment the float value of a key by the given amount", run: incrbyfloat},
		{name: "decr", arity: 2, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Decrement the integer value of a key by one", run: decr},
		{name: "decrby", arity: 3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "1.0.0", summary: "Decrement the integer value of a key by the given number", run: decrby},
		{name: "append", arity: 3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@fast"), group: "string", since: "2.0.0", summary: "Append a value to a key", run: appendString},
		{name: "strlen", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@string", "@fast"), group: "string", since: "2.2.0", summary: "Get the length of the value stored in a key", run: strlen},
		{name: "getrange", arity: 4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@string", "@slow"), group: "string", since: "2.4.0", summary: "Get a substring of the string stored at a key", run: getrange},
		{name: "substr", arity: 4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@string", "@slow"), group: "string", since: "1.0.0", summary: "Get a substring of the string stored at a key", run: getrange},
		{name: "setrange", arity: 4, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@string", "@slow"), group: "string", since: "2.2.0", summary: "Overwrite part of a string at key starting at the specified offset", run: setrange},
		{name: "lcs", arity: -3, flags: flags("readonly"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@read", "@string", "@slow"), group: "string", since: "7.0.0", summary: "Find longest common substring", run: lcs},

		// Bitmaps.
		{name: "getbit", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@bitmap", "@fast"), group: "bitmap", since: "2.2.0", summary: "Returns the bit value at offset in the string value stored at key", run: getbit},
		{name: "setbit", arity: 4, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@bitmap", "@slow"), group: "bitmap", since: "2.2.0", summary: "Sets or clears the bit at offset in the string value stored at key", run: setbit},
		{name: "bitcount", arity: -2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@bitmap", "@slow"), group: "bitmap", since: "2.6.0", summary: "Count set bits in a string", run: bitcount},
		{name: "bitop", arity: -4, flags: flags("write", "denyoom"), firstKey: 2, lastKey: -1, step: 1, acl: flags("@write", "@bitmap", "@slow"), group: "bitmap", since: "2.6.0", summary: "Perform bitwise operations between strings", run: bitop},
		{name: "bitpos", arity: -3, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@bitmap", "@slow"), group: "bitmap", since: "2.8.7", summary: "Find first bit set or clear in a string", run: bitpos},

		// Lists.
		{name: "lpush", arity: -3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@fast"), group: "list", since: "1.0.0", summary: "Prepend one or multiple elements to a list", run: lpush},
		{name: "rpush", arity: -3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@fast"), group: "list", since: "1.0.0", summary: "Append one or multiple elements to a list", run: rpush},
		{name: "lpushx", arity: -3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@fast"), group: "list", since: "2.2.0", summary: "Prepend an element to a list, only if the list exists", run: lpushx},
		{name: "rpushx", arity: -3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@fast"), group: "list", since: "2.2.0", summary: "Append an element to a list, only if the list exists", run: rpushx},
		{name: "lpop", arity: -2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@fast"), group: "list", since: "1.0.0", summary: "Remove and get the first elements in a list", run: lpop},
		{name: "rpop", arity: -2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@fast"), group: "list", since: "1.0.0", summary: "Remove and get the last elements in a list", run: rpop},
		{name: "llen", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@list", "@fast"), group: "list", since: "1.0.0", summary: "Get the length of a list", run: llen},
		{name: "lrange", arity: 4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@list", "@slow"), group: "list", since: "1.0.0", summary: "Get a range of elements from a list", run: lrange},
		{name: "lindex", arity: 3, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@list", "@slow"), group: "list", since: "1.0.0", summary: "Get an element from a list by its index", run: lindex},
		{name: "linsert", arity: 5, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@slow"), group: "list", since: "2.2.0", summary: "Insert an element before or after another element in a list", run: linsert},
		{name: "lpos", arity: -3, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@list", "@slow"), group: "list", since: "6.0.6", summary: "Return the index of matching elements on a list", run: lpos},
		{name: "lrem", arity: 4, flags: flags("write"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@slow"), group: "list", since: "1.0.0", summary: "Remove elements from a list", run: lrem},
		{name: "lset", arity: 4, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@slow"), group: "list", since: "1.0.0", summary: "Set the value of an element in a list by its index", run: lset},
		{name: "ltrim", arity: 4, flags: flags("write"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@list", "@slow"), group: "list", since: "1.0.0", summary: "Trim a list to the specified range", run: ltrim},
		{name: "lmove", arity: 5, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@write", "@list", "@slow"), group: "list", since: "6.2.0", summary: "Pop an element from a list, push it to another list and return it", run: lmove},
		{name: "rpoplpush", arity: 3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@write", "@list", "@slow"), group: "list", since: "1.2.0", summary: "Remove the last element in a list, prepend it to another list and return it", run: rpoplpush},
		{name: "lmpop", arity: -4, flags: flags("write", "movablekeys"), acl: flags("@write", "@list", "@slow"), group: "list", since: "7.0.0", summary: "Pop elements from a list", run: lmpop, keys: numkeysAt(1)},
		{name: "blpop", arity: -3, flags: flags("write", "noscript", "blocking"), firstKey: 1, lastKey: -2, step: 1, acl: flags("@write", "@list", "@slow", "@blocking"), group: "list", since: "2.0.0", summary: "Remove and get the first element in a list, or block until one is available", run: blpop},
		{name: "brpop", arity: -3, flags: flags("write", "noscript", "blocking"), firstKey: 1, lastKey: -2, step: 1, acl: flags("@write", "@list", "@slow", "@blocking"), group: "list", since: "2.0.0", summary: "Remove and get the last element in a list, or block until one is available", run: brpop},
		{name: "blmove", arity: 6, flags: flags("write", "denyoom", "noscript", "blocking"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@write", "@list", "@slow", "@blocking"), group: "list", since: "6.2.0", summary: "Pop an element from a list, push it to another list and return it; or block until one is available", run: blmove},
		{name: "brpoplpush", arity: 4, flags: flags("write", "denyoom", "noscript", "blocking"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@write", "@list", "@slow", "@blocking"), group: "list", since: "2.2.0", summary: "Pop an element from a list, push it to another list and return it; or block until one is available", run: brpoplpush},
		{name: "blmpop", arity: -5, flags: flags("write", "blocking", "movablekeys"), acl: flags("@write", "@list", "@slow", "@blocking"), group: "list", since: "7.0.0", summary: "Pop elements from a list, or block until one is available", run: blmpop, keys: numkeysAt(2)},

		// Sets.
		{name: "sadd", arity: -3, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@set", "@fast"), group: "set", since: "1.0.0", summary: "Add one or more members to a set", run: sadd},
		{name: "srem", arity: -3, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@set", "@fast"), group: "set", since: "1.0.0", summary: "Remove one or more members from a set", run: srem},
		{name: "spop", arity: -2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@set", "@fast"), group: "set", since: "1.0.0", summary: "Remove and return one or multiple random members from a set", run: spop},
		{name: "smembers", arity: 2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Get all the members in a set", run: smembers},
		{name: "sismember", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@set", "@fast"), group: "set", since: "1.0.0", summary: "Determine if a given value is a member of a set", run: sismember},
		{name: "smismember", arity: -3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@set", "@fast"), group: "set", since: "6.2.0", summary: "Returns the membership associated with the given elements for a set", run: smismember},
		{name: "scard", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@set", "@fast"), group: "set", since: "1.0.0", summary: "Get the number of members in a set", run: scard},
		{name: "sinter", arity: -2, flags: flags("readonly"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@read", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Intersect multiple sets", run: sinter},
		{name: "sinterstore", arity: -3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@write", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Intersect multiple sets and store the resulting set in a key", run: sinterstore},
		{name: "sintercard", arity: -3, flags: flags("readonly", "movablekeys"), acl: flags("@read", "@set", "@slow"), group: "set", since: "7.0.0", summary: "Intersect multiple sets and return the cardinality of the result", run: sintercard, keys: numkeysAt(1)},
		{name: "sunion", arity: -2, flags: flags("readonly"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@read", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Add multiple sets", run: sunion},
		{name: "sunionstore", arity: -3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@write", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Add multiple sets and store the resulting set in a key", run: sunionstore},
		{name: "sdiff", arity: -2, flags: flags("readonly"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@read", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Subtract multiple sets", run: sdiff},
		{name: "sdiffstore", arity: -3, flags: flags("write", "denyoom"), firstKey: 1, lastKey: -1, step: 1, acl: flags("@write", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Subtract multiple sets and store the resulting set in a key", run: sdiffstore},
		{name: "smove", arity: 4, flags: flags("write", "fast"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@write", "@set", "@fast"), group: "set", since: "1.0.0", summary: "Move a member from one set to another", run: smove},
		{name: "srandmember", arity: -2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@set", "@slow"), group: "set", since: "1.0.0", summary: "Get one or multiple random members from a set", run: srandmember},
		{name: "sscan", arity: -3, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@set", "@slow"), group: "set", since: "2.8.0", summary: "Incrementally iterate Set elements", run: sscan},

		// Hashes.
		{name: "hset", arity: -4, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Set the string value of a hash field", run: hset},
		{name: "hsetnx", arity: 4, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Set the value of a hash field, only if the field does not exist", run: hsetnx},
		{name: "hmset", arity: -4, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Set multiple hash fields to multiple values", run: hmset},
		{name: "hget", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Get the value of a hash field", run: hget},
		{name: "hmget", arity: -3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Get the values of all the given hash fields", run: hmget},
		{name: "hdel", arity: -3, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Delete one or more hash fields", run: hdel},
		{name: "hgetall", arity: 2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@slow"), group: "hash", since: "2.0.0", summary: "Get all the fields and values in a hash", run: hgetall},
		{name: "hkeys", arity: 2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@slow"), group: "hash", since: "2.0.0", summary: "Get all the fields in a hash", run: hkeys},
		{name: "hvals", arity: 2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@slow"), group: "hash", since: "2.0.0", summary: "Get all the values in a hash", run: hvals},
		{name: "hlen", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Get the number of fields in a hash", run: hlen},
		{name: "hexists", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Determine if a hash field exists", run: hexists},
		{name: "hstrlen", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@fast"), group: "hash", since: "3.2.0", summary: "Get the length of the value of a hash field", run: hstrlen},
		{name: "hincrby", arity: 4, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@hash", "@fast"), group: "hash", since: "2.0.0", summary: "Increment the integer value of a hash field by the given number", run: hincrby},
		{name: "hincrbyfloat", arity: 4, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@hash", "@fast"), group: "hash", since: "2.6.0", summary: "Increment the float value of a hash field by the given amount", run: hincrbyfloat},
		{name: "hrandfield", arity: -2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@slow"), group: "hash", since: "6.2.0", summary: "Get one or multiple random fields from a hash", run: hrandfield},
		{name: "hscan", arity: -3, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@hash", "@slow"), group: "hash", since: "2.8.0", summary: "Incrementally iterate hash fields and associated values", run: hscan},

		// Sorted sets.
		{name: "zadd", arity: -4, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@fast"), group: "sorted-set", since: "1.2.0", summary: "Add one or more members to a sorted set, or update its score if it already exists", run: zadd},
		{name: "zincrby", arity: 4, flags: flags("write", "denyoom", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@fast"), group: "sorted-set", since: "1.2.0", summary: "Increment the score of a member in a sorted set", run: zincrby},
		{name: "zscore", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@fast"), group: "sorted-set", since: "1.2.0", summary: "Get the score associated with the given member in a sorted set", run: zscore},
		{name: "zmscore", arity: -3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@fast"), group: "sorted-set", since: "6.2.0", summary: "Get the score associated with the given members in a sorted set", run: zmscore},
		{name: "zcard", arity: 2, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@fast"), group: "sorted-set", since: "1.2.0", summary: "Get the number of members in a sorted set", run: zcard},
		{name: "zcount", arity: 4, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@fast"), group: "sorted-set", since: "2.0.0", summary: "Count the members in a sorted set with scores within the given values", run: zcount},
		{name: "zlexcount", arity: 4, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@fast"), group: "sorted-set", since: "2.8.9", summary: "Count the number of members in a sorted set between a given lexicographical range", run: zcount},
		{name: "zrange", arity: -4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "1.2.0", summary: "Return a range of members in a sorted set", run: zrangeCmd},
		{name: "zrangestore", arity: -5, flags: flags("write", "denyoom"), firstKey: 1, lastKey: 2, step: 1, acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "6.2.0", summary: "Store a range of members from sorted set into another key", run: zrangeCmd},
		{name: "zrevrange", arity: -4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "1.2.0", summary: "Return a range of members in a sorted set, by index, with scores ordered from high to low", run: zrangeCmd},
		{name: "zrangebyscore", arity: -4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "1.0.5", summary: "Return a range of members in a sorted set, by score", run: zrangeCmd},
		{name: "zrevrangebyscore", arity: -4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "2.2.0", summary: "Return a range of members in a sorted set, by score, with scores ordered from high to low", run: zrangeCmd},
		{name: "zrangebylex", arity: -4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "2.8.9", summary: "Return a range of members in a sorted set, by lexicographical range", run: zrangeCmd},
		{name: "zrevrangebylex", arity: -4, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "2.8.9", summary: "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", run: zrangeCmd},
		{name: "zrank", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@fast"), group: "sorted-set", since: "2.0.0", summary: "Determine the index of a member in a sorted set", run: zrank},
		{name: "zrevrank", arity: 3, flags: flags("readonly", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@fast"), group: "sorted-set", since: "2.0.0", summary: "Determine the index of a member in a sorted set, with scores ordered from high to low", run: zrank},
		{name: "zrem", arity: -3, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@fast"), group: "sorted-set", since: "1.2.0", summary: "Remove one or more members from a sorted set", run: zrem},
		{name: "zremrangebyrank", arity: 4, flags: flags("write"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "2.0.0", summary: "Remove all members in a sorted set within the given indexes", run: zremrange},
		{name: "zremrangebyscore", arity: 4, flags: flags("write"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "1.2.0", summary: "Remove all members in a sorted set within the given scores", run: zremrange},
		{name: "zremrangebylex", arity: 4, flags: flags("write"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "2.8.9", summary: "Remove all members in a sorted set between the given lexicographical range", run: zremrange},
		{name: "zpopmin", arity: -2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@fast"), group: "sorted-set", since: "5.0.0", summary: "Remove and return members with the lowest scores in a sorted set", run: zpopmin},
		{name: "zpopmax", arity: -2, flags: flags("write", "fast"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@fast"), group: "sorted-set", since: "5.0.0", summary: "Remove and return members with the highest scores in a sorted set", run: zpopmax},
		{name: "zmpop", arity: -4, flags: flags("write", "movablekeys"), acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "7.0.0", summary: "Remove and return members with scores in a sorted set", run: zmpop, keys: numkeysAt(1)},
		{name: "bzpopmin", arity: -3, flags: flags("write", "noscript", "blocking", "fast"), firstKey: 1, lastKey: -2, step: 1, acl: flags("@write", "@sortedset", "@fast", "@blocking"), group: "sorted-set", since: "5.0.0", summary: "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", run: bzpopmin},
		{name: "bzpopmax", arity: -3, flags: flags("write", "noscript", "blocking", "fast"), firstKey: 1, lastKey: -2, step: 1, acl: flags("@write", "@sortedset", "@fast", "@blocking"), group: "sorted-set", since: "5.0.0", summary: "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", run: bzpopmax},
		{name: "bzmpop", arity: -5, flags: flags("write", "blocking", "movablekeys"), acl: flags("@write", "@sortedset", "@slow", "@blocking"), group: "sorted-set", since: "7.0.0", summary: "Remove and return members with scores in a sorted set or block until one is available", run: bzmpop, keys: numkeysAt(2)},
		{name: "zunion", arity: -3, flags: flags("readonly", "movablekeys"), acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "6.2.0", summary: "Add multiple sorted sets", run: zunion, keys: numkeysAt(1)},
		{name: "zunionstore", arity: -4, flags: flags("write", "denyoom", "movablekeys"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "2.0.0", summary: "Add multiple sorted sets and store the resulting sorted set in a new key", run: zunion, keys: storeKeys},
		{name: "zinter", arity: -3, flags: flags("readonly", "movablekeys"), acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "6.2.0", summary: "Intersect multiple sorted sets", run: zinter, keys: numkeysAt(1)},
		{name: "zinterstore", arity: -4, flags: flags("write", "denyoom", "movablekeys"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "2.0.0", summary: "Intersect multiple sorted sets and store the resulting sorted set in a new key", run: zinter, keys: storeKeys},
		{name: "zintercard", arity: -3, flags: flags("readonly", "movablekeys"), acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "7.0.0", summary: "Intersect multiple sorted sets and return the cardinality of the result", run: zintercard, keys: numkeysAt(1)},
		{name: "zdiff", arity: -3, flags: flags("readonly", "movablekeys"), acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "6.2.0", summary: "Subtract multiple sorted sets", run: zdiff, keys: numkeysAt(1)},
		{name: "zdiffstore", arity: -4, flags: flags("write", "denyoom", "movablekeys"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@write", "@sortedset", "@slow"), group: "sorted-set", since: "6.2.0", summary: "Subtract multiple sorted sets and store the resulting sorted set in a new key", run: zdiff, keys: storeKeys},
		{name: "zrandmember", arity: -2, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "6.2.0", summary: "Get one or multiple random elements from a sorted set", run: zrandmember},
		{name: "zscan", arity: -3, flags: flags("readonly"), firstKey: 1, lastKey: 1, step: 1, acl: flags("@read", "@sortedset", "@slow"), group: "sorted-set", since: "2.8.0", summary: "Incrementally iterate sorted sets elements and associated scores", run: zscan},
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
		cmd.noMulti = slices.Contains(cmd.flags, "no_multi")
		cmd.arityErr = fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.name)
	}
	t.all = slices.SortedFunc(slices.Values(cmds), func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return t
}

func flags(f ...string) []string { return f }

// namedCommands returns the commands named after the subcommand, nil for
// names it does not know, or every command when none is named.
func (c *call) namedCommands() []*command {
	if len(c.args) <= 2 {
		return commands.all
	}
	cmds := make([]*command, len(c.args)-2)
	for i, name := range c.args[2:] {
		cmds[i] = lookupFullName(name)
	}
	return cmds
}

// lookupFullName finds a command by the name COMMAND replies for it:
// "get", or a container's subcommand as "client|kill".
func lookupFullName(name []byte) *command {
	parent, sub, ok := bytes.Cut(name, []byte("|"))
	cmd := commands.lookup(parent)
	if !ok || cmd == nil {
		return cmd
	}
	if cmd.subs == nil {
		return nil
	}
	return cmd.subs.lookup(sub)
}

// commandInfo is COMMAND, and COMMAND INFO [name ...]: the description of
// each command, or a null for a name it does not know.
func commandInfo(c *call) {
	cmds := c.namedCommands()
	c.array(len(cmds))
	for _, cmd := range cmds {
		if cmd == nil {
			c.null()
		} else {
			c.commandEntry(cmd)
		}
	}
}

// commandEntry replies cmd's description, as Redis 7 does: name, arity,
// flags, first key, last key, key step, ACL categories, tips, key
// specifications and subcommands. This server has no tips or key
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
	c.setOf(len(cmd.acl))
	for _, a := range cmd.acl {
		c.simple(a)
	}
	c.setOf(0) // tips
	c.setOf(0) // key specifications
	subs := cmd.subs.sorted()
	c.setOf(len(subs))
	for _, sub := range subs {
		c.commandEntry(sub)
	}
}

func commandCount(c *call) { c.integer(int64(len(commands.all))) }

// commandList is COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN
// pattern]: the names of the commands and subcommands, all of them or
// those the filter keeps. No command is a module's.
func commandList(c *call) {
	keep := func(*command) bool { return true }
	switch {
	case len(c.args) == 2:
	case len(c.args) == 5 && eqFold(c.args[2], "filterby"):
		v := c.args[4]
		switch by := c.args[3]; {
		case eqFold(by, "module"):
			keep = func(*command) bool { return false }
		case eqFold(by, "aclcat"):
			cat := "@" + strings.ToLower(string(v))
			keep = func(cmd *command) bool { return slices.Contains(cmd.acl, cat) }
		case eqFold(by, "pattern"):
			keep = func(cmd *command) bool { return globMatch(v, []byte(cmd.name), true) }
		default:
			c.error(errSyntax)
			return
		}
	default:
		c.error(errSyntax)
		return
	}
	var names []string
	var walk func(cmds []*command)
	walk = func(cmds []*command) {
		for _, cmd := range cmds {
			if keep(cmd) {
				names = append(names, cmd.name)
			}
			walk(cmd.subs.sorted())
		}
	}
	walk(commands.all)
	c.array(len(names))
	for _, name := range names {
		c.bulkString(name)
	}
}

// commandGetkeys is COMMAND GETKEYS command [arg ...]: the keys the
// command would touch, found as EXEC finds them to lock their shards.
func commandGetkeys(c *call) {
	args := c.args[2:]
	cmd := commands.lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) > 1 {
		cmd = cmd.subs.lookup(args[1])
	}
	switch {
	case cmd == nil:
		c.errorText("ERR Invalid command specified")
		return
	case cmd.firstKey == 0 && cmd.keys == nil:
		c.errorText("ERR The command has no key arguments")
		return
	case !cmd.arityOK(len(args)):
		c.errorText("ERR Invalid number of arguments specified for command")
		return
	}
	keys, _ := cmd.keysOf(args)
	if len(keys) == 0 {
		c.errorText("ERR Invalid arguments specified for command")
		return
	}
	c.array(len(keys))
	for _, k := range keys {
		c.bulk(k)
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
	c.bulkString(cmd.since)
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

// storeKeys finds the keys of ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE
// destination numkeys key [key ...]: the destination and the sources.
func storeKeys(args [][]byte) ([][]byte, bool) {
	keys, _ := numkeysAt(2)(args)
	if len(keys) == 0 {
		return nil, false
	}
	return append([][]byte{args[1]}, keys...), false
}
