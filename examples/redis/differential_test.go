package main

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// diffScripts are the differential corpus: scripts of commands, one a
// line, that TestDifferential sends to a real redis-server and to this
// server, inline as redis-cli's interactive users type them and as RESP
// arrays as client libraries send them, in RESP2 and after HELLO 3, and
// whose replies must be the same bytes. Each starts after FLUSHALL on a
// connection of its own. Words are split at spaces; a word in double
// quotes keeps its spaces (no escapes: the inline quoting rules have
// their own vectors in protocolCases and diffRaw). Replies Redis does not
// define (random picks, clocks, the order of a set's or a large hash's
// members) are kept out, or only their shape is compared, as
// diffDifferences lists.
var diffScripts = []struct{ name, script string }{
	{"strings", `
		SET k hello
		GETDEL k
		GETDEL k
		LPUSH l a
		GETDEL l
		GETDEL
		GETDEL a b
		SET k v EX 100
		GETEX k PERSIST
		TTL k
		GETEX k EX 0
		GETEX k EX -1
		GETEX k PX 9223372036854775807
		GETEX k EX 9223372036854775807
		GETEX k EXAT 9999999999
		GETEX k PXAT 0
		GETEX k PERSIST EX 1
		GETEX l
		SETRANGE s 0 ""
		SETRANGE s 3 ab
		GET s
		STRLEN s
		SETRANGE s 536870912 x
		SETRANGE s 536870911 ""
		SETRANGE s x y
		SETRANGE s 0
		GETRANGE s 0 -1
		GETRANGE s -100 100
		GETRANGE s 4 2
		GETRANGE s -1 -2
		GETRANGE nope 0 -1
		GETRANGE s 0 x
		APPEND s cd
		APPEND l x
		INCRBYFLOAT f 10.50
		INCRBYFLOAT f 0.1
		INCRBYFLOAT f -0.6
		INCRBYFLOAT f 5.0e3
		INCRBYFLOAT f 1.23456789012345678
		INCRBYFLOAT g 3
		INCRBYFLOAT g -3
		GET g
		INCRBYFLOAT g 0x1p-16445
		INCRBYFLOAT g 0x1p-16446
		INCRBYFLOAT g 1e-4950
		INCRBYFLOAT g 0e-9999
		INCRBYFLOAT g 1e4932
		INCRBYFLOAT g 1.2e4932
		INCRBYFLOAT g inf
		INCRBYFLOAT g nan
		INCRBYFLOAT g " 1"
		INCRBYFLOAT g 1e-5
		INCRBYFLOAT g 0x10
		INCRBYFLOAT g 0X1p-2
		INCRBYFLOAT g 0x.8
		INCRBYFLOAT g -0x1.8P1
		INCRBYFLOAT g 0x
		INCRBYFLOAT g 0x_1
		INCRBYFLOAT g 1_0
		INCRBYFLOAT g 0b1
		INCRBYFLOAT g +.5e+1
		INCRBYFLOAT g 5.
		INCRBYFLOAT g 1e
		INCRBYFLOAT g infinity
		INCRBYFLOAT g -INF
		INCRBYFLOAT g 1e-5000
		INCRBYFLOAT g 1e5000
		INCRBYFLOAT g "1 "
		INCRBYFLOAT g ""
		GET g
		SET n 9223372036854775807
		INCR n
		INCRBY n -1
		SET n -9223372036854775808
		DECR n
		DECRBY n -9223372036854775808
		INCRBY n 9223372036854775808
		INCRBY n abc
		SET n " 1"
		INCR n
		SET n 007
		INCR n
		SET n 1.0
		INCR n
		SETNX n 1
		SETEX n 0 v
		SETEX n -5 v
		SETEX n 10
		SET k v GET
		SET k w NX GET
		SET k x XX GET
		SET l v GET
		SET k v KEEPTTL EX 10
		SET k v NX XX
		SET k v EX 0
		SET k v PX -1
		SET k v EX abc
		SET k v EXAT 1 PXAT 2
		MSET a 1 b
		MGET a nope l
	`},
	{"lcs", `
		MSET a ohmytext b mynewtext
		LCS a b
		LCS a b LEN
		LCS a b IDX
		LCS a b IDX MINMATCHLEN 4
		LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN
		LCS a b IDX WITHMATCHLEN
		LCS a b LEN IDX
		LCS a nope
		LCS nope nope2 IDX
		LCS a b FOO
		LCS a b MINMATCHLEN x
		LPUSH l x
		LCS a l
		LCS a
	`},
	{"bits", `
		SET b foobar
		BITCOUNT b
		BITCOUNT b 0 0
		BITCOUNT b 1 1
		BITCOUNT b 1 -1
		BITCOUNT b -2 -1
		BITCOUNT b 5 1
		BITCOUNT b 0 -100
		BITCOUNT b -100 -100
		BITCOUNT b 0 100
		BITCOUNT b 1 5 BIT
		BITCOUNT b 5 30 BIT
		BITCOUNT b 0 -1 BYTE
		BITCOUNT b 0 -1 bit
		BITCOUNT b 0 -1 NIBBLE
		BITCOUNT b 0
		BITCOUNT b x 1
		BITCOUNT nope
		BITCOUNT nope 0 -1
		SET z "\xff\xf0\x00"
		SET z3 abc
		SETBIT y 7 1
		SETBIT y 0 1
		SETBIT y 0 0
		GETBIT y 7
		GETBIT y 100
		SETBIT y 4294967296 1
		SETBIT y -1 1
		SETBIT y 1 2
		GETBIT y x
		BITPOS y 1
		BITPOS y 0
		BITPOS y 1 1
		BITPOS y 1 0 0 BIT
		BITPOS y 1 0 -1 BIT
		BITPOS y 0 0 -1
		BITPOS y 0 0
		BITPOS y 2
		BITPOS nope 0
		BITPOS nope 1
		SET ff "zzz"
		SETRANGE ones 0 "~~~"
		BITPOS b 1 2 -1
		BITPOS b 0 2 1
		BITPOS b 1 -1 -2
		BITPOS b 1 7 15 BIT
		BITPOS b 1 0 -1 FOO
		BITPOS b 1 x
		BITOP AND dest b y
		GET dest
		BITOP OR dest b y nope
		GET dest
		BITOP XOR dest b b
		STRLEN dest
		BITOP NOT dest b
		STRLEN dest
		BITOP NOT dest b y
		BITOP AND empty nope nope2
		EXISTS empty
		BITOP FOO dest b
		BITOP AND dest
		LPUSH l x
		BITOP AND dest b l
		BITCOUNT l
		GETBIT l 0
	`},
	{"keys", `
		SET a 1
		COPY a b
		COPY a b
		COPY a b REPLACE
		COPY a b DB 0
		COPY a b DB 1
		COPY a b FOO
		COPY nope b
		COPY a a
		GET b
		RPUSH l 1 2 3
		COPY l l2
		LRANGE l2 0 -1
		RENAMENX a b
		RENAMENX a c
		RENAMENX nope c
		RENAMENX c c
		RENAME c c
		RENAME nope x
		EXISTS a c
		EXISTS c c c
		TOUCH c l nope
		TOUCH
		TYPE c
		TYPE l
		TYPE nope
		SADD s x
		TYPE s
		HSET h f v
		TYPE h
		ZADD z 1 m
		TYPE z
		EXPIRETIME c
		EXPIRETIME nope
		PEXPIRETIME c
		EXPIREAT c 4000000000
		EXPIRETIME c
		PEXPIRETIME c
		PEXPIREAT c 4000000000123
		PEXPIRETIME c
		EXPIRETIME c
		EXPIRE c 100 NX
		EXPIRE c 100 XX
		EXPIRE c 200 GT
		EXPIRE c 100000000000 GT
		EXPIRE c 100 LT
		EXPIRE c 100 NX XX
		EXPIRE c 100 GT LT
		EXPIRE c 100 FOO
		EXPIRE c x
		EXPIRE c 9223372036854775807
		PEXPIRE c 9223372036854775807
		EXPIRE a 100
		PERSIST c
		PERSIST c
		TTL c
		PTTL nope
		EXPIRE l -1
		EXISTS l
		DEL
		DEL nope nope2
		UNLINK b s
		KEYS l*
		KEYS *nope*
		KEYS [a-
		OBJECT ENCODING nope
		OBJECT FOO
		OBJECT
		DBSIZE
	`},
	{"hashes", `
		HSET h
		HSET h f
		HSET h f v g
		HSET h f v g w
		HSET h f v2
		HSETNX h f x
		HSETNX h n 1
		HMSET h a 1 b 2
		HMSET h a
		HGET h f
		HGET h nope
		HGET nope f
		HMGET h f nope a
		HMGET nope a b
		HLEN h
		HLEN nope
		HEXISTS h f
		HEXISTS h nope
		HSTRLEN h f
		HSTRLEN h nope
		HDEL h f nope a
		HDEL nope f
		HINCRBY h n 10
		HINCRBY h n x
		HINCRBY h g 1
		HINCRBY h n 9223372036854775807
		HINCRBYFLOAT h n 1.5
		HINCRBYFLOAT h fl 1e2
		HINCRBYFLOAT h fl 0.1
		HINCRBYFLOAT h fl x
		HINCRBYFLOAT h g inf
		HSET h one 1
		HINCRBYFLOAT h one 0
		HGETALL nope
		HKEYS nope
		HVALS nope
		DEL h
		HSET h only 1
		HGETALL h
		HKEYS h
		HVALS h
		HRANDFIELD nope
		HRANDFIELD nope 3
		HRANDFIELD h
		HRANDFIELD h 1 WITHVALUES
		HRANDFIELD h -2
		HRANDFIELD h -2 WITHVALUES
		HRANDFIELD h 0
		HRANDFIELD h x
		HRANDFIELD h 1 FOO
		HSCAN h 0
		HSCAN h x
		HSCAN h 0 COUNT 0
		SET str v
		HGET str f
		HSET str f v
		HLEN str
	`},
	{"hash order", `
		HSET h b 1 a 2 c 3
		HGETALL h
		HKEYS h
		HVALS h
		HSCAN h 0
		HSCAN h 0 MATCH [ab] COUNT 1
		HRANDFIELD h 3
		HRANDFIELD h 10 WITHVALUES
		HSET h a 9 d 4
		HGETALL h
		HDEL h b
		HGETALL h
		HSET h b 5
		HKEYS h
		HSETNX h e 6
		HSETNX h a 12345678901234567890123456789012345678901234567890123456789012345
		OBJECT ENCODING h
		HINCRBY h n 5
		HINCRBYFLOAT h a 0.5
		HMSET h z 1 y 2
		HGETALL h
		HVALS h
		OBJECT ENCODING h
		COPY h h2
		HGETALL h2
		OBJECT ENCODING h2
		SORT h2
		HSET long f 1 g 12345678901234567890123456789012345678901234567890123456789012345
		OBJECT ENCODING long
		HDEL long g
		OBJECT ENCODING long
		HGETALL long
		HSET inc f 1
		HINCRBY inc 12345678901234567890123456789012345678901234567890123456789012345 1
		OBJECT ENCODING inc
		HSET incf f 1
		HINCRBYFLOAT incf f 1234567890123456789012345678901234567890123456789012345678901234567890
		OBJECT ENCODING incf
		HSETNX nx f 12345678901234567890123456789012345678901234567890123456789012345
		OBJECT ENCODING nx
		CONFIG SET hash-max-listpack-entries 3
		HSET small a 1 b 2 c 3
		OBJECT ENCODING small
		HSET small d 4
		OBJECT ENCODING small
		HDEL small a b
		OBJECT ENCODING small
		HKEYS small
		CONFIG SET hash-max-listpack-entries 512
		CONFIG SET hash-max-listpack-value 3
		HSET v a 1234
		OBJECT ENCODING v
		HSET v2 a 123
		OBJECT ENCODING v2
		CONFIG SET hash-max-ziplist-value 64
		CONFIG GET hash-max-listpack-value
		CONFIG GET hash-max-ziplist-entries
		CONFIG GET hash-max-ziplist-value
		CONFIG SET hash-max-listpack-entries -1
		CONFIG SET hash-max-listpack-entries x
		CONFIG SET hash-max-listpack-value 1k
		CONFIG GET hash-max-listpack-value
		CONFIG SET hash-max-listpack-value 1kb
		CONFIG GET hash-max-listpack-value
		CONFIG SET hash-max-listpack-value -1
		CONFIG SET hash-max-listpack-value x
		CONFIG SET hash-max-listpack-entries 1k
		CONFIG SET hash-max-listpack-entries 99999999999999999999
		CONFIG SET hash-max-listpack-entries 7 hash-max-ziplist-entries 9
		CONFIG GET hash-max-listpack-entries
		CONFIG SET hash-max-ziplist-entries 512
		CONFIG SET hash-max-listpack-value 64
		CONFIG GET hash-max-listpack-entries
		SADD ints 30 1 2 -5
		SRANDMEMBER ints 4
		SRANDMEMBER ints 10
		SSCAN ints 0 COUNT 1
		SPOP ints 10
		ZADD z 2 b 1 a 3 c
		ZRANDMEMBER z 3
		ZRANDMEMBER z 10 WITHSCORES
		ZADD z 0 12345678901234567890123456789012345678901234567890123456789012345
		ZRANDMEMBER z 4 WITHSCORES
	`},
	{"lists", `
		RPUSH l a b c 1 2 3 c c
		LPOS l c
		LPOS l c RANK 2
		LPOS l c RANK -1
		LPOS l c RANK -2 COUNT 0
		LPOS l c COUNT 2
		LPOS l c COUNT 0
		LPOS l c COUNT 0 MAXLEN 4
		LPOS l c RANK -1 MAXLEN 2
		LPOS l c RANK 0
		LPOS l c RANK -9223372036854775808
		LPOS l c RANK -9223372036854775808 COUNT 0
		LPOS l c RANK -9223372036854775807 COUNT 0
		LPOS l c RANK 9223372036854775807
		LPOS l c COUNT -1
		LPOS l c MAXLEN -1
		LPOS l nope
		LPOS l nope COUNT 0
		LPOS nope c
		LPOS nope c COUNT 1
		LPOS l c FOO
		LPOS l c RANK
		LINSERT l BEFORE c X
		LINSERT l AFTER 3 Y
		LINSERT l BEFORE nope Z
		LINSERT nope BEFORE a b
		LINSERT l MIDDLE a b
		LRANGE l 0 -1
		LRANGE l -3 100
		LRANGE l 5 2
		LRANGE l x 1
		LINDEX l -1
		LINDEX l 100
		LINDEX l x
		LSET l 0 first
		LSET l 100 x
		LSET nope 0 x
		LREM l 2 c
		LREM l -1 c
		LREM l 0 nope
		LREM l x c
		LTRIM l 1 -2
		LRANGE l 0 -1
		LPOP l 2
		RPOP l 0
		LPOP l -1
		LPOP nope 2
		RPOP nope
		LPUSHX nope a
		RPUSHX l z
		LLEN l
		LMPOP 1 l LEFT
		LMPOP 2 nope l RIGHT COUNT 2
		LMPOP 2 nope nope2 LEFT
		LMPOP 0 l LEFT
		LMPOP 1 l UP
		LMPOP 1 l LEFT COUNT 0
		LMPOP 1 l LEFT COUNT x
		LMPOP 3 l LEFT
		LMPOP 1 l LEFT COUNT 1 COUNT 2
		LMOVE l m LEFT RIGHT
		LMOVE l m LEFT UP
		LMOVE nope m LEFT RIGHT
		RPOPLPUSH l l
		LRANGE m 0 -1
		SET s v
		LPUSH s x
		LMPOP 1 s LEFT
		LMOVE l s LEFT LEFT
		LRANGE l 0 -1
	`},
	{"sets", `
		SADD a 1 2 3 4 5
		SADD b 3 4 5 6
		SADD c 5 6 7
		SINTERCARD 2 a b
		SINTERCARD 2 a b LIMIT 2
		SINTERCARD 2 a b LIMIT 0
		SINTERCARD 3 a b c
		SINTERCARD 2 a nope
		SINTERCARD 0 a
		SINTERCARD 3 a b
		SINTERCARD 2 a b LIMIT -1
		SINTERCARD 2 a b FOO 1
		SINTERCARD x a
		SMISMEMBER a 1 9 5
		SMISMEMBER nope 1
		SMISMEMBER a
		SISMEMBER a 1
		SISMEMBER nope 1
		SCARD a
		SCARD nope
		SMEMBERS a
		SINTER a b
		SUNION a c
		SDIFF a b
		SADD n 10 -5 9223372036854775807 -9223372036854775808 0 7
		SMEMBERS n
		SINTER n n
		SINTERSTORE d a b
		SORT d
		SUNIONSTORE d a c
		SCARD d
		SDIFFSTORE d a b c
		SORT d
		SDIFFSTORE d nope a
		EXISTS d
		SMOVE a b 1
		SMOVE a b 1
		SMOVE nope b 1
		SREM a 2 3 nope
		SREM nope 1
		SPOP nope
		SPOP nope 2
		SPOP a -1
		SPOP a 0
		SRANDMEMBER nope
		SRANDMEMBER nope 5
		SRANDMEMBER a 0
		SADD one x
		SMEMBERS one
		SPOP one 5
		EXISTS one
		SET str v
		SADD str x
		SINTER a str
		SINTERCARD 1 str
		SMISMEMBER str a
	`},
	{"sorted sets", `
		ZADD z 1 a 2 b 3 c 4 d 5 e
		ZADD z inf pinf -inf ninf 1.5 f 0.1 g 1e21 big 1.7976931348623157e308 max
		ZADD z 3.0000000000000004 tiny 123456789.123 m 1e-7 small -0 negz
		ZRANGE z 0 -1 WITHSCORES
		ZSCORE z pinf
		ZSCORE z ninf
		ZSCORE z g
		ZSCORE z big
		ZSCORE z tiny
		ZSCORE z small
		ZMSCORE z a nope m
		ZADD z nan x
		ZADD z 0x10 hex 0X1P-1 hexp 0x.8p1 hexf 1e-400 under
		ZADD z 1e-400 under
		ZADD z 0x10 hex
		ZADD z 0x1.8 hex2 0x1P-1 hexp -0x.8p1 hexf
		ZADD z 0x hex3
		ZADD z 0e-400 zero
		ZADD z 0x0p-2000 zero2
		ZADD z 0x1p-2000 under2
		ZADD z INF i2
		ZINCRBY z 0x1 hex
		ZRANGE z 0 -1 WITHSCORES
		ZREM z hex hex2 hexp hexf zero zero2 i2
		ZADD z 4.9e-324 denorm 1e-310 denorm2
		ZADD z 1_0 u
		ZADD z 0x1_0 u
		ZADD z infinity i -Infinity ni +inf pi
		ZADD z 1e400 o
		ZADD z " 1" s
		ZADD z "1 " s
		ZRANGE z 0 -1 WITHSCORES
		ZADD z x y
		ZADD z NX XX 1 a
		ZADD z GT LT 1 a
		ZADD z NX GT 1 a
		ZADD z INCR 1 a 2 b
		ZADD z INCR 1 a
		ZADD z XX INCR 1 nope
		ZADD z GT CH 0 a 10 b
		ZADD z 1
		ZINCRBY z 1 nope
		ZINCRBY z inf pinf
		ZINCRBY z -inf pinf
		ZINCRBY z x a
		ZRANGE z 0 2 REV
		ZRANGE z (1 5 BYSCORE
		ZRANGE z 5 (1 BYSCORE REV
		ZRANGE z -inf +inf BYSCORE LIMIT 2 3
		ZRANGE z +inf -inf BYSCORE REV LIMIT 1 2 WITHSCORES
		ZRANGE z 1 5 BYSCORE LIMIT 0 -1
		ZRANGE z 1 5 BYSCORE LIMIT -1 2
		ZRANGE z 0 -1 LIMIT 0 1
		ZRANGE z x 5 BYSCORE
		ZRANGE z 0 -1 BYLEX
		ZRANGE z 0 -1 BYSCORE BYLEX
		ZRANGE z 0 -1 WITHSCORES BYLEX
		DEL l
		ZADD l 0 a 0 b 0 c 0 d 0 e 0 f
		ZRANGE l [b (e BYLEX
		ZRANGE l (e [b BYLEX REV
		ZRANGE l - + BYLEX LIMIT 1 2
		ZRANGE l + - BYLEX REV LIMIT 0 3
		ZRANGE l a b BYLEX
		ZLEXCOUNT l - +
		ZLEXCOUNT l [c +
		ZLEXCOUNT l x +
		ZRANGEBYLEX l - + LIMIT 1 1
		ZREVRANGEBYLEX l + [c
		ZRANGEBYSCORE z 1 3 WITHSCORES LIMIT 1 1
		ZREVRANGEBYSCORE z 3 1
		ZREVRANGEBYSCORE z (3 (1 WITHSCORES
		ZCOUNT z -inf +inf
		ZCOUNT z (1 (2
		ZCOUNT z x 1
		ZCOUNT z " 1" 2
		ZCOUNT z "( 1" 2
		ZCOUNT z 1e-400 1
		ZCOUNT z (1e400 inf
		ZCOUNT z 1e400 inf
		ZCOUNT z "" 2
		ZCOUNT z ( 2
		ZCOUNT z 0x1 2
		ZCOUNT z (1_0 2
		ZCOUNT z "1 " 2
		ZCOUNT z nan 2
		ZRANGEBYSCORE z -1e400 " 2"
		ZREMRANGEBYSCORE nope "" ""
		ZRANGESTORE dst z 0 2
		ZRANGE dst 0 -1 WITHSCORES
		ZRANGESTORE dst l [b [d BYLEX
		ZRANGE dst 0 -1
		ZRANGESTORE dst z 5 1 BYSCORE REV LIMIT 0 2
		ZRANGE dst 0 -1 WITHSCORES
		ZRANGESTORE dst z 100 200
		EXISTS dst
		ZRANGESTORE dst z 0 -1 WITHSCORES
		ZRANK z c
		ZREVRANK z c
		ZRANK z nope
		ZREM z nope ninf pinf
		ZCARD z
		ZREMRANGEBYSCORE z 1e20 +inf
		ZREMRANGEBYRANK z -1 -1
		ZREMRANGEBYLEX l [e +
		ZRANGE l 0 -1
		ZPOPMIN z
		ZPOPMAX z 2
		ZPOPMIN z 0
		ZPOPMIN z -1
		ZPOPMAX nope
		ZMPOP 1 z MIN
		ZMPOP 2 nope z MAX COUNT 2
		ZMPOP 1 nope MIN
		ZMPOP 1 z BOTH
		DEL a b
		ZADD a 1 x 2 y 3 z
		ZADD b 10 y 20 z 30 w
		ZINTER 2 a b
		ZINTER 2 a b WITHSCORES
		ZINTER 2 a b WEIGHTS 2 0.5 WITHSCORES
		ZINTER 2 a b AGGREGATE MIN WITHSCORES
		ZINTER 2 a b AGGREGATE MAX WEIGHTS 1 -1 WITHSCORES
		ZINTER 2 a b WEIGHTS 1
		ZINTER 2 a b AGGREGATE AVG
		ZINTER 2 a b WEIGHTS 1 x
		ZINTER 0 a
		ZINTER 3 a b
		ZUNION 2 a b WITHSCORES
		ZUNION 2 a b WEIGHTS inf 1 WITHSCORES
		ZUNION 2 a b WEIGHTS inf -inf WITHSCORES
		SADD s y z
		ZUNION 2 a s WITHSCORES
		ZINTERSTORE d 2 a b WEIGHTS 2 3
		ZRANGE d 0 -1 WITHSCORES
		ZUNIONSTORE d 2 a b AGGREGATE SUM
		ZRANGE d 0 -1 WITHSCORES
		ZINTERSTORE d 2 a b WITHSCORES
		ZDIFF 2 b a WITHSCORES
		ZDIFFSTORE d 2 a b
		ZRANGE d 0 -1 WITHSCORES
		ZINTERCARD 2 a b
		ZINTERCARD 2 a b LIMIT 1
		ZINTERCARD 2 a b LIMIT -1
		ZRANDMEMBER nope
		ZRANDMEMBER nope 2 WITHSCORES
		DEL one
		ZADD one 2.5 only
		ZRANDMEMBER one
		ZRANDMEMBER one 1 WITHSCORES
		ZRANDMEMBER one -3 WITHSCORES
		ZRANDMEMBER one 5 WITHSCORES
		ZRANDMEMBER one 0 WITHSCORES
		ZRANDMEMBER one x
		ZRANDMEMBER one 1 FOO
		SET str v
		ZADD str 1 a
		ZSCORE str a
		ZRANGE str 0 -1
	`},
	{"sort", `
		RPUSH l 3 1 2 10 20
		SORT l
		SORT l DESC
		SORT l ALPHA
		SORT l ALPHA DESC LIMIT 1 2
		SORT l LIMIT 0 0
		SORT l LIMIT -1 2
		SORT l LIMIT 10 2
		MSET w_1 30 w_2 20 w_3 10 w_10 5 w_20 1
		SORT l BY w_*
		SORT l BY w_* DESC
		SORT l BY nosort
		SORT l BY nosort LIMIT 0 2
		MSET o_1 one o_2 two o_3 three
		SORT l GET o_*
		SORT l GET # GET o_* BY w_*
		SORT l GET o_* GET nope_*
		HSET hash_1 f a
		HSET hash_2 f b
		SORT l BY hash_*->f ALPHA GET hash_*->f
		SORT l STORE dst
		LRANGE dst 0 -1
		SORT l BY w_* STORE dst GET #
		LRANGE dst 0 -1
		SORT l BY nope_* GET hash_*->nope GET nope
		SORT l BY hash_*->nope
		SORT l BY w_* ALPHA DESC LIMIT 0 3 GET #
		SORT nope STORE dst
		EXISTS dst
		RPUSH num 2 " 1" 0x10 inf +5 -INFINITY 0x1p-1074 "" "\t3"
		SORT num
		SORT num DESC
		RPUSH n2 2 1e400
		SORT n2
		RPUSH n3 2 1e-400
		SORT n3
		RPUSH n4 2 1e-310
		SORT n4
		RPUSH n5 2 1_0
		SORT n5
		RPUSH n6 2 "1 "
		SORT n6
		RPUSH n7 2 nan
		SORT n7
		RPUSH bad a b 1
		SORT bad
		SORT bad ALPHA
		SORT l LIMIT 1
		SORT l FOO
		SORT l LIMIT x 1
		SORT_RO l DESC LIMIT 0 2
		SORT_RO l STORE x
		SADD s c a b
		SORT s ALPHA
		ZADD z 3 a 1 b 2 c
		SORT z ALPHA
		SORT z BY nosort
		SET str v
		SORT str
	`},
	{"transactions", `
		MULTI
		SET a 1
		INCR a
		LPUSH a x
		GET a
		EXEC
		MULTI
		MULTI
		SET a
		NOSUCH
		EXEC
		GET a
		EXEC
		DISCARD
		WATCH a
		MULTI
		WATCH a
		DISCARD
		WATCH a b
		SET a 2
		MULTI
		INCR a
		EXEC
		WATCH a
		UNWATCH
		MULTI
		INCR a
		EXEC
		WATCH nope
		MULTI
		PING
		EXEC
		MULTI
		EXEC
		WATCH
		MULTI
		SUBSCRIBE x
		QUIT
		RESET
		GET a
	`},
	{"config and command", `
		CONFIG GET maxmemory
		CONFIG GET maxmemory-policy
		CONFIG GET timeout
		CONFIG GET hz
		CONFIG GET databases
		CONFIG GET *ppendonly
		CONFIG GET *policy
		CONFIG GET appendonl?
		CONFIG GET "save"
		CONFIG GET [a]ppendonly
		CONFIG SET
		CONFIG SET hz
		CONFIG SET nope 1
		CONFIG GET nope*
		CONFIG HELP x
		COMMAND GETKEYS SET a b
		COMMAND GETKEYS MSET a 1 b 2
		COMMAND GETKEYS GET
		COMMAND GETKEYS NOPE a
		COMMAND GETKEYS PING
		COMMAND GETKEYS ZUNIONSTORE d 2 a b
		COMMAND GETKEYS LMPOP 2 a b LEFT
		COMMAND GETKEYS SORT l BY w_* GET o_* STORE d
		COMMAND GETKEYS EVAL "return 1" 1 k
		COMMAND GETKEYS BLPOP a b 0
		COMMAND GETKEYS XREAD STREAMS a b 0 0
		COMMAND GETKEYS
		COMMAND GETKEYS SET a
		COMMAND GETKEYS ZUNIONSTORE d 5 a
		COMMAND GETKEYS ZUNIONSTORE d 0 a
		COMMAND GETKEYS ZUNIONSTORE d x a
		COMMAND GETKEYS LMPOP 3 a b
		COMMAND GETKEYS SINTERCARD 2 a b LIMIT 1
		COMMAND GETKEYS ZINTER 2 a b WEIGHTS 1 2
		COMMAND GETKEYS BLMPOP 0 2 a b LEFT
		COMMAND GETKEYS BZMPOP 0 1 a MIN
		COMMAND GETKEYS RENAME a b
		COMMAND GETKEYS COPY a b DB 0
		COMMAND GETKEYS LCS a b
		COMMAND GETKEYS SORT l
		COMMAND GETKEYS SORT l STORE
		COMMAND GETKEYS SORT_RO l BY x
		COMMAND GETKEYS OBJECT ENCODING k
		COMMAND GETKEYS CLIENT KILL x
		COMMAND GETKEYS MIGRATE h 1 "" 0 5 KEYS a b
		COMMAND GETKEYS get k
		COMMAND GETKEYS MSET a 1 b
		COMMAND COUNT x
		COMMAND INFO nope
		COMMAND FOO
	`},
	{"errors", `
		SET
		GET a b
		HGET h
		LPUSH l
		ZADD z
		SADD s
		LRANGE l 0
		SET s v
		LPUSH s x
		SADD s x
		HSET s f v
		ZADD s 1 x
		INCR s
		RPUSH l x
		GET l
		INCR l
		APPEND l x
		STRLEN l
		EXPIRE s x
		EXPIRE s 1.5
		LINDEX l 1.5
		LRANGE l 0 99999999999999999999
		INCRBY s 1
		SET n 1
		INCRBY n 99999999999999999999
		INCRBYFLOAT n 1e400
		SETRANGE n 99999999999999999999 x
		BITCOUNT n 0 99999999999999999999
		ZADD z 1 a
		ZINCRBY z nan a
		ZRANGE z 0 1 LIMIT
		ZRANGE z 0 1 FOO
		SPOP s x
		LPOS l x RANK x
		GETEX s EX 0
		OBJECT HELP x
		HELLO 3 AUTH
		HELLO 3 AUTH default
		HELLO 3 AUTH default ""
		HELLO 3 SETNAME
		HELLO 1
		HELLO -1
		HELLO 9999999999999999999
		HELLO 2 SETNAME a SETNAME b
		CLIENT GETNAME
		HELLO AUTH default x
		SUBSTR k 0 1
		SET k hello
		SUBSTR k 1 -2
		SUBSTR k x 1
		SUBSTR k 1
		COMMAND INFO substr
		GETSET
		SETNX k
		STRLEN
		PING a b c
		ECHO
	`},
	{"server", `
		TIME
		INFO server
		INFO keyspace
		CLIENT LIST
		CLIENT INFO
		CLIENT ID
		RANDOMKEY
		SET k v
		RANDOMKEY
		SADD big a b c d e f g h i j
		SRANDMEMBER big 3
		SRANDMEMBER big -7
		SPOP big 2
		SCARD big
		HSET big a 1 b 2 c 3 d 4
		HSET hbig a 1 b 2 c 3 d 4
		HRANDFIELD hbig 2
		HRANDFIELD hbig 5 WITHVALUES
		ZADD zbig 1 a 2 b 3 c 4 d
		ZRANDMEMBER zbig 2 WITHSCORES
		ZRANDMEMBER zbig -4
		ZRANDMEMBER zbig 10 WITHSCORES
		SCAN 0 COUNT 1000
		SCAN 0 MATCH k
		SCAN 0 MATCH k COUNT 1000
		SCAN 0 TYPE string COUNT 1000
		SCAN 0 TYPE nope
		SCAN 0 COUNT 0
		SCAN x
		SSCAN big 0 MATCH z
		SADD ints 3 1 2
		SSCAN ints 0
		SSCAN ints 0 MATCH 1*
		ZSCAN zbig 0
		ZSCAN zbig 0 MATCH [ab]
		HSCAN hbig 0 NOVALUES
		HSCAN hbig 0 MATCH a
		SSCAN ints 1
		SSCAN ints x
		SSCAN ints 0 COUNT -1
		SSCAN ints 0 TYPE set
		ZSCAN zbig 0 MATCH a
		ZSCAN zbig 0 COUNT x
		COMMAND INFO get
		COMMAND INFO set zadd
		COMMAND INFO client|kill
		COMMAND DOCS get
		COMMAND DOCS nope
		COMMAND LIST FILTERBY PATTERN xx*
		COMMAND LIST FILTERBY PATTERN hg*
		COMMAND LIST FILTERBY ACLCAT nope
		COMMAND LIST FILTERBY MODULE m
		COMMAND LIST FILTERBY FOO x
		CLIENT SETNAME n1
		CLIENT GETNAME
		CLIENT REPLY FOO
		CLIENT UNBLOCK 999999
		CLIENT UNBLOCK 999999 ERROR
		CLIENT UNBLOCK 999999 NOPE
		CLIENT UNBLOCK x
		CLIENT SETINFO lib-name x
		CLIENT NO-EVICT on
		CLIENT GETREDIR
		CLIENT TRACKINGINFO
		CLIENT NOPE
		CLIENT
		COMMAND INFO client|nope get|x client|kill|x |x
		COMMAND DOCS client|kill
		SELECT 16
		SELECT -1
		LASTSAVE
		DEBUG SLEEP 0
		WAIT 0 0
		ECHO ""
		PING ""
		DBSIZE
		FLUSHDB ASYNC
		FLUSHDB SYNC
		FLUSHDB FOO
		SET k v
		SET t v EX 1000
		INFO keyspace
		CONFIG SET notify-keyspace-events KEA
		CONFIG GET notify-keyspace-events
		CONFIG GET maxclients
		CONFIG GET client-output-buffer-limit
		CONFIG GET proto-max-bulk-len
		CONFIG GET maxmemory-policy
		SET k v
		MOVE k 1
		SWAPDB 0 1
	`},
	{"wrong types", `
		SET s v
		RPUSH l a
		SADD t a
		HSET h f v
		ZADD z 1 a
		LLEN s
		LRANGE s 0 -1
		LPOS s a
		LINSERT s BEFORE a b
		LMPOP 1 s LEFT
		BLPOP s 0.01
		SCARD l
		SMEMBERS h
		SINTERCARD 1 z
		SMISMEMBER l a
		SUNION t l
		HGET l f
		HGETALL t
		HRANDFIELD z
		ZSCORE h a
		ZRANGE t 0 -1
		ZRANGESTORE d l 0 -1
		ZINTER 2 z t
		ZUNION 2 z h
		ZRANDMEMBER l
		ZMPOP 1 h MIN
		GETDEL l
		GETEX t
		SETRANGE h 0 x
		LCS s l
		BITCOUNT z
		BITPOS t 1
		BITOP AND d s h
		COPY l s
		COPY l s REPLACE
		TYPE s
		RENAME z s
		TYPE s
		OBJECT ENCODING s
		SORT h
		SORT s
	`},
	{"keys more", `
		MSET a1 1 a2 2 b1 3 "a*" 4 "a?" 5
		KEYS a[12]
		KEYS a[^1]
		KEYS a[!1]
		KEYS "a\\*"
		KEYS "a\\?"
		KEYS [b-b]*
		KEYS [z-a]1
		KEYS *[
		KEYS b?
		SET past v EXAT 1
		EXISTS past
		SET past v PXAT 1
		EXISTS past
		SET k v
		EXPIREAT k 1
		EXISTS k
		SET k v
		PEXPIRE k -100
		EXISTS k
		SET k v
		GETEX k EXAT 1
		EXISTS k
		SET k v PX 100000
		SET k w KEEPTTL
		TTL k
		SET k w
		TTL k
		RENAME a1 a3
		RENAME a1 a3
		GET a3
		COPY a3 a2
		COPY a3 a2 REPLACE
		GET a2
		COPY a3 a3 REPLACE
		TOUCH a2 a2
		UNLINK a2 a2
		DEL "a*" "a?"
	`},
	{"blocking more", `
		BLPOP nope 1e-2
		BLPOP nope .01
		BLPOP nope 0x1p-7
		BLPOP nope inf
		BLPOP nope -0.5
		BLPOP nope -0
		BLPOP nope 9223372036854775807
		BLPOP nope 1e300
		BLPOP nope ""
		BLPOP nope "0.01 "
		RPUSH b x y
		BLPOP nope b 0.01
		BRPOP b nope 0.01
		BLMPOP 0.01 1 b RIGHT COUNT 0
		BLMPOP 0.01 1 b RIGHT COUNT 5
		BZPOPMIN nope x
		BZMPOP 0.01 1 nope MIN COUNT -1
		BLMOVE b c LEFT RIGHT -1
		BRPOPLPUSH b c x
	`},
	{"number formats", `
		INCRBYFLOAT a 1e20
		INCRBYFLOAT a 0.5
		INCRBYFLOAT b 1e-20
		INCRBYFLOAT c 123456789.123456789
		INCRBYFLOAT d -0.0
		INCRBYFLOAT e 1.5e300
		INCRBYFLOAT f 3.0000000000000004
		INCRBYFLOAT g 9007199254740993
		HINCRBYFLOAT h a 1e20
		HINCRBYFLOAT h b 0.1
		HINCRBYFLOAT h b 0.2
		HINCRBYFLOAT h c -1e-300
		ZADD z 1e15 a 1e16 b 1e17 c 123456789012345678 d -1e-300 e 2.5e-5 f 0.30000000000000004 g
		ZADD z 100 h 1.0 i 1e2 j 12345.6789 k -0.5 l 5e-324 m
		ZINCRBY z 0.1 a
		ZINCRBY z 0.2 g
		ZRANGE z 0 -1 WITHSCORES
		ZMSCORE z a b c d e f g h i j k l m
		ZINCRBY z 1e308 m
		ZINCRBY z 1e308 m
		ZINCRBY z -inf m
		ZSCORE z m
		ZINCRBY z inf m
		ZADD z INCR 0.1 l
		ZRANGEBYSCORE z -0.4 0.1 WITHSCORES
		ZRANGEBYSCORE z (-0.4 (0.0 WITHSCORES
		ZRANGEBYSCORE z 1e16 +inf
		ZCOUNT z 2.5e-5 2.5e-5
		ZUNIONSTORE u 1 z WEIGHTS 3
		ZRANGE u 0 4 WITHSCORES
		ZINTERSTORE u 2 z z AGGREGATE SUM WEIGHTS 0.1 0.2
		ZRANGE u 0 -1 WITHSCORES
		ZINTER 2 z z WEIGHTS 0 0 WITHSCORES
		ZUNION 2 z z WEIGHTS inf -inf WITHSCORES
		ZINTER 1 z WEIGHTS -inf WITHSCORES
	`},
	{"object", `
		SET i 123
		SET i0 0
		SET big 10000
		SET neg -1
		SET lead 0123
		SET plus +1
		SET long 12345678901234567890
		SET e 12345678901234567890123456789012345678901234
		SET r 123456789012345678901234567890123456789012345
		RPUSH l a
		SADD ints 1 2 -3
		SADD strs 1 a
		HSET h f v
		HSET hlong f 12345678901234567890123456789012345678901234567890123456789012345
		ZADD z 1 a
		ZADD zlong 1 12345678901234567890123456789012345678901234567890123456789012345
		OBJECT ENCODING i
		OBJECT ENCODING i0
		OBJECT ENCODING neg
		OBJECT ENCODING lead
		OBJECT ENCODING plus
		OBJECT ENCODING long
		OBJECT ENCODING e
		OBJECT ENCODING r
		OBJECT ENCODING l
		OBJECT ENCODING ints
		OBJECT ENCODING strs
		OBJECT ENCODING h
		OBJECT ENCODING hlong
		OBJECT ENCODING z
		OBJECT ENCODING zlong
		OBJECT ENCODING nope
		OBJECT REFCOUNT i
		OBJECT REFCOUNT i0
		OBJECT REFCOUNT big
		OBJECT REFCOUNT neg
		OBJECT REFCOUNT l
		OBJECT REFCOUNT nope
		OBJECT IDLETIME i
		OBJECT IDLETIME nope
		OBJECT FREQ i
		OBJECT FREQ nope
		OBJECT HELP
		OBJECT HELP x
		OBJECT ENCODING
		OBJECT ENCODING i x
		OBJECT FOO i
		OBJECT
		INCR big
		OBJECT ENCODING big
		COMMAND INFO object|help
	`},
	{"encodings remembered", `
		ZADD z 1 a 2 12345678901234567890123456789012345678901234567890123456789012345
		OBJECT ENCODING z
		ZREM z 12345678901234567890123456789012345678901234567890123456789012345
		OBJECT ENCODING z
		ZRANGE z 0 -1 WITHSCORES
		ZSCAN z 0
		COPY z z2
		OBJECT ENCODING z2
		ZRANGESTORE z3 z 0 -1
		OBJECT ENCODING z3
		ZUNIONSTORE z4 1 z
		OBJECT ENCODING z4
		ZADD y 1 a
		ZINCRBY y 2 12345678901234567890123456789012345678901234567890123456789012345
		ZPOPMAX y
		OBJECT ENCODING y
		ZADD big 0 m0 1 m1 2 m2 3 m3 4 m4 5 m5 6 m6 7 m7 8 m8 9 m9 10 m10 11 m11 12 m12 13 m13 14 m14 15 m15 16 m16 17 m17 18 m18 19 m19 20 m20 21 m21 22 m22 23 m23 24 m24 25 m25 26 m26 27 m27 28 m28 29 m29 30 m30 31 m31 32 m32 33 m33 34 m34 35 m35 36 m36 37 m37 38 m38 39 m39 40 m40 41 m41 42 m42 43 m43 44 m44 45 m45 46 m46 47 m47 48 m48 49 m49 50 m50 51 m51 52 m52 53 m53 54 m54 55 m55 56 m56 57 m57 58 m58 59 m59 60 m60 61 m61 62 m62 63 m63 64 m64 65 m65 66 m66 67 m67 68 m68 69 m69 70 m70 71 m71 72 m72 73 m73 74 m74 75 m75 76 m76 77 m77 78 m78 79 m79 80 m80 81 m81 82 m82 83 m83 84 m84 85 m85 86 m86 87 m87 88 m88 89 m89 90 m90 91 m91 92 m92 93 m93 94 m94 95 m95 96 m96 97 m97 98 m98 99 m99 100 m100 101 m101 102 m102 103 m103 104 m104 105 m105 106 m106 107 m107 108 m108 109 m109 110 m110 111 m111 112 m112 113 m113 114 m114 115 m115 116 m116 117 m117 118 m118 119 m119 120 m120 121 m121 122 m122 123 m123 124 m124 125 m125 126 m126 127 m127 128 m128
		OBJECT ENCODING big
		ZREMRANGEBYRANK big 2 -1
		OBJECT ENCODING big
		ZADD small 0 m0 1 m1 2 m2 3 m3 4 m4 5 m5 6 m6 7 m7 8 m8 9 m9 10 m10 11 m11 12 m12 13 m13 14 m14 15 m15 16 m16 17 m17 18 m18 19 m19 20 m20 21 m21 22 m22 23 m23 24 m24 25 m25 26 m26 27 m27 28 m28 29 m29 30 m30 31 m31 32 m32 33 m33 34 m34 35 m35 36 m36 37 m37 38 m38 39 m39 40 m40 41 m41 42 m42 43 m43 44 m44 45 m45 46 m46 47 m47 48 m48 49 m49 50 m50 51 m51 52 m52 53 m53 54 m54 55 m55 56 m56 57 m57 58 m58 59 m59 60 m60 61 m61 62 m62 63 m63 64 m64 65 m65 66 m66 67 m67 68 m68 69 m69 70 m70 71 m71 72 m72 73 m73 74 m74 75 m75 76 m76 77 m77 78 m78 79 m79 80 m80 81 m81 82 m82 83 m83 84 m84 85 m85 86 m86 87 m87 88 m88 89 m89 90 m90 91 m91 92 m92 93 m93 94 m94 95 m95 96 m96 97 m97 98 m98 99 m99 100 m100 101 m101 102 m102 103 m103 104 m104 105 m105 106 m106 107 m107 108 m108 109 m109 110 m110 111 m111 112 m112 113 m113 114 m114 115 m115 116 m116 117 m117 118 m118 119 m119 120 m120 121 m121 122 m122 123 m123 124 m124 125 m125 126 m126 127 m127 128 m128
		ZREMRANGEBYRANK small 0 0
		OBJECT ENCODING small
		ZDIFFSTORE d 2 big nope
		OBJECT ENCODING d
		SADD sx 1 2 a
		SREM sx a
		OBJECT ENCODING sx
		SCARD sx
		SADD t 1 2
		OBJECT ENCODING t
		SADD a 01
		OBJECT ENCODING a
		SADD b -0
		OBJECT ENCODING b
		SADD c 9223372036854775808
		OBJECT ENCODING c
		SADD d -9223372036854775808 5
		OBJECT ENCODING d
		COPY sx sx2
		OBJECT ENCODING sx2
		SINTERSTORE si sx t
		OBJECT ENCODING si
		SMEMBERS si
		SUNIONSTORE su sx t
		OBJECT ENCODING su
		SDIFFSTORE sd sx nope
		OBJECT ENCODING sd
		SMOVE sx m 1
		OBJECT ENCODING m
		SMOVE d m2 5
		SADD m2 x
		OBJECT ENCODING m2
		SPOP sx 5
		SADD big 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127 128 129 130 131 132 133 134 135 136 137 138 139 140 141 142 143 144 145 146 147 148 149 150 151 152 153 154 155 156 157 158 159 160 161 162 163 164 165 166 167 168 169 170 171 172 173 174 175 176 177 178 179 180 181 182 183 184 185 186 187 188 189 190 191 192 193 194 195 196 197 198 199 200 201 202 203 204 205 206 207 208 209 210 211 212 213 214 215 216 217 218 219 220 221 222 223 224 225 226 227 228 229 230 231 232 233 234 235 236 237 238 239 240 241 242 243 244 245 246 247 248 249 250 251 252 253 254 255 256 257 258 259 260 261 262 263 264 265 266 267 268 269 270 271 272 273 274 275 276 277 278 279 280 281 282 283 284 285 286 287 288 289 290 291 292 293 294 295 296 297 298 299 300 301 302 303 304 305 306 307 308 309 310 311 312 313 314 315 316 317 318 319 320 321 322 323 324 325 326 327 328 329 330 331 332 333 334 335 336 337 338 339 340 341 342 343 344 345 346 347 348 349 350 351 352 353 354 355 356 357 358 359 360 361 362 363 364 365 366 367 368 369 370 371 372 373 374 375 376 377 378 379 380 381 382 383 384 385 386 387 388 389 390 391 392 393 394 395 396 397 398 399 400 401 402 403 404 405 406 407 408 409 410 411 412 413 414 415 416 417 418 419 420 421 422 423 424 425 426 427 428 429 430 431 432 433 434 435 436 437 438 439 440 441 442 443 444 445 446 447 448 449 450 451 452 453 454 455 456 457 458 459 460 461 462 463 464 465 466 467 468 469 470 471 472 473 474 475 476 477 478 479 480 481 482 483 484 485 486 487 488 489 490 491 492 493 494 495 496 497 498 499 500 501 502 503 504 505 506 507 508 509 510 511 512
		OBJECT ENCODING big
		SPOP big 500
		OBJECT ENCODING big
		SADD big2 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127 128 129 130 131 132 133 134 135 136 137 138 139 140 141 142 143 144 145 146 147 148 149 150 151 152 153 154 155 156 157 158 159 160 161 162 163 164 165 166 167 168 169 170 171 172 173 174 175 176 177 178 179 180 181 182 183 184 185 186 187 188 189 190 191 192 193 194 195 196 197 198 199 200 201 202 203 204 205 206 207 208 209 210 211 212 213 214 215 216 217 218 219 220 221 222 223 224 225 226 227 228 229 230 231 232 233 234 235 236 237 238 239 240 241 242 243 244 245 246 247 248 249 250 251 252 253 254 255 256 257 258 259 260 261 262 263 264 265 266 267 268 269 270 271 272 273 274 275 276 277 278 279 280 281 282 283 284 285 286 287 288 289 290 291 292 293 294 295 296 297 298 299 300 301 302 303 304 305 306 307 308 309 310 311 312 313 314 315 316 317 318 319 320 321 322 323 324 325 326 327 328 329 330 331 332 333 334 335 336 337 338 339 340 341 342 343 344 345 346 347 348 349 350 351 352 353 354 355 356 357 358 359 360 361 362 363 364 365 366 367 368 369 370 371 372 373 374 375 376 377 378 379 380 381 382 383 384 385 386 387 388 389 390 391 392 393 394 395 396 397 398 399 400 401 402 403 404 405 406 407 408 409 410 411 412 413 414 415 416 417 418 419 420 421 422 423 424 425 426 427 428 429 430 431 432 433 434 435 436 437 438 439 440 441 442 443 444 445 446 447 448 449 450 451 452 453 454 455 456 457 458 459 460 461 462 463 464 465 466 467 468 469 470 471 472 473 474 475 476 477 478 479 480 481 482 483 484 485 486 487 488 489 490 491 492 493 494 495 496 497 498 499 500 501 502 503 504 505 506 507 508 509 510 511 512
		SREM big2 0
		OBJECT ENCODING big2
		SMEMBERS big2
		SORT t BY nosort
		CONFIG SET set-max-intset-entries 2
		SADD lim 1 2
		OBJECT ENCODING lim
		SADD lim 3
		OBJECT ENCODING lim
		SINTERSTORE lim2 lim lim
		OBJECT ENCODING lim2
		CONFIG SET set-max-intset-entries 512
		CONFIG SET set-max-intset-entries 1k
		CONFIG GET set-max-intset-entries
		CONFIG SET zset-max-listpack-entries 2
		ZADD zl 1 a 2 a 3 a
		OBJECT ENCODING zl
		ZADD zl 1 b 2 c
		OBJECT ENCODING zl
		ZREM zl c
		OBJECT ENCODING zl
		ZRANGESTORE zl2 zl 0 -1
		OBJECT ENCODING zl2
		CONFIG SET zset-max-listpack-entries 0
		ZADD zl3 1 a
		OBJECT ENCODING zl3
		CONFIG SET zset-max-ziplist-entries 128
		CONFIG SET zset-max-listpack-value 2
		ZADD zl4 1 abc
		OBJECT ENCODING zl4
		CONFIG SET zset-max-ziplist-value 64
		CONFIG GET zset-max-listpack-entries
		CONFIG GET zset-max-ziplist-value
	`},
	{"help", `
		CLIENT HELP
		CONFIG HELP
		COMMAND HELP
		PUBSUB HELP
		OBJECT HELP
		client help
		CLIENT HELP x
		PUBSUB HELP x
		COMMAND HELP x y
		COMMAND INFO client|help config|help command|help pubsub|help object|help
	`},
	{"blocking", `
		RPUSH l a b
		BLPOP l 0.01
		BRPOP nope l 0
		BLPOP nope 0.01
		BLPOP l 0
		BLPOP l x
		BLPOP l -1
		BLPOP l 1e20
		BLPOP
		RPUSH l a b c
		BLMOVE l m LEFT RIGHT 0.01
		BRPOPLPUSH l m 0
		BLMOVE nope m LEFT RIGHT 0.01
		BLMPOP 0.01 2 nope l LEFT COUNT 5
		BLMPOP 0.01 1 nope LEFT
		BLMPOP 0.01 0 l LEFT
		ZADD z 1 a 2 b
		BZPOPMIN z 0.01
		BZPOPMAX nope z 0
		BZPOPMIN nope 0.01
		BZMPOP 0.01 1 z MIN COUNT 3
		BZMPOP 0.01 1 z MIN
		SET s v
		BLPOP s 0.01
		MULTI
		BLPOP nope 0
		BLPOP l 0
		EXEC
	`},
	{"pubsub", `
		PUBLISH ch hello
		PUBSUB NUMSUB ch other
		PUBSUB NUMPAT
		PUBSUB CHANNELS
		PUBSUB FOO
		SUBSCRIBE
		UNSUBSCRIBE
		PUNSUBSCRIBE
		SUNSUBSCRIBE
		SUBSCRIBE a b
		PING
		PING hi
		GET x
		PSUBSCRIBE p*
		SSUBSCRIBE s1
		UNSUBSCRIBE nope a
		PUNSUBSCRIBE
		SUNSUBSCRIBE
		UNSUBSCRIBE
		PING
	`},
}

