package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pairs returns " field<i> value<i>" for i in [from, to).
func pairs(from, to int, field, value string) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(" " + field + strconv.Itoa(i) + " " + value + strconv.Itoa(i))
	}
	return b.String()
}

// encodingScripts try the compact collections' edges against Redis: a
// small hash's bounds met exactly and passed by one, conversions in the
// middle of a command, order after a deletion, empty and binary fields,
// a value replaced or a member's score changed after CONFIG SET lowered
// a bound (Redis converts a hash then, and a sorted set only as it
// grows), many pairs naming one field, and a set stored by set algebra.
var encodingScripts = []string{
	"HSET k " + strings.Repeat("f", 64) + " " + strings.Repeat("v", 64) + "\r\nOBJECT ENCODING k\r\nHSET k " + strings.Repeat("f", 65) + " 1\r\nOBJECT ENCODING k",
	"HSET k a 1\r\nHSET k b " + strings.Repeat("v", 65) + "\r\nOBJECT ENCODING k",
	"HSET k a 1 b 2 c 3\r\nHDEL k a\r\nHSET k a 4\r\nHGETALL k\r\nHSET k b 5\r\nHGETALL k",
	"HSET k a 1\r\nHSETNX k a " + strings.Repeat("v", 65) + "\r\nOBJECT ENCODING k\r\nHGETALL k",
	"HSET k a 1\r\nHSETNX k b 2\r\nHSETNX k b 3\r\nHGETALL k",
	"HSET k a 1\r\nHINCRBY k n 5\r\nHINCRBY k a 2\r\nHGETALL k\r\nOBJECT ENCODING k",
	"HSET k a 1\r\nHINCRBYFLOAT k a 1e70\r\nOBJECT ENCODING k\r\nHGET k a",
	"HSET k a 1\r\nHINCRBY k " + strings.Repeat("f", 65) + " 1\r\nOBJECT ENCODING k",
	"HSET k a 1\r\nHINCRBYFLOAT k " + strings.Repeat("f", 65) + " 1.5\r\nOBJECT ENCODING k",
	"HSET k \"\" empty a 1\r\nHGET k \"\"\r\nHGETALL k\r\nHDEL k \"\"\r\nHGETALL k\r\nOBJECT ENCODING k",
	"HSET k \"a\\x00b\" \"\\x00\\xff\" a 1\r\nHGETALL k\r\nHGET k \"a\\x00b\"\r\nHSTRLEN k \"a\\x00b\"",
	"HSET k" + pairs(0, 600, "f", "v") + "\r\nOBJECT ENCODING k\r\nHLEN k",
	"HSET k" + strings.Repeat(" f v", 600) + "\r\nOBJECT ENCODING k\r\nHLEN k",
	"HMSET k" + strings.Repeat(" f v", 600) + "\r\nOBJECT ENCODING k\r\nHLEN k",
	"HSET k" + pairs(0, 512, "f", "v") + "\r\nOBJECT ENCODING k\r\nHSET k f0 x\r\nOBJECT ENCODING k\r\nHSET k g 1\r\nOBJECT ENCODING k\r\nHDEL k g\r\nOBJECT ENCODING k",
	"CONFIG SET hash-max-listpack-entries 2\r\nHSET k a 1 b 2\r\nOBJECT ENCODING k\r\nHSET k c 3\r\nOBJECT ENCODING k\r\nCONFIG SET hash-max-listpack-entries 512",
	"CONFIG SET hash-max-listpack-entries 0\r\nHSET k a 1\r\nOBJECT ENCODING k\r\nCONFIG SET hash-max-listpack-entries 512",
	"CONFIG SET hash-max-listpack-value 0\r\nHSET k a \"\"\r\nOBJECT ENCODING k\r\nHSET j \"\" \"\"\r\nOBJECT ENCODING j\r\nCONFIG SET hash-max-listpack-value 64",
	"HSET k a 1 b 2\r\nCONFIG SET hash-max-listpack-value 0\r\nHGET k a\r\nOBJECT ENCODING k\r\nHSET k a 2\r\nOBJECT ENCODING k\r\nCONFIG SET hash-max-listpack-value 64",
	"HSET k a 1 b 2 c 3\r\nCONFIG SET hash-max-listpack-entries 1\r\nHDEL k a\r\nOBJECT ENCODING k\r\nHSET k b 9\r\nOBJECT ENCODING k\r\nCONFIG SET hash-max-listpack-entries 512",
	"CONFIG SET hash-max-listpack-entries 100000\r\nHSET k" + pairs(0, 700, "f", "v") + "\r\nOBJECT ENCODING k\r\nHDEL k f3 f0\r\nHSET k f0 z\r\nHRANDFIELD k 1000 WITHVALUES\r\nHGETALL k\r\nHSCAN k 0 COUNT 1 MATCH f69*\r\nCONFIG SET hash-max-listpack-entries 512",
	"CONFIG SET hash-max-listpack-entries 100000\r\nHSET k" + pairs(0, 700, "f", "v") + "\r\nHKEYS k\r\nHVALS k\r\nCONFIG SET hash-max-listpack-entries 512",
	"HSET k b 1 a 2 c 3\r\nHRANDFIELD k 5 WITHVALUES\r\nHRANDFIELD k 3\r\nHSCAN k 0\r\nHSCAN k 7 COUNT 1",
	"HSET k b 1 a 2 c 3\r\nCOPY k j\r\nHGETALL j\r\nOBJECT ENCODING j\r\nRENAME k r\r\nHGETALL r\r\nOBJECT ENCODING r",
	"HSET k b 1 a 2 c 3\r\nSORT k ALPHA\r\nSET s x\r\nHSET s a 1\r\nHGET s a\r\nHSETNX s a 1\r\nHINCRBY s a 1\r\nHDEL s a\r\nHRANDFIELD s\r\nHSCAN s 0\r\nOBJECT ENCODING s",
	"CONFIG SET hash-max-listpack-value 1kb\r\nCONFIG GET hash-max-listpack-value\r\nCONFIG SET hash-max-listpack-value -1\r\nCONFIG SET hash-max-listpack-entries -1\r\nCONFIG SET hash-max-listpack-entries 1k\r\nCONFIG GET hash-max-listpack-entries\r\nCONFIG GET hash-max-ziplist-value\r\nCONFIG SET hash-max-listpack-value 64\r\nCONFIG SET hash-max-listpack-entries 512",
	"CONFIG SET hash-max-listpack-value 9999999999999999999\r\nCONFIG SET hash-max-listpack-value 100000000000gb\r\nCONFIG SET hash-max-listpack-value 9223372036854775807\r\nCONFIG GET hash-max-listpack-value\r\nHSET k " + strings.Repeat("f", 100) + " 1\r\nOBJECT ENCODING k\r\nCONFIG SET hash-max-listpack-entries 9223372036854775807\r\nCONFIG SET hash-max-listpack-value 1.5kb\r\nCONFIG SET hash-max-listpack-value 64\r\nCONFIG SET hash-max-listpack-entries 512",
	"ZADD k 1 a 2 b 3 c\r\nCONFIG SET zset-max-listpack-entries 1\r\nZADD k 5 a\r\nOBJECT ENCODING k\r\nZINCRBY k 1 b\r\nOBJECT ENCODING k\r\nZADD k 1 d\r\nOBJECT ENCODING k\r\nCONFIG SET zset-max-listpack-entries 128",
	"ZADD k 1 a\r\nCONFIG SET zset-max-listpack-value 0\r\nZADD k 2 a\r\nOBJECT ENCODING k\r\nZADD k 2 \"\"\r\nOBJECT ENCODING k\r\nCONFIG SET zset-max-listpack-value 64",
	"ZADD k" + strings.Repeat(" 1 a", 200) + "\r\nOBJECT ENCODING k\r\nZCARD k",
	"SADD k" + strings.Repeat(" 1", 600) + "\r\nOBJECT ENCODING k\r\nSADD j 3 1 2\r\nCONFIG SET set-max-intset-entries 1\r\nSREM j 3\r\nOBJECT ENCODING j\r\nSADD j 1\r\nOBJECT ENCODING j\r\nSADD j 7\r\nOBJECT ENCODING j\r\nCONFIG SET set-max-intset-entries 512",
	"SADD a 1 2 3\r\nSADD b 2 3 x\r\nSINTERSTORE d a b\r\nOBJECT ENCODING d\r\nSUNIONSTORE u a b\r\nOBJECT ENCODING u\r\nSDIFFSTORE f b a\r\nOBJECT ENCODING f\r\nSMOVE b a x\r\nOBJECT ENCODING a",
}

