package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// familyScripts are commands of each family, errors included, whose
// replies this server must give byte for byte as Redis 7.0 gives them.
// Each runs on one connection after FLUSHALL, in RESP2 and again in
// RESP3. Replies whose order Redis leaves open (the members of a set or
// a hash of several) are kept out, as are random ones.
var familyScripts = map[string]string{
	"strings": `
		GETSET k v
		GETSET k w
		LPUSH l a
		GETSET l x
		GETEX k
		GETEX k EX 100
		TTL k
		GETEX k PERSIST
		TTL k
		GETEX k PX 0
		GETEX k EX 10 PX 10
		GETEX k FOO
		GETEX nope EX 10
		GETEX nope EX x
		GETEX k EXAT 1
		EXISTS k
		PSETEX p 100000 v
		TTL p
		PSETEX p 0 v
		PSETEX p x v
		SETRANGE s 5 abc
		GET s
		SETRANGE s 0 X
		SETRANGE s -1 x
		SETRANGE e 0 ""
		EXISTS e
		SETRANGE l 0 x
		SETRANGE s 1 ""
		MSETNX a 1 b 2
		MSETNX b 3 c 4
		MGET a b c
		MSETNX a
		MSETNX a 1 b
		INCRBYFLOAT f 0.1
		INCRBYFLOAT f 0.2
		INCRBYFLOAT f 1e308
		INCRBYFLOAT f 1e308
		SET f 10.5
		INCRBYFLOAT f 0.1
		INCRBYFLOAT f x
		SET f abc
		INCRBYFLOAT f 1
		SET f 3
		INCRBYFLOAT f -3
		SET f 5.0e3
		INCRBYFLOAT f 2.0e2
		INCRBYFLOAT f inf
		SET f " 1"
		INCRBYFLOAT f 1
		SET f 1.5
		INCRBYFLOAT f 1.5
		INCRBYFLOAT f -0.00000000000000001
		INCRBYFLOAT l 1
		GETDEL a
		GETDEL a
	`,
	"bits": `
		SETBIT b 7 1
		GETBIT b 7
		GETBIT b 100
		SETBIT b 100 1
		STRLEN b
		SETBIT b -1 1
		SETBIT b 1 2
		SETBIT b x 1
		GETBIT nope 1
		GETBIT b -1
		SET s foobar
		BITCOUNT s
		BITCOUNT s 0 0
		BITCOUNT s 1 1
		BITCOUNT s 1 1 BYTE
		BITCOUNT s 5 30 BIT
		BITCOUNT s -2 -1
		BITCOUNT s 0
		BITCOUNT s 0 -1 FOO
		BITCOUNT nope
		BITCOUNT nope 0 x
		BITCOUNT s 3 1
		BITCOUNT s 0 x
		SET a abc
		SET bb xyz0
		BITOP AND dest a bb
		GET dest
		BITOP OR dest a bb
		GET dest
		BITOP XOR dest a bb
		GET dest
		BITOP NOT dest a
		GET dest
		BITOP NOT dest a bb
		BITOP FOO dest a
		BITOP AND dest nope
		EXISTS dest
		SET z "\xff\xf0\x00"
		BITPOS z 0
		BITPOS z 1 2
		BITPOS z 0 0 -1 BIT
		BITPOS z 1 7 15 BIT
		BITPOS z 1 -1
		BITPOS nope 0
		BITPOS nope 1
		BITPOS nope 0 x
		SET ones "\xff\xff"
		BITPOS ones 0
		BITPOS ones 0 0 -1
		BITPOS ones 0 1
		BITPOS z 2
		BITPOS a 0 0 x
		LPUSH l x
		GETBIT l 0
		BITCOUNT l
		BITOP AND dest l
	`,
	"lcs": `
		SET a abc
		SET bb xyz0
		LCS a bb
		SET k1 ohmytext
		SET k2 mynewtext
		LCS k1 k2
		LCS k1 k2 LEN
		LCS k1 k2 IDX
		LCS k1 k2 IDX MINMATCHLEN 4 WITHMATCHLEN
		LCS k1 k2 LEN IDX
		LCS k1 nope
		LCS k1 k2 FOO
		LPUSH l x
		LCS a l
		LCS a a MINMATCHLEN x
		SET x "abcXdefYghiZjk"
		SET y "abcQdefRghiSjk"
		LCS x y IDX MINMATCHLEN 3
		LCS x y IDX MINMATCHLEN 2 WITHMATCHLEN
		LCS x y IDX
	`,
	"keys": `
		SET k v
		UNLINK k nope k
		TOUCH a b
		SET a 1
		TOUCH a a b
		RENAMENX a b
		RENAMENX a a
		RENAMENX nope x
		SET b 2
		RENAMENX b a
		RENAMENX b b
		EXPIREAT a 1
		EXISTS a
		SET a 1
		EXPIREAT a 99999999999
		EXPIRETIME a
		PEXPIRETIME a
		EXPIRETIME nope
		SET p v
		EXPIRETIME p
		PEXPIREAT p 99999999999000 NX
		PEXPIREAT p 99999999999000 NX
		PEXPIREAT p 1 GT
		PEXPIREAT p 1 LT
		EXISTS p
		EXPIREAT x y
		EXPIREAT k 9223372036854775807
		SET src hello
		COPY src dst
		GET dst
		COPY src dst
		COPY src dst REPLACE
		COPY src dst DB 0
		COPY src dst DB x
		COPY nope dst
		COPY src src
		COPY src dst FOO
		RPUSH l a b
		COPY l l2
		LRANGE l2 0 -1
		SET one 1
		DEL l l2 src dst b a
		RANDOMKEY
		DEL one
		RANDOMKEY
	`,
	"lists": `
		RPUSH l a b c b a
		LINSERT l BEFORE b X
		LINSERT l AFTER a Y
		LINSERT l AFTER nope Y
		LINSERT l MIDDLE a Y
		LINSERT nope BEFORE a Y
		LRANGE l 0 -1
		LPOS l b
		LPOS l b RANK 2
		LPOS l b RANK -1
		LPOS l b COUNT 0
		LPOS l b COUNT 2 RANK -1
		LPOS l a MAXLEN 1
		LPOS l a MAXLEN 2 COUNT 0
		LPOS l z
		LPOS l z COUNT 0
		LPOS l b RANK 0
		LPOS l b COUNT -1
		LPOS l b MAXLEN -1
		LPOS l b FOO
		LPOS l b RANK
		LPOS nope a
		LPOS nope a COUNT 0
		LPUSHX nope a
		RPUSHX nope a
		LPUSHX l p1 p2
		RPUSHX l r1
		LREM l 0 b
		LREM l 1 a
		LREM l -1 a
		LREM l 0 zzz
		LREM l x a
		LRANGE l 0 -1
		LSET l 0 first
		LSET l -1 last
		LSET l 100 x
		LSET nope 0 x
		LSET l x y
		LRANGE l 0 -1
		LTRIM l 1 -2
		LRANGE l 0 -1
		LTRIM l 5 1
		EXISTS l
		RPUSH m 1 2 3 4 5
		LTRIM m -2 100
		LRANGE m 0 -1
		LTRIM nope 0 1
		SET s v
		LPUSHX s a
		LINSERT s BEFORE a b
		LPOS s a
		LREM s 0 a
		LSET s 0 a
		LTRIM s 0 1
		RPUSH r a
		LREM r 1 a
		EXISTS r
	`,
	"sets": `
		SADD a 1 2 3 4
		SADD b 3 4 5
		SADD c 4 9
		SINTER a b c
		SINTER a nope
		SDIFF nope a
		SINTERCARD 2 a b
		SINTERCARD 2 a b LIMIT 1
		SINTERCARD 0 a
		SINTERCARD 3 a b
		SINTERCARD 1 a LIMIT -1
		SINTERCARD 1 a LIMIT x
		SINTERCARD 1 a FOO 1
		SINTERSTORE d a b
		SCARD d
		SINTERSTORE d a nope
		EXISTS d
		SUNIONSTORE d a c
		SDIFFSTORE d a b c
		SCARD d
		SMISMEMBER a 1 9 2
		SMISMEMBER nope 1
		SMOVE a b 1
		SMOVE a b 1
		SMOVE nope b 1
		SMOVE a a 2
		SMOVE a a 99
		SET s v
		SMOVE a s 2
		SMOVE s a 2
		SINTER a s
		SINTERSTORE s2 s a
		SUNION s
		SRANDMEMBER nope
		SRANDMEMBER nope 5
		SRANDMEMBER a 0
		SRANDMEMBER a x
		SRANDMEMBER a 1 2
		SSCAN a 0 COUNT 0
		SSCAN a x
		SSCAN nope 0
		SSCAN a 0 MATCH 2
		SSCAN a 0 NOVALUES
		SADD one x
		SMOVE one two x
		EXISTS one
		SMEMBERS two
		SPOP two
		SPOP two
	`,
	"hashes": `
		HSET h a 1
		HKEYS h
		HVALS h
		HKEYS nope
		HSET h b 2
		HMGET h a x b
		HMGET nope a
		HMSET h c 3
		HMSET h c
		HSETNX h a 9
		HSETNX h d 4
		HEXISTS h a
		HEXISTS h z
		HINCRBYFLOAT h a 0.5
		HINCRBYFLOAT h z 1e2
		HINCRBYFLOAT h a x
		HSET h s abc
		HINCRBYFLOAT h s 1
		HSTRLEN h s
		HSTRLEN h nope
		HSTRLEN nope f
		HRANDFIELD nope
		HRANDFIELD nope 2
		HRANDFIELD h 0
		HRANDFIELD h x
		HRANDFIELD h 1 WITHVALUES FOO
		HRANDFIELD h -9223372036854775808 WITHVALUES
		HSCAN h 0 COUNT 0
		HSCAN nope 0
		HINCRBYFLOAT new f 1.5
		HGETALL new
		HRANDFIELD new
		HRANDFIELD new -2 WITHVALUES
		HSCAN new 0
		SET str v
		HKEYS str
		HMSET str a b
		HSTRLEN str a
	`,
	"sorted sets": `
		ZADD z 1 a 2 b 3 c 4 d 5 e
		ZCOUNT z 2 4
		ZCOUNT z (2 4
		ZCOUNT z -inf +inf
		ZCOUNT z x 4
		ZCOUNT nope 0 1
		ZINCRBY z 1.5 a
		ZINCRBY z x a
		ZINCRBY n 1 m
		ZRANK z c
		ZRANK z nope
		ZREVRANK z c
		ZRANK nope a
		ZRANGEBYSCORE z 2 4
		ZRANGEBYSCORE z (2 (4 WITHSCORES
		ZRANGEBYSCORE z -inf +inf LIMIT 1 2
		ZRANGEBYSCORE z -inf +inf LIMIT 1
		ZRANGEBYSCORE z -inf +inf LIMIT -1 2
		ZRANGEBYSCORE z -inf +inf LIMIT 0 -1
		ZRANGEBYSCORE z 4 2
		ZREVRANGEBYSCORE z 4 2
		ZREVRANGEBYSCORE z +inf -inf WITHSCORES LIMIT 1 1
		ZREVRANGE z 0 1 WITHSCORES
		ZRANGE z 2 4 BYSCORE
		ZRANGE z 4 2 BYSCORE REV
		ZRANGE z (1 +inf BYSCORE LIMIT 0 2
		ZRANGE z 0 -1 LIMIT 0 2
		ZRANGE z 0 1 BYSCORE BYLEX
		ZRANGE z 0 1 FOO
		ZRANGE z 0 1 REV REV
		ZRANGE z -2 -1 REV WITHSCORES
		ZADD lex 0 a 0 b 0 c 0 d
		ZRANGEBYLEX lex [b (d
		ZRANGEBYLEX lex - +
		ZRANGEBYLEX lex a c
		ZREVRANGEBYLEX lex + [b LIMIT 0 1
		ZRANGE lex [a [c BYLEX
		ZRANGE lex [c [a BYLEX REV
		ZRANGE lex - + BYLEX WITHSCORES
		ZLEXCOUNT lex - +
		ZLEXCOUNT lex (a [c
		ZLEXCOUNT lex x y
		ZREMRANGEBYLEX lex [a (c
		ZRANGE lex 0 -1
		ZREMRANGEBYRANK z 0 0
		ZREMRANGEBYSCORE z (3 4
		ZRANGE z 0 -1 WITHSCORES
		ZMSCORE z a c nope
		ZMSCORE nope a
		ZRANGESTORE dst z 0 -1
		ZRANGE dst 0 -1 WITHSCORES
		ZRANGESTORE dst nope 0 -1
		EXISTS dst
		ZRANGESTORE dst z 0 -1 WITHSCORES
		ZRANGESTORE dst z 5 (10 BYSCORE
		ZADD z1 1 a 2 b
		ZADD z2 10 b 20 c
		SADD s1 a c
		ZUNION 2 z1 z2 WITHSCORES
		ZINTER 2 z1 z2 WITHSCORES
		ZDIFF 2 z1 z2 WITHSCORES
		ZUNION 2 z1 z2 WEIGHTS 2 3 AGGREGATE MAX WITHSCORES
		ZUNION 2 z1 z2 AGGREGATE MIN
		ZINTER 2 z1 s1 WITHSCORES
		ZUNIONSTORE out 2 z1 z2
		ZRANGE out 0 -1 WITHSCORES
		ZINTERSTORE out 2 z1 nope
		EXISTS out
		ZDIFFSTORE out 1 z1
		ZINTERSTORE out 2 z1 z2 WEIGHTS 2 2
		ZRANGE out 0 -1 WITHSCORES
		ZINTERCARD 2 z1 z2
		ZINTERCARD 2 z1 z2 LIMIT 0
		ZINTERCARD 0 z1
		ZINTERCARD 2 z1 z2 LIMIT -1
		ZUNION 0 z1
		ZUNION 2 z1
		ZUNION 1 z1 WEIGHTS x
		ZUNION 1 z1 AGGREGATE FOO
		ZUNIONSTORE out 1 z1 WITHSCORES
		ZDIFF 1 z1 WEIGHTS 1
		ZRANDMEMBER nope
		ZSCAN z1 0
		ZPOPMIN z1 -1
		ZADD z1 nan x
		ZINCRBY z1 inf a
		ZINCRBY z1 -inf a
		ZADD inf 1 a
		ZADD inf +inf a
		ZRANGE inf 0 -1 WITHSCORES
		ZADD neg -0 a
		ZSCORE neg a
		SET s v
		ZUNION 2 z1 s
		ZRANGE s 0 1
		ZRANK s a
		ZADD fl 0.1 a 1e-7 b 123456789012345678 c
		ZRANGE fl 0 -1 WITHSCORES
		ZSCAN fl 0
		ZMSCORE fl a b
		ZINCRBY fl 0.2 a
	`,
	"sort": `
		RPUSH l 3 1 2 10
		SORT l
		SORT l DESC
		SORT l ALPHA
		SORT l LIMIT 1 2
		SORT l LIMIT -5 2
		SORT l LIMIT 10 2
		SET w_1 30
		SET w_2 10
		SET w_3 20
		HSET h_1 f a
		HSET h_2 f b
		SORT l BY w_*
		SORT l BY w_* GET # GET h_*->f
		SORT l BY nosort GET w_*
		SORT l BY w_* STORE out
		LRANGE out 0 -1
		SORT l GET h_*->f STORE out2
		LRANGE out2 0 -1
		SADD s b a c
		SORT s ALPHA
		SORT s BY nosort STORE sorted
		LRANGE sorted 0 -1
		ZADD z 3 a 1 b 2 c
		SORT z BY nosort
		SORT z BY nosort LIMIT 1 1
		SORT z BY nosort DESC
		SORT z ALPHA DESC
		SORT nope
		SORT nope STORE d
		SORT_RO l STORE d
		SORT_RO l BY w_*
		SORT l LIMIT 1
		SORT l FOO
		SET str v
		SORT str
		RPUSH mixed 1 x 2
		SORT mixed
		SORT l BY w_*->f
		SORT l GET nostar
		SORT l BY nosort DESC
		RPUSH e x
		SORT l BY w_* LIMIT 0 0 STORE e
		EXISTS e
	`,
	"commands": `
		COMMAND GETKEYS SET a b
		COMMAND GETKEYS MSET a 1 b 2
		COMMAND GETKEYS PING
		COMMAND GETKEYS NOPE a
		COMMAND GETKEYS GET a b
		COMMAND GETKEYS ZUNIONSTORE d 2 a b WEIGHTS 1 2
		COMMAND GETKEYS BLMPOP 0 2 x y LEFT
		COMMAND GETKEYS SORT k BY w* GET x* STORE d
		COMMAND GETKEYS LMPOP 5 a LEFT
		COMMAND GETKEYS LMPOP x a LEFT
		COMMAND GETKEYS CLIENT KILL x
		COMMAND GETKEYS PING a
		COMMAND GETKEYS
		COMMAND LIST FILTERBY PATTERN zrangeb*lex
		COMMAND LIST FILTERBY ACLCAT nope
		COMMAND LIST FILTERBY MODULE foo
		COMMAND LIST FILTERBY FOO x
		COMMAND LIST FOO
		COMMAND LIST FILTERBY
	`,
	"config": `
		CONFIG SET timeout 30
		CONFIG GET timeout
		CONFIG SET timeout x
		CONFIG SET timeout -1
		CONFIG SET nope 1
		CONFIG SET timeout 1 maxclients
		CONFIG SET timeout 1 timeout 2
		CONFIG SET databases 4
		CONFIG SET appendonly maybe
		CONFIG SET client-output-buffer-limit "pubsub 1mb"
		CONFIG SET client-output-buffer-limit "foo 1 1 1"
		CONFIG SET TIMEOUT 0 hz 10
		CONFIG GET TIMEOUT
		CONFIG SET hz 0
		CONFIG GET hz
		CONFIG SET hz 1000
		CONFIG GET hz
		CONFIG SET hz -1
		CONFIG SET hz 10
		CONFIG RESETSTAT
		CONFIG REWRITE
		CONFIG SET save ""
		CONFIG SET maxmemory 0
		CONFIG GET maxmemory
		CONFIG SET maxmemory-policy noeviction
		CONFIG GET maxmemory-policy
		TIME x
	`,
}

