package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// commandCases are scripts of commands, one a line as redis-cli reads
// them, and what redis-cli --no-raw prints for them: Redis's own replies,
// errors included. Set REDIS_TEST_ADDR to the host:port of a scratch Redis
// 7 (it is flushed) to check them against the real thing; the expected
// outputs were recorded that way.
var commandCases = []struct {
	name      string
	resp3     bool // run redis-cli -3, which asks for RESP3 with HELLO 3
	unordered bool // Redis does not define the order: compare the lines sorted
	script    string
	want      string
}{
	{
		name: "connection",
		script: `
			PING
			PING hello
			PING a b
			ECHO "hello world"
			ECHO
			SELECT 0
			SELECT x
			QUIT extra
		`,
		want: `
			PONG
			"hello"
			(error) ERR wrong number of arguments for 'ping' command
			"hello world"
			(error) ERR wrong number of arguments for 'echo' command
			OK
			(error) ERR value is not an integer or out of range
		`,
	},
	{
		name: "unknown command",
		script: `
			FOO
			FOO bar "baz qux"
			CLIENT NOPE
			CONFIG
			CONFIG NOPE x
		`,
		want: `
			(error) ERR unknown command 'FOO', with args beginning with: 
			(error) ERR unknown command 'FOO', with args beginning with: 'bar' 'baz qux' 
			(error) ERR unknown subcommand 'NOPE'. Try CLIENT HELP.
			(error) ERR wrong number of arguments for 'config' command
			(error) ERR unknown subcommand 'NOPE'. Try CONFIG HELP.
		`,
	},
	{
		name: "hello",
		script: `
			HELLO 4
			HELLO x
			HELLO 2 AUTH bob secret
			HELLO 2 NOPE
			HELLO 2 SETNAME "a b"
			CLIENT GETNAME
		`,
		want: `
			(error) NOPROTO unsupported protocol version
			(error) ERR Protocol version is not an integer or out of range
			(error) WRONGPASS invalid username-password pair or user is disabled.
			(error) ERR Syntax error in HELLO option 'NOPE'
			(error) ERR Client names cannot contain spaces, newlines or special characters.
			(nil)
		`,
	},
	{
		name: "client names",
		script: `
			CLIENT GETNAME
			CLIENT SETNAME app
			CLIENT GETNAME
			CLIENT SETNAME "has space"
			CLIENT SETNAME
			CLIENT SETNAME ""
			CLIENT GETNAME
			CLIENT KILL 1.2.3.4:5
			CLIENT KILL ID 0
			CLIENT KILL ID 99999 SKIPME yes
			CLIENT KILL ID 1 SKIPME maybe
			CLIENT KILL ID
			CLIENT LIST ID x
		`,
		want: `
			(nil)
			OK
			"app"
			(error) ERR Client names cannot contain spaces, newlines or special characters.
			(error) ERR wrong number of arguments for 'client|setname' command
			OK
			(nil)
			(error) ERR No such client
			(error) ERR client-id should be greater than 0
			(integer) 0
			(error) ERR syntax error
			(error) ERR No such client
			ERR Invalid client ID
		`,
	},
	{
		name:      "config",
		unordered: true, // Redis replies several parameters in its hash table's order
		script: `
			CONFIG GET save
			CONFIG GET appendonly
			CONFIG GET SAVE APPENDONLY
			CONFIG GET nothing-like-this
			CONFIG GET
		`,
		want: `
			1) "save"
			2) ""
			1) "appendonly"
			2) "no"
			1) "APPENDONLY"
			2) "no"
			3) "SAVE"
			4) ""
			(empty array)
			(error) ERR wrong number of arguments for 'config|get' command
		`,
	},
	{
		name: "server",
		script: `
			DBSIZE
			SET a 1
			SET b 2
			DBSIZE
			FLUSHDB
			DBSIZE
			SET a 1
			FLUSHALL SYNC
			DBSIZE
			FLUSHALL ASYNC
			FLUSHALL nope
			DBSIZE x
		`,
		want: `
			(integer) 0
			OK
			OK
			(integer) 2
			OK
			(integer) 0
			OK
			OK
			(integer) 0
			OK
			(error) ERR syntax error
			(error) ERR wrong number of arguments for 'dbsize' command
		`,
	},
	{
		name: "set and get",
		script: `
			GET k
			SET k v
			GET k
			SET k "with space"
			GET k
			SET k ""
			GET k
			STRLEN k
			GET
			SET k
			SET k v extra
		`,
		want: `
			(nil)
			OK
			"v"
			OK
			"with space"
			OK
			""
			(integer) 0
			(error) ERR wrong number of arguments for 'get' command
			(error) ERR wrong number of arguments for 'set' command
			(error) ERR syntax error
		`,
	},
	{
		name: "set conditions",
		script: `
			SET k v NX
			SET k w NX
			GET k
			SET k w XX
			GET k
			SET other v XX
			EXISTS other
			SET k x NX XX
			SET k x GET
			SET new x GET
			SET k y NX GET
			SET none y XX GET
			EXISTS none
			LPUSH list a
			SET list x GET
			GET list
			SET list x
			TYPE list
		`,
		want: `
			OK
			(nil)
			"v"
			OK
			"w"
			(nil)
			(integer) 0
			(error) ERR syntax error
			"w"
			(nil)
			"x"
			(nil)
			(integer) 0
			(integer) 1
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			OK
			string
		`,
	},
	{
		name: "set expiry options",
		script: `
			SET k v EX 100
			TTL k
			SET k v PX 100000
			TTL k
			SET k v KEEPTTL
			TTL k
			SET k v
			TTL k
			SET k v EXAT 1
			EXISTS k
			SET k v PXAT 1
			EXISTS k
			SET k v EXAT 99999999999
			EXISTS k
			SET k v EX 0
			SET k v PX -5
			SET k v EX x
			SET k v EX
			SET k v EX 10 PX 10
			SET k v KEEPTTL EX 10
			SET k v EX 10 KEEPTTL
			SET k v EX 9223372036854775807
			SET k v nope
		`,
		want: `
			OK
			(integer) 100
			OK
			(integer) 100
			OK
			(integer) 100
			OK
			(integer) -1
			OK
			(integer) 0
			OK
			(integer) 0
			OK
			(integer) 1
			(error) ERR invalid expire time in 'set' command
			(error) ERR invalid expire time in 'set' command
			(error) ERR value is not an integer or out of range
			(error) ERR syntax error
			(error) ERR syntax error
			(error) ERR syntax error
			(error) ERR syntax error
			(error) ERR invalid expire time in 'set' command
			(error) ERR syntax error
		`,
	},
	{
		name: "setnx setex getdel",
		script: `
			SETNX k 1
			SETNX k 2
			GET k
			SETEX e 100 v
			TTL e
			SETEX e 0 v
			SETEX e x v
			GETDEL k
			GETDEL k
			EXISTS k
			LPUSH list a
			GETDEL list
		`,
		want: `
			(integer) 1
			(integer) 0
			"1"
			OK
			(integer) 100
			(error) ERR invalid expire time in 'setex' command
			(error) ERR value is not an integer or out of range
			"1"
			(nil)
			(integer) 0
			(integer) 1
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
		`,
	},
	{
		name: "mget mset",
		script: `
			MSET a 1 b 2 c 3
			MGET a b c nope
			MSET a 1 b
			LPUSH list x
			MGET a list
			MSET a x a y
			GET a
		`,
		want: `
			OK
			1) "1"
			2) "2"
			3) "3"
			4) (nil)
			(error) ERR wrong number of arguments for 'mset' command
			(integer) 1
			1) "1"
			2) (nil)
			OK
			"y"
		`,
	},
	{
		name: "counters",
		script: `
			INCR n
			INCR n
			INCRBY n 10
			DECR n
			DECRBY n 5
			INCRBY n -20
			GET n
			INCRBY n x
			INCRBY n 1.5
			SET n 9223372036854775807
			INCR n
			SET n -9223372036854775808
			DECR n
			DECRBY n -9223372036854775808
			SET n 1.5
			INCR n
			SET n 01
			INCR n
			SET n " 1"
			INCR n
			SET n abc
			INCR n
			LPUSH list a
			INCR list
		`,
		want: `
			(integer) 1
			(integer) 2
			(integer) 12
			(integer) 11
			(integer) 6
			(integer) -14
			"-14"
			(error) ERR value is not an integer or out of range
			(error) ERR value is not an integer or out of range
			OK
			(error) ERR increment or decrement would overflow
			OK
			(error) ERR increment or decrement would overflow
			(error) ERR decrement would overflow
			OK
			(error) ERR value is not an integer or out of range
			OK
			(error) ERR value is not an integer or out of range
			OK
			(error) ERR value is not an integer or out of range
			OK
			(error) ERR value is not an integer or out of range
			(integer) 1
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
		`,
	},
	{
		name: "append strlen getrange",
		script: `
			APPEND k Hello
			APPEND k ", World"
			GET k
			STRLEN k
			STRLEN nope
			GETRANGE k 0 4
			GETRANGE k -5 -1
			GETRANGE k 7 100
			GETRANGE k 0 -100
			GETRANGE k -100 2
			GETRANGE k 5 2
			GETRANGE k -1 -5
			GETRANGE nope 0 -1
			GETRANGE k x 1
			LPUSH list a
			APPEND list x
			STRLEN list
		`,
		want: `
			(integer) 5
			(integer) 12
			"Hello, World"
			(integer) 12
			(integer) 0
			"Hello"
			"World"
			"World"
			"H"
			"Hel"
			""
			""
			""
			(error) ERR value is not an integer or out of range
			(integer) 1
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
		`,
	},
	{
		name: "keys generic",
		script: `
			SET a 1
			SET b 2
			EXISTS a b nope a
			TYPE a
			TYPE nope
			DEL a nope b
			EXISTS a b
			DEL
			RPUSH l x
			SADD s x
			HSET h f v
			ZADD z 1 m
			TYPE l
			TYPE s
			TYPE h
			TYPE z
			DEL l s h z
		`,
		want: `
			OK
			OK
			(integer) 3
			string
			none
			(integer) 2
			(integer) 0
			(error) ERR wrong number of arguments for 'del' command
			(integer) 1
			(integer) 1
			(integer) 1
			(integer) 1
			list
			set
			hash
			zset
			(integer) 4
		`,
	},
	{
		name: "expire ttl persist",
		script: `
			SET k v
			TTL k
			PTTL k
			TTL nope
			PTTL nope
			EXPIRE k 100
			TTL k
			PERSIST k
			PERSIST k
			TTL k
			EXPIRE nope 100
			EXPIRE k x
			EXPIRE k 9223372036854775807
			PEXPIRE k 9223372036854775807
			EXPIRE k 100 NX
			EXPIRE k 200 NX
			EXPIRE k 50 GT
			EXPIRE k 300 GT
			TTL k
			EXPIRE k 400 LT
			EXPIRE k 10 LT
			TTL k
			EXPIRE k 10 XX
			SET p v
			EXPIRE p 10 XX
			EXPIRE p 10 NX XX
			EXPIRE p 10 GT LT
			EXPIRE p 10 NOPE
			EXPIRE k -1
			EXISTS k
			PEXPIRE p 0
			EXISTS p
		`,
		want: `
			OK
			(integer) -1
			(integer) -1
			(integer) -2
			(integer) -2
			(integer) 1
			(integer) 100
			(integer) 1
			(integer) 0
			(integer) -1
			(integer) 0
			(error) ERR value is not an integer or out of range
			(error) ERR invalid expire time in 'expire' command
			(error) ERR invalid expire time in 'pexpire' command
			(integer) 1
			(integer) 0
			(integer) 0
			(integer) 1
			(integer) 300
			(integer) 0
			(integer) 1
			(integer) 10
			(integer) 1
			OK
			(integer) 0
			(error) ERR NX and XX, GT or LT options at the same time are not compatible
			(error) ERR GT and LT options at the same time are not compatible
			(error) ERR Unsupported option NOPE
			(integer) 1
			(integer) 0
			(integer) 1
			(integer) 0
		`,
	},
	{
		name: "expiretime",
		script: `
			SET k v
			EXPIRETIME k
			PEXPIRETIME k
			EXPIRETIME nope
			PEXPIRETIME nope
			PEXPIREAT k 33177600000499
			EXPIRETIME k
			PEXPIRETIME k
			PEXPIREAT k 33177600000500
			EXPIRETIME k
		`,
		want: `
			OK
			(integer) -1
			(integer) -1
			(integer) -2
			(integer) -2
			(integer) 1
			(integer) 33177600000
			(integer) 33177600000499
			(integer) 1
			(integer) 33177600001
		`,
	},
	{
		name: "rename",
		script: `
			SET a 1
			EXPIRE a 100
			RENAME a b
			EXISTS a
			GET b
			TTL b
			SET c 3
			RENAME b c
			GET c
			RENAME c c
			GET c
			RENAME nope x
			RPUSH l x y
			RENAME l l2
			LRANGE l2 0 -1
		`,
		want: `
			OK
			(integer) 1
			OK
			(integer) 0
			"1"
			(integer) 100
			OK
			OK
			"1"
			OK
			"1"
			(error) ERR no such key
			(integer) 2
			OK
			1) "x"
			2) "y"
		`,
	},
	{
		name:      "keys patterns",
		unordered: true,
		script: `
			MSET hello 1 hallo 2 hxllo 3 hllo 4 heeeello 5 h*llo 6 other 7
			KEYS h?llo
			KEYS h*llo
			KEYS h[ae]llo
			KEYS h[^e]llo
			KEYS h[a-b]llo
			KEYS h\*llo
			KEYS nothing*
		`,
		want: `
			OK
			1) "h*llo"
			2) "hallo"
			3) "hxllo"
			4) "hello"
			1) "h*llo"
			2) "hallo"
			3) "hxllo"
			4) "hllo"
			5) "heeeello"
			6) "hello"
			1) "hallo"
			2) "hello"
			1) "h*llo"
			2) "hallo"
			3) "hxllo"
			1) "hallo"
			1) "h*llo"
			(empty array)
		`,
	},
	{
		name: "scan errors",
		script: `
			SCAN x
			SCAN 0 COUNT 0
			SCAN 0 COUNT x
			SCAN 0 MATCH
			SCAN 0 NOPE x
		`,
		want: `
			(error) ERR invalid cursor
			(error) ERR syntax error
			(error) ERR value is not an integer or out of range
			(error) ERR syntax error
			(error) ERR syntax error
		`,
	},
	{
		name: "lists",
		script: `
			RPUSH l a b c
			LPUSH l z y
			LLEN l
			LRANGE l 0 -1
			LRANGE l 1 2
			LRANGE l -2 -1
			LRANGE l -100 100
			LRANGE l 3 1
			LRANGE l 0 -100
			LRANGE l 10 20
			LRANGE l x 1
			LINDEX l 0
			LINDEX l -1
			LINDEX l 5
			LINDEX l -6
			LINDEX l x
			LRANGE nope 0 -1
			LLEN nope
			LINDEX nope 0
		`,
		want: `
			(integer) 3
			(integer) 5
			(integer) 5
			1) "y"
			2) "z"
			3) "a"
			4) "b"
			5) "c"
			1) "z"
			2) "a"
			1) "b"
			2) "c"
			1) "y"
			2) "z"
			3) "a"
			4) "b"
			5) "c"
			(empty array)
			(empty array)
			(empty array)
			(error) ERR value is not an integer or out of range
			"y"
			"c"
			(nil)
			(nil)
			(error) ERR value is not an integer or out of range
			(empty array)
			(integer) 0
			(nil)
		`,
	},
	{
		name: "list pops",
		script: `
			RPUSH l a b c d e
			LPOP l
			RPOP l
			LPOP l 2
			RPOP l 0
			RPOP l 10
			EXISTS l
			LPOP l
			LPOP l 2
			RPOP l -1
			LPOP l x
			LPOP l 1 2
			LPUSH l a
			SET s x
			LPUSH s a
			LPOP s
			LLEN s
			LRANGE s 0 1
		`,
		want: `
			(integer) 5
			"a"
			"e"
			1) "b"
			2) "c"
			(empty array)
			1) "d"
			(integer) 0
			(nil)
			(nil)
			(error) ERR value is out of range, must be positive
			(error) ERR value is out of range, must be positive
			(error) ERR wrong number of arguments for 'lpop' command
			(integer) 1
			OK
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
		`,
	},
	{
		name: "sets",
		script: `
			SADD s a b c
			SADD s a d
			SCARD s
			SISMEMBER s a
			SISMEMBER s zz
			SREM s a zz
			SREM s a
			SCARD s
			SREM nope a
			SCARD nope
			SISMEMBER nope a
			SMEMBERS nope
			SPOP nope
			SPOP nope 3
			SPOP s 0
			SPOP s -1
			SPOP s x
			SPOP s 1 2
			SREM s b c d
			EXISTS s
			SET str x
			SADD str a
			SMEMBERS str
		`,
		want: `
			(integer) 3
			(integer) 1
			(integer) 4
			(integer) 1
			(integer) 0
			(integer) 1
			(integer) 0
			(integer) 3
			(integer) 0
			(integer) 0
			(integer) 0
			(empty array)
			(nil)
			(empty array)
			(empty array)
			(error) ERR value is out of range, must be positive
			(error) ERR value is out of range, must be positive
			(error) ERR syntax error
			(integer) 3
			(integer) 0
			OK
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
		`,
	},
	{
		name:      "set members",
		unordered: true,
		script: `
			SADD s a b c
			SMEMBERS s
			SPOP s
			SPOP s 2
			EXISTS s
		`,
		want: `
			(integer) 3
			1) "c"
			2) "b"
			3) "a"
			"c"
			1) "b"
			2) "a"
			(integer) 0
		`,
	},
	{
		name: "hashes",
		script: `
			HSET h f 1
			HSET h f 2 g 3
			HSET h f
			HSET h f 1 g
			HGET h f
			HGET h nope
			HGET nope f
			HLEN h
			HLEN nope
			HDEL h f nope
			HDEL nope f
			HINCRBY h g 5
			HINCRBY h new -3
			HINCRBY h g x
			HSET h s abc
			HINCRBY h s 1
			HINCRBY h g 9223372036854775807
			HDEL h g new s
			EXISTS h
			HGETALL nope
			SET str x
			HSET str f v
			HGET str f
			HGETALL str
		`,
		want: `
			(integer) 1
			(integer) 1
			(error) ERR wrong number of arguments for 'hset' command
			(error) ERR wrong number of arguments for 'hset' command
			"2"
			(nil)
			(nil)
			(integer) 2
			(integer) 0
			(integer) 1
			(integer) 0
			(integer) 8
			(integer) -3
			(error) ERR value is not an integer or out of range
			(integer) 1
			(error) ERR hash value is not an integer
			(error) ERR increment or decrement would overflow
			(integer) 3
			(integer) 0
			(empty array)
			OK
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
		`,
	},
	{
		name:      "hash getall",
		resp3:     true,
		unordered: true,
		script: `
			HSET h f 1 g 2 e ""
			HGETALL h
			HGETALL nope
		`,
		want: `
			(integer) 3
			1# "f" => "1"
			2# "g" => "2"
			3# "e" => ""
			(empty hash)
		`,
	},
	{
		name: "sorted sets",
		script: `
			ZADD z 1 a 2 b 3 c
			ZADD z 1 a
			ZCARD z
			ZSCORE z b
			ZSCORE z nope
			ZSCORE nope a
			ZRANGE z 0 -1
			ZRANGE z 0 -1 WITHSCORES
			ZRANGE z 0 1 REV
			ZRANGE z -2 -1 WITHSCORES
			ZRANGE z 5 10
			ZRANGE z 0 -1 NOPE
			ZRANGE nope 0 -1
			ZREM z a nope
			ZREM nope a
			ZCARD z
			ZCARD nope
			ZADD z 2.5 d -1.25 e
			ZRANGE z 0 -1 WITHSCORES
			ZADD z inf top -inf bottom
			ZRANGE z 0 -1
			ZSCORE z top
			ZADD z x m
			ZADD z 1
			ZADD z 1 a 2
			SET str x
			ZADD str 1 a
			ZSCORE str a
		`,
		want: `
			(integer) 3
			(integer) 0
			(integer) 3
			"2"
			(nil)
			(nil)
			1) "a"
			2) "b"
			3) "c"
			1) "a"
			2) "1"
			3) "b"
			4) "2"
			5) "c"
			6) "3"
			1) "c"
			2) "b"
			1) "b"
			2) "2"
			3) "c"
			4) "3"
			(empty array)
			(error) ERR syntax error
			(empty array)
			(integer) 1
			(integer) 0
			(integer) 2
			(integer) 0
			(integer) 2
			1) "e"
			2) "-1.25"
			3) "b"
			4) "2"
			5) "d"
			6) "2.5"
			7) "c"
			8) "3"
			(integer) 2
			1) "bottom"
			2) "e"
			3) "b"
			4) "d"
			5) "c"
			6) "top"
			"inf"
			(error) ERR value is not a valid float
			(error) ERR wrong number of arguments for 'zadd' command
			(error) ERR syntax error
			OK
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
			(error) WRONGTYPE Operation against a key holding the wrong kind of value
		`,
	},
	{
		name: "zadd options",
		script: `
			ZADD z 1 a 2 b
			ZADD z NX 5 a 4 c
			ZADD z XX 5 a 4 d
			ZSCORE z a
			ZSCORE z d
			ZADD z CH 6 a 7 e
			ZADD z GT 1 a
			ZADD z GT CH 10 a
			ZADD z LT CH 1 a
			ZADD z INCR 2 a
			ZADD z INCR NX 2 a
			ZADD z INCR -2.5 new
			ZADD z NX XX 1 a
			ZADD z GT LT 1 a
			ZADD z GT NX 1 a
			ZADD z INCR 1 a 2 b
			ZADD nope XX 1 a
			EXISTS nope
			ZADD nope XX INCR 1 a
			ZADD z INCR inf a
			ZADD z INCR -inf a
		`,
		want: `
			(integer) 2
			(integer) 1
			(integer) 0
			"5"
			(nil)
			(integer) 2
			(integer) 0
			(integer) 1
			(integer) 1
			"3"
			(nil)
			"-2.5"
			(error) ERR XX and NX options at the same time are not compatible
			(error) ERR GT, LT, and/or NX options at the same time are not compatible
			(error) ERR GT, LT, and/or NX options at the same time are not compatible
			(error) ERR INCR option supports a single increment-element pair
			(integer) 0
			(integer) 0
			(nil)
			"inf"
			(error) ERR resulting score is not a number (NaN)
		`,
	},
	{
		name: "zpopmin",
		script: `
			ZADD z 3 c 1 a 2 b 4 d
			ZPOPMIN z
			ZPOPMIN z 2
			ZPOPMIN z 0
			ZPOPMIN z -1
			ZPOPMIN z x
			ZPOPMIN z 1 2
			ZPOPMIN z 10
			EXISTS z
			ZPOPMIN nope
			ZPOPMIN nope 2
		`,
		want: `
			(integer) 4
			1) "a"
			2) "1"
			1) "b"
			2) "2"
			3) "c"
			4) "3"
			(empty array)
			(error) ERR value is out of range, must be positive
			(error) ERR value is out of range, must be positive
			(error) ERR syntax error
			1) "d"
			2) "4"
			(integer) 0
			(empty array)
			(empty array)
		`,
	},
	{
		name:  "resp3 replies",
		resp3: true,
		script: `
			GET nope
			LPOP nope 2
			ZADD z 1.5 m 2 n
			ZSCORE z m
			ZSCORE z nope
			ZRANGE z 0 -1 WITHSCORES
			ZRANGE z 0 -1
			ZPOPMIN z
			ZPOPMIN z 5
			ZPOPMIN nope
			SADD s a
			SMEMBERS s
			SPOP s 1
			SPOP nope 2
			CONFIG GET save
			MGET nope s
			ZADD z2 INCR 1.5 a
			ZADD z2 XX INCR 1 b
			HGETALL nope
		`,
		want: `
			(nil)
			(nil)
			(integer) 2
			(double) 1.5
			(nil)
			1) 1) "m"
			   2) (double) 1.5
			2) 1) "n"
			   2) (double) 2
			1) "m"
			2) "n"
			1) "m"
			2) (double) 1.5
			1) 1) "n"
			   2) (double) 2
			(empty array)
			(integer) 1
			1~ "a"
			1~ "a"
			(empty set)
			1# "save" => ""
			1) (nil)
			2) (nil)
			(double) 1.5
			(nil)
			(empty hash)
		`,
	},
}