// fields returns " f<i>" for every third i in [from, to).
func fields(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i += 3 {
		b.WriteString(" f" + strconv.Itoa(i))
	}
	return b.String()
}

func TestEncodingsAsRedis(t *testing.T) {
	scripts := slices.Clone(encodingScripts)
	for i := range scripts {
		scripts[i] += "\r\n"
	}
	eachAsRedis(t, scripts)
	ts, r := startServer(t, config{}), startRedis(t)
	for _, script := range []string{hugeListpackScript(), pipelinedHashScript()} {
		script = "FLUSHALL\r\n" + script
		want := exchangeWhole(t, "unix", r.sock, script)
		got := exchangeWhole(t, "tcp", ts.addr(), script)
		if want != got {
			i := 0
			for i < len(want) && i < len(got) && want[i] == got[i] {
				i++
			}
			t.Fatalf("replies differ at byte %d; Redis's, then ours:\n%q\n%q", i,
				want[max(i-100, 0):min(i+100, len(want))], got[max(i-100, 0):min(i+100, len(got))])
		}
	}
}

// hugeListpackScript raises hash-max-listpack-entries far past its
// default and works a hash of 12,000 fields, which Redis holds as a
// listpack in insertion order, through deletions that leave gaps (half of
// its fields, then some of the rest) and fields added back, which go to
// the end: HGETALL must list the fields as Redis does throughout.
func hugeListpackScript() string {
	var b strings.Builder
	b.WriteString("CONFIG SET hash-max-listpack-entries 1000000\r\n")
	for i := 0; i < 12000; i += 1000 {
		b.WriteString("HSET k" + pairs(i, i+1000, "f", "v") + "\r\n")
	}
	b.WriteString("HDEL k")
	for i := 0; i < 12000; i += 2 {
		b.WriteString(" f" + strconv.Itoa(i))
	}
	b.WriteString("\r\nHLEN k\r\nOBJECT ENCODING k\r\nHSET k f0 again f11999 last f3 new\r\n")
	b.WriteString("HDEL k f1 f5 f7 f0\r\nHSETNX k f5 five\r\nHINCRBY k f9 3\r\nHGETALL k\r\n")
	b.WriteString("HDEL k" + fields(3, 11000) + "\r\n")
	b.WriteString("HGETALL k\r\nHRANDFIELD k 100000 WITHVALUES\r\nCOPY k j\r\nHKEYS j\r\nOBJECT ENCODING j\r\n")
	b.WriteString("HSCAN k 0 MATCH f1099*\r\nCONFIG SET hash-max-listpack-entries 512\r\n")
	return b.String()
}