func TestFamiliesAsRedis(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	for name, script := range familyScripts {
		t.Run(name, func(t *testing.T) {
			script := strings.ReplaceAll(dedent(script), "\n", "\r\n")
			sameAsRedis(t, ts, r, "FLUSHALL\r\n"+script)
			sameAsRedis(t, ts, r, "HELLO 3\r\nFLUSHALL\r\n"+script)
		})
	}
}

// TestFamiliesWithRedisCli runs the same scripts through redis-cli, as a
// person would type them, against this server and Redis, in RESP2 and
// RESP3, and compares what redis-cli prints.
func TestFamiliesWithRedisCli(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	cli := tool(t, "redis-cli")
	for name, script := range familyScripts {
		t.Run(name, func(t *testing.T) {
			for _, proto := range []string{"-2", "-3"} {
				script := "FLUSHALL\n" + dedent(script)
				ours := runCli(t, cli, script, "-h", ts.host, "-p", ts.port, proto)
				theirs := runCli(t, cli, script, "-s", r.sock, proto)
				assert.Equal(t, theirs, ours, "redis-cli %s", proto)
			}
		})
	}
}

// runCli runs redis-cli on script and returns what it printed, less the
// lines in which it reports a command that took over half a second
// ("(0.64s)"), which are its clock's, not the server's reply.
func runCli(t *testing.T, cli, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command(cli, append([]string{"--no-raw"}, args...)...)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.Output()
	require.NoError(t, err)
	return slowCommand.ReplaceAllString(string(out), "")
}

var slowCommand = regexp.MustCompile(`(?m)^\([0-9]+\.[0-9]+s\)\n`)