// TestCommands runs commandCases on this server and, where redis-server
// is installed, on Redis too, so that the recorded replies stay Redis's.
// REDIS_TEST_ADDR, the host:port of a scratch Redis 7.0 (it is flushed),
// runs them on that Redis alone.
func TestCommands(t *testing.T) {
	addrs := []string{os.Getenv("REDIS_TEST_ADDR")}
	if addrs[0] == "" {
		addrs[0] = startServer(t, config{}).addr()
		if hasTool("redis-server") {
			addrs = append(addrs, "unix:"+startRedis(t).sock)
		}
	}
	for _, tc := range commandCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, addr := range addrs {
				args := []string{"--no-raw"}
				if tc.resp3 {
					args = append(args, "-3")
				}
				var out string
				if sock, ok := strings.CutPrefix(addr, "unix:"); ok {
					out = runCli(t, tool(t, "redis-cli"), "FLUSHALL\n"+dedent(tc.script), append(args, "-s", sock)...)
				} else {
					out = run(t, "redis-cli", addr, "FLUSHALL\n"+dedent(tc.script), args...)
				}
				out, ok := strings.CutPrefix(out, "OK\n")
				assert.True(t, ok, "FLUSHALL failed: %q", out)
				if tc.unordered {
					assert.Equal(t, unordered(dedent(tc.want)), unordered(out), addr)
				} else {
					assert.Equal(t, dedent(tc.want), out, addr)
				}
			}
		})
	}
}