// pipelinedHashScript sends more than a read buffer of HSETs at once,
// each with values of its own, to hashes held small, so that a hash keeping slices of the
// connection's input rather than copies would show later commands' bytes.
func pipelinedHashScript() string {
	var b strings.Builder
	for i := range 2000 {
		v := fmt.Sprintf("%060d", i)
		fmt.Fprintf(&b, "HSET k%d f%d %s g%d x%s\r\n", i%9, i, v, i, v)
	}
	for k := range 9 {
		fmt.Fprintf(&b, "HGETALL k%d\r\nOBJECT ENCODING k%[1]d\r\n", k)
	}
	return b.String()
}

// TestHugeListpackCostsLittle holds a hash to a bounded cost a call
// however high CONFIG SET puts hash-max-listpack-entries: 200,000 fields
// added, read, replaced and deleted must take a moment, where searching
// them one by one from the front, as Redis's listpack does, would stall
// the loop for minutes.
func TestHugeListpackCostsLittle(t *testing.T) {
	ts := startServer(t, config{})
	const n = 200000
	var b strings.Builder
	b.WriteString("CONFIG SET hash-max-listpack-entries 1000000000\r\n")
	for i := 0; i < n; i += 1000 {
		b.WriteString("HSET k" + pairs(i, i+1000, "f", "v") + "\r\n")
	}
	for i := 0; i < n; i += 1000 {
		b.WriteString("HDEL k f" + strconv.Itoa(i) + " f" + strconv.Itoa(n-1-i) + "\r\nHSET k f" + strconv.Itoa(i) + " back\r\n")
		b.WriteString("HGET k f" + strconv.Itoa(n/2+i/2) + "\r\n")
	}
	b.WriteString("HLEN k\r\nOBJECT ENCODING k\r\n")
	out := exchange(t, "tcp", ts.addr(), b.String())
	require.True(t, strings.HasSuffix(out, fmt.Sprintf(":%d\r\n$8\r\nlistpack\r\n", n-n/1000)), "%q", out[max(len(out)-100, 0):])
}