// diffRaw are byte streams sent as they are to both servers: protocol
// errors and inline quoting, beside protocolCases.
var diffRaw = []string{
	"*1\r\n$4\r\nPING\r\n*x\r\n",
	"*2\r\n$4\r\nECHO\r\n$-5\r\n",
	"*2\r\n$4\r\nECHO\r\nx3\r\nabc\r\n",
	"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
	"ECHO \"\\x41\\x42\"\r\nECHO '\\x41'\r\nECHO \"\\t\\r\\a\\b\"\r\nSET \"a b\" 'c d'\r\nGET \"a b\"\r\n",
	"ECHO \"unbalanced\r\n",
	"ECHO 'unbalanced\r\n",
	"ECHO \"a\" \"b\"\r\n",
	"  ECHO   x    y  \r\n",
	"ECHO \"\\\\\"\r\n",
	"ECHO \"\\xZZ\"\r\n",
	"SET k \"\\xff\\x00\"\r\nSTRLEN k\r\nGET k\r\n",
	"*1\r\n$4\r\nPING\r\n*-1\r\n*1\r\n$-1\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv\r\n",
	"HELLO 3\r\nSUBSCRIBE a\r\nPING\r\nGET x\r\nUNSUBSCRIBE a\r\nGET x\r\n",
	"HELLO 2\r\nSUBSCRIBE a\r\nPSUBSCRIBE b*\r\nPUBSUB NUMPAT\r\n",
	"HELLO 3\r\nSUBSCRIBE a\r\nPSUBSCRIBE a*\r\nPUBLISH a hi\r\nPUBLISH ab x\r\nSPUBLISH a y\r\nSSUBSCRIBE a\r\nSPUBLISH a z\r\nPUNSUBSCRIBE a*\r\nPUBLISH a w\r\nRESET\r\nPUBLISH a v\r\n",
	"SUBSCRIBE a\r\nPUBLISH a x\r\nPING\r\nQUIT\r\n",
	"HELLO 3\r\nSUBSCRIBE a\r\nHELLO 2\r\nPING\r\n",
	"ECHO\ta\r\nECHO a\tb\r\n\tPING\r\nECHO a\x00b\r\nECHO \"\\x00\"\r\n",
	"SET k \"a\\\"b\"\r\nGET k\r\nECHO '\\\\'\r\nECHO \"\\u0041\"\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\nGET k\r\n*1\r\n$3\r\nget\r\n",
	"MULTI\r\nSET a 1\r\n*1\r\n$x\r\n",
	resp("SET", "big", strings.Repeat("0123456789", 20000)) + "STRLEN big\r\nGETRANGE big 199990 -1\r\nGET big\r\nAPPEND big x\r\n" +
		resp("LCS", "big", "x") + "SETRANGE big 300000 y\r\nSTRLEN big\r\nBITCOUNT big\r\nOBJECT ENCODING big\r\n",
	"CLIENT REPLY SKIP\r\nPING skipped\r\nPING\r\nCLIENT REPLY OFF\r\nPING off\r\nCLIENT REPLY ON\r\nPING on\r\n",
	"CLIENT REPLY OFF\r\nGET\r\nCLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nCLIENT REPLY SKIP\r\nGET\r\nPING\r\n",
	"SUBSCRIBE a\r\n*2\r\n$4\r\nPING\r\n$1\r\nx\r\nUNSUBSCRIBE\r\nPING x\r\n",
}