// TestHashModel works a small hash and a model of one (fields in order)
// through random changes under bounds high enough to keep it small, and
// checks after each that both hold the same fields in the same order.
func TestHashModel(t *testing.T) {
	lim := limits{hashEntries: 1 << 30, hashValue: 1 << 30}
	h := newHash()
	var model []hashPair
	find := func(f string) int {
		return slices.IndexFunc(model, func(p hashPair) bool { return p.field == f })
	}
	for step := range 30000 {
		f := strconv.Itoa(rand.IntN(2000))
		if rand.IntN(50) == 0 {
			f = "" // the empty field, which a deleted pair must not be taken for
		}
		if rand.IntN(3) == 0 {
			i := find(f)
			require.Equal(t, i >= 0, h.del([]byte(f)), "step %d: del %q", step, f)
			if i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
		} else {
			v := strconv.Itoa(step)
			i := find(f)
			require.Equal(t, i < 0, h.set([]byte(f), []byte(v), lim), "step %d: set %q", step, f)
			if i >= 0 {
				model[i].value = v
			} else {
				model = append(model, hashPair{f, v})
			}
		}
		if step%500 == 0 || step > 29900 {
			require.Equal(t, len(model), h.len())
			var got []hashPair
			h.each(func(f, v string) { got = append(got, hashPair{f, v}) })
			require.Equal(t, model, got, "step %d", step)
			for _, p := range model {
				v, ok := h.get([]byte(p.field))
				require.True(t, ok)
				require.Equal(t, p.value, v)
			}
			c := h.clone()
			require.True(t, c.set([]byte("new"), []byte("x"), lim) != h.has([]byte("new")))
		}
	}
	require.Equal(t, "listpack", h.encoding())
}

// TestHugeIntsetCostsLittle holds SRANDMEMBER to a cost a call in
// proportion to the set at most, however high CONFIG SET puts
// set-max-intset-entries: only a reply of the whole set comes in the
// intset's order, so a random member needs no sorting of 200,000. CI
// runs it without the race detector, under which it cannot tell a
// sort from a pass through the set.
func TestHugeIntsetCostsLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows a pass through the set as much as a sort")
	}
	ts := startServer(t, config{})
	const n = 200000
	var b strings.Builder
	b.WriteString("CONFIG SET set-max-intset-entries 1000000000\r\n")
	for i := 0; i < n; i += 1000 {
		b.WriteString("SADD k")
		for j := i; j < i+1000; j++ {
			b.WriteString(" " + strconv.Itoa(n-j))
		}
		b.WriteString("\r\n")
	}
	b.WriteString(strings.Repeat("SRANDMEMBER k\r\nSRANDMEMBER k -2\r\nSRANDMEMBER k 2\r\n", 60))
	b.WriteString("SCARD k\r\nOBJECT ENCODING k\r\n")
	out := exchange(t, "tcp", ts.addr(), b.String())
	require.True(t, strings.HasSuffix(out, fmt.Sprintf(":%d\r\n$6\r\nintset\r\n", n)), "%q", out[max(len(out)-100, 0):])
}