// diffSessions are scripts of several clients, a, b and c, each on its
// own connection: a line "a1 WATCH k" sends WATCH k on a's connection and
// reads one reply from it; "a0 BLPOP q 0" sends and reads nothing yet,
// and "a1" alone reads one reply (a blocked client's, a message pushed
// to a subscriber). Each reply read must be the same bytes from Redis and
// from this server.
var diffSessions = []struct{ name, script string }{
	{"watch", `
		a1 SET k 1
		a1 WATCH k
		b1 SET k 2
		a1 MULTI
		a1 GET k
		a1 EXEC
		a1 WATCH k
		b1 GET k
		a1 MULTI
		a1 INCR k
		a1 EXEC
		a1 WATCH nope
		b1 SET nope x
		b1 DEL nope
		a1 MULTI
		a1 PING
		a1 EXEC
		a1 WATCH k
		b1 EXPIRE k 100
		a1 MULTI
		a1 EXEC
		a1 WATCH k
		b1 FLUSHALL
		a1 MULTI
		a1 EXEC
	`},
	{"blocking clients", `
		a0 BLPOP q1 q2 0
		b1 RPUSH q2 x y
		a1
		b1 LRANGE q2 0 -1
		a0 BRPOP q 0
		b0 BLPOP q 0
		c1 RPUSH q 1 2 3
		a1
		b1
		c1 LLEN q
		a0 BLMOVE src dst LEFT RIGHT 0
		b0 BLPOP dst 0
		c1 RPUSH src v
		a1
		b1
		c1 EXISTS src dst
		a0 BZPOPMIN z 0
		c1 ZADD z 2 b 1 a
		a1
		a0 BLMPOP 0 2 l1 l2 RIGHT COUNT 5
		c1 LPUSH l2 a b c
		a1
		a0 BLPOP w 0
		c1 MULTI
		c1 RPUSH w x
		c1 DEL w
		c1 EXEC
		c1 RPUSH w y
		a1
		a0 BLPOP s 0
		c1 SET s str
		c1 DEL s
		c1 RPUSH s z
		a1
		a1 CLIENT SETNAME blocked
		a0 BLPOP never 0
		c1 CLIENT LIST
	`},
	{"pubsub", `
		a1 SUBSCRIBE ch
		b1 PSUBSCRIBE c*
		c1 PUBLISH ch hello
		a1
		b1
		c1 PUBLISH cx other
		b1
		c1 PUBSUB NUMSUB ch cx
		c1 PUBSUB NUMPAT
		c1 PUBSUB CHANNELS
		c1 SSUBSCRIBE sh
		a1 SSUBSCRIBE sh
		d1 SPUBLISH sh m
		c1
		a1
		d1 PUBSUB SHARDNUMSUB sh
		d1 PUBSUB SHARDCHANNELS
		c1 PUBSUB SHARDCHANNELS
		a1 UNSUBSCRIBE ch
		d1 PUBLISH ch gone
		b1
		a1 PING
		b1 PUNSUBSCRIBE
		d1 PUBLISH ch none
		a1 SUNSUBSCRIBE
		a1 GET k
		c1 RESET
		d1 PUBSUB SHARDNUMSUB sh
	`},
}

// diffDifferences are the commands of diffScripts whose replies differ
// from Redis's on purpose, each with the reason: this server's documented
// departures from Redis 7.0 (README, "Where it differs from Redis"). They
// are sent to both servers, each of which must answer them, but their
// replies are not compared; one that no longer differs fails the test.
var diffDifferences = map[string]string{
	"COPY a b DB 1":                         "one database",
	"CONFIG GET databases":                  "one database",
	"SWAPDB 0 1":                            "one database",
	"MOVE k 1":                              "one database",
	"COMMAND GETKEYS EVAL \"return 1\" 1 k": "no scripting",
	"COMMAND GETKEYS XREAD STREAMS a b 0 0": "no streams",
	"COMMAND INFO get":                      "COMMAND replies no key specifications",
	"COMMAND INFO set zadd":                 "COMMAND replies no key specifications",
	"COMMAND DOCS get":                      "COMMAND DOCS replies no complexity, history or arguments",
	"COMMAND DOCS client|kill":              "COMMAND DOCS replies no complexity, history or arguments",
	"LASTSAVE":                              "nothing kept on disk",

	"CONFIG SET notify-keyspace-events KEA":         "no keyspace notifications",
	"CONFIG GET notify-keyspace-events":             "no keyspace notifications",
	"CONFIG GET maxclients":                         "the engine's -maxclients",
	"CONFIG GET proto-max-bulk-len":                 "-max-request",
	"CONFIG GET client-output-buffer-limit":         "the normal class is the engine's bound; no replicas",
	"COMMAND GETKEYS MIGRATE h 1 \"\" 0 5 KEYS a b": "no MIGRATE",
	"CLIENT NO-EVICT on":                            "no eviction",
	"COMMAND INFO substr":                           "COMMAND replies no key specifications",
	"CLIENT GETREDIR":                               "no client-side caching",
	"CLIENT TRACKINGINFO":                           "no client-side caching",
	"DEBUG SLEEP 0":                                 "no DEBUG command",
	"WAIT 0 0":                                      "no replication",
}

// diffShapes are the commands of diffScripts whose replies Redis does not
// define (clocks, random picks, counters): only their shape is compared,
// the type of the reply and, for an aggregate, its length.
var diffShapes = map[string]bool{
	"OBJECT IDLETIME i":                 true,
	"TIME":                              true,
	"INFO server":                       true,
	"CLIENT LIST":                       true,
	"CLIENT INFO":                       true,
	"CLIENT ID":                         true,
	"RANDOMKEY":                         true,
	"SRANDMEMBER big 3":                 true,
	"SRANDMEMBER big -7":                true,
	"SPOP big 2":                        true,
	"HRANDFIELD hbig 2":                 true,
	"ZRANDMEMBER zbig 2 WITHSCORES":     true,
	"ZRANDMEMBER zbig -4":               true,
	"SCAN 0 COUNT 1000":                 true,
	"COMMAND LIST FILTERBY PATTERN hg*": true,
}

// diffUnordered are the commands of diffScripts that reply an array of
// bulk strings in an order Redis does not define (KEYS): their elements
// are compared as sets.
var diffUnordered = map[string]bool{
	"KEYS a[12]":    true,
	"KEYS a[^1]":    true,
	"KEYS a[!1]":    true,
	"KEYS [b-b]*":   true,
	"KEYS [z-a]1":   true,
	"HKEYS small":   true, // a hash table's, once converted
	"SMEMBERS big2": true,
}

// sortedElements returns a flat array's reply with its bulk strings
// sorted.
func sortedElements(reply string) string {
	lines := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	var elems []string
	for i := 1; i+1 < len(lines); i += 2 {
		elems = append(elems, lines[i]+"\r\n"+lines[i+1])
	}
	slices.Sort(elems)
	return lines[0] + "\r\n" + strings.Join(elems, "\r\n")
}

// shape is what diffShapes compares of a reply: its first line for an
// aggregate, its type otherwise.
func shape(reply string) string {
	if strings.ContainsRune("*%~>", rune(reply[0])) {
		return reply[:strings.Index(reply, "\r\n")]
	}
	return reply[:1]
}

// arityScript sends every command and subcommand this server knows with
// no arguments, and those of a fixed arity with one too many: Redis's
// words for the wrong number of arguments, or its reply where none are
// needed. Commands that change the connection (QUIT, RESET, MULTI,
// HELLO) or whose reply is a clock's or lists every command are left to
// the other scripts.
func arityScript() string {
	skip := map[string]bool{"quit": true, "reset": true, "multi": true, "hello": true,
		"command": true, "info": true, "time": true, "client": true, "subscribe": true,
		"psubscribe": true, "ssubscribe": true}
	var b strings.Builder
	for _, cmd := range commands.all {
		if !skip[cmd.name] {
			b.WriteString(cmd.name + "\n")
			if cmd.arity > 0 {
				b.WriteString(cmd.name + strings.Repeat(" x", cmd.arity) + "\n")
			}
		}
		if cmd.subs == nil {
			continue
		}
		for _, sub := range cmd.subs.all {
			b.WriteString(cmd.name + " " + sub.name + "\n")
			if sub.arity > 0 {
				b.WriteString(cmd.name + " " + sub.name + strings.Repeat(" x", sub.arity-1) + "\n")
			}
		}
	}
	return b.String()
}

// TestDifferential runs diffScripts and diffRaw against redis-server
// and this server, and compares what each sent back byte for byte.
func TestDifferential(t *testing.T) {
	ts := startServer(t, config{})
	r := startRedis(t)
	n := 0
	differed := map[string]bool{} // the listed differences seen
	for _, sc := range append(diffScripts, struct{ name, script string }{"arity", arityScript()}) {
		lines := strings.Split(strings.TrimSpace(dedent(sc.script)), "\n")
		n += len(lines)
		var inline, array strings.Builder
		for _, l := range lines {
			inline.WriteString(l + "\r\n")
			array.WriteString(resp(splitWords(t, l)...))
		}
		t.Run(sc.name, func(t *testing.T) {
			for _, mode := range []struct{ name, script string }{
				{"inline", "FLUSHALL\r\n" + inline.String()},
				{"RESP2", "FLUSHALL\r\n" + array.String()},
				{"RESP3", "HELLO 3\r\nFLUSHALL\r\n" + array.String()},
			} {
				want := splitReplies(t, exchange(t, "unix", r.sock, mode.script))
				got := splitReplies(t, exchange(t, "tcp", ts.addr(), mode.script))
				first := len(want) - len(lines) // the replies to HELLO and FLUSHALL
				for i := range max(len(want), len(got)) {
					cmd := "(a reply past the commands')"
					if j := i - first; j >= 0 && j < len(lines) {
						cmd = lines[j]
					}
					w, g := at(want, i), at(got, i)
					if _, ok := diffDifferences[cmd]; ok && w != "" && g != "" {
						if w != g {
							differed[cmd] = true
						}
						continue
					}
					if diffShapes[cmd] && w != "" && g != "" {
						w, g = shape(w), shape(g)
					}
					if diffUnordered[cmd] && w != "" && g != "" {
						w, g = sortedElements(w), sortedElements(g)
					}
					if w != g {
						t.Errorf("%s, reply %d, %s:\nRedis: %q\nours:  %q", mode.name, i, cmd, w, g)
					}
				}
			}
		})
	}
	for _, sc := range diffSessions {
		lines := strings.Split(strings.TrimSpace(dedent(sc.script)), "\n")
		n += len(lines)
		for _, resp3 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, RESP3 %v", sc.name, resp3), func(t *testing.T) {
				theirs := runSession(t, lines, resp3, func() *rawConn { return r.dial(t) })
				ours := runSession(t, lines, resp3, func() *rawConn { return ts.dial(t) })
				for i := range theirs {
					if theirs[i] != ours[i] {
						t.Errorf("%s:\nRedis: %q\nours:  %q", lines[i], theirs[i], ours[i])
					}
				}
			})
		}
	}
	for _, raw := range diffRaw {
		sameAsRedis(t, ts, r, "FLUSHALL\r\n"+raw)
	}
	require.GreaterOrEqual(t, n+len(diffRaw), 300, "the corpus shrank")
	for cmd := range diffDifferences {
		if !t.Failed() && !differed[cmd] {
			t.Errorf("%s no longer differs from Redis: take it off diffDifferences", cmd)
		}
	}
}

// runSession runs the lines of one of diffSessions on connections dial
// opens, after FLUSHALL, and returns the replies each line read, joined.
// Client IDs are masked, and CLIENT LIST's lines reduced to their names
// and commands.
func runSession(t *testing.T, lines []string, resp3 bool, dial func() *rawConn) []string {
	conns := map[byte]*rawConn{}
	conn := func(name byte) *rawConn {
		if conns[name] == nil {
			conns[name] = dial()
			if resp3 {
				conns[name].send(t, "HELLO 3\r\n")
				conns[name].reply(t)
			}
		}
		return conns[name]
	}
	ctl := dial() // FLUSHALL, and INFO to see a client blocked
	ctl.send(t, "FLUSHALL\r\n")
	require.Equal(t, "+OK\r\n", ctl.reply(t))
	blocked := func() string {
		ctl.send(t, "INFO clients\r\n")
		return infoFields(ctl.bulk(t))["blocked_clients"]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		head, cmd, _ := strings.Cut(l, " ")
		c := conn(head[0])
		if cmd != "" {
			before := blocked()
			c.send(t, resp(splitWords(t, cmd)...))
			if head[1] == '0' { // wait for the server to block the client
				deadline := time.Now().Add(10 * time.Second)
				for blocked() == before {
					require.True(t, time.Now().Before(deadline), "%s did not block", l)
				}
			}
		}
		for range int(head[1] - '0') {
			reply := clientIDs.ReplaceAllString(c.reply(t), "${1}ID")
			if clientListLine.MatchString(reply) {
				reply = clientListLine.ReplaceAllString(bulkLength.ReplaceAllString(reply, "${1}N"), "$1 $2")
			}
			out[i] += reply
		}
	}
	return out
}

// clientListLine matches a line of CLIENT LIST, keeping its name and
// flags and its last command.
var clientListLine = regexp.MustCompile(`id=\d+ .*( name=\S*) .*( cmd=\S+) .*`)

// bulkLength matches the length of a bulk string or verbatim string.
var bulkLength = regexp.MustCompile(`^([$=])\d+`)

// splitReplies splits what a server sent into its replies, each with the
// client IDs HELLO reports masked.
func splitReplies(t *testing.T, s string) []string {
	c := &rawConn{r: bufio.NewReader(strings.NewReader(s))}
	var rs []string
	for {
		if _, err := c.r.Peek(1); err != nil {
			return rs
		}
		rs = append(rs, clientIDs.ReplaceAllString(c.reply(t), "${1}ID"))
	}
}

// at returns rs[i], or "" past its end.
func at(rs []string, i int) string {
	if i < len(rs) {
		return rs[i]
	}
	return ""
}

// splitWords splits a script's line at spaces, keeping the spaces of a word in
// double quotes.
func splitWords(t *testing.T, line string) []string {
	var ws []string
	for line != "" {
		line = strings.TrimLeft(line, " ")
		if rest, ok := strings.CutPrefix(line, `"`); ok {
			w, after, ok := strings.Cut(rest, `"`)
			require.True(t, ok, "unbalanced quotes in %q", line)
			ws = append(ws, w)
			line = after
			continue
		}
		w, after, _ := strings.Cut(line, " ")
		ws = append(ws, w)
		line = after
	}
	return ws
}
