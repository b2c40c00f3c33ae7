package main

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testZone is testdata/example.zone's records.
func testZone(t testing.TB) zone {
	z := zone{}
	require.NoError(t, z.read(strings.NewReader(`
example.com. A 192.0.2.10
www.example.com. A 192.0.2.1 ; a comment
www.example.com. A 192.0.2.2
www.example.com. AAAA 2001:db8::1
`)))
	return z
}

// buildQuery builds, byte by byte, a query for name with id, type and
// class, with an OPT record of version ednsVersion and UDP size size when
// size is not zero.
func buildQuery(id uint16, name string, qtype, qclass uint16, size uint16, ednsVersion uint8) []byte {
	m := binary.BigEndian.AppendUint16(nil, id)
	m = append(m, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD; one question
	for label := range strings.SplitSeq(strings.TrimSuffix(name, "."), ".") {
		m = append(append(m, byte(len(label))), label...)
	}
	m = append(m, 0)
	m = binary.BigEndian.AppendUint16(m, qtype)
	m = binary.BigEndian.AppendUint16(m, qclass)
	if size != 0 {
		m[11] = 1
		m = append(m, 0, 0, typeOPT, byte(size>>8), byte(size), 0, ednsVersion, 0, 0, 0, 0)
	}
	return m
}

// answerOf reads what a test needs of an answer: its ID, flags, counts,
// and the addresses of its records.
type answerOf struct {
	id, flags          uint16
	qd, an, ns, ar     int
	rcode              int
	addrs              []string
	ednsSize, ednsHigh int
}

func readAnswer(t testing.TB, m []byte) answerOf {
	t.Helper()
	require.GreaterOrEqual(t, len(m), headerLen)
	a := answerOf{id: binary.BigEndian.Uint16(m), flags: binary.BigEndian.Uint16(m[2:]),
		qd: count(m, 4), an: count(m, 6), ns: count(m, 8), ar: count(m, 10)}
	a.rcode = int(a.flags & 0xf)
	off := headerLen
	if a.qd == 1 {
		n := nameLen(m[off:])
		require.Positive(t, n)
		off += n + 4
	}
	for range a.an + a.ar {
		end, rr, ok := record(m, off)
		require.True(t, ok, "a record cut short")
		data := m[dataAt(m, off):end]
		switch rr.typ {
		case typeA, typeAAAA:
			ip, _ := netip.AddrFromSlice(data)
			a.addrs = append(a.addrs, ip.String())
		case typeOPT:
			a.ednsSize, a.ednsHigh = int(rr.class), int(rr.ttl>>24)
		}
		off = end
	}
	require.Equal(t, len(m), off, "bytes past the last record")
	return a
}

// dataAt returns where the data of the record at off begins: past its
// name, a pointer or labels, and its fixed fields.
func dataAt(m []byte, off int) int {
	for m[off] != 0 && m[off]&0xc0 != 0xc0 {
		off += 1 + int(m[off])
	}
	if m[off] == 0 {
		return off + 1 + rrFixedLen
	}
	return off + 2 + rrFixedLen
}

func TestAnswers(t *testing.T) {
	s := newServer(testZone(t), 60, 1)
	ask := func(m []byte) answerOf {
		out := s.answer(nil, m, &s.bufs[0])
		return readAnswer(t, out)
	}
	a := ask(buildQuery(7, "WWW.Example.COM", typeA, classIN, 0, 0))
	assert.Equal(t, uint16(7), a.id)
	assert.Equal(t, rcodeNoError, a.rcode)
	assert.NotZero(t, a.flags&flagQR)
	assert.NotZero(t, a.flags&flagAA)
	assert.NotZero(t, a.flags&flagRD, "RD copied")
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, a.addrs)
	assert.Zero(t, a.ar, "no OPT without one in the query")

	a = ask(buildQuery(8, "www.example.com", typeAAAA, classIN, 4096, 0))
	require.Len(t, a.addrs, 1)
	assert.Equal(t, "2001:db8::1", a.addrs[0])
	assert.Equal(t, ednsUDP, a.ednsSize)

	a = ask(buildQuery(9, "example.com", typeAAAA, classIN, 0, 0))
	assert.Equal(t, rcodeNoError, a.rcode, "NODATA")
	assert.Empty(t, a.addrs)

	assert.Equal(t, rcodeNXDomain, ask(buildQuery(10, "nope.example.com", typeA, classIN, 0, 0)).rcode)
	assert.Equal(t, rcodeRefused, ask(buildQuery(11, "www.example.com", typeA, 3, 0, 0)).rcode, "class CH")

	a = ask(buildQuery(12, "www.example.com", typeA, classIN, 1232, 1))
	assert.Equal(t, rcodeBadVers, a.ednsHigh<<4|a.rcode)

	notify := buildQuery(13, "example.com", typeA, classIN, 0, 0)
	notify[2] |= 4 << 3 // opcode NOTIFY
	a = ask(notify)
	assert.Equal(t, rcodeNotImp, a.rcode)
	assert.Equal(t, uint16(4), a.flags>>opcodeShift&0xf)
}

// A malformed query gets FORMERR with its ID; a message too short for an
// ID, or a response, gets nothing.
func TestMalformed(t *testing.T) {
	s := newServer(testZone(t), 60, 1)
	good := buildQuery(0x4242, "www.example.com", typeA, classIN, 512, 0)
	twoQuestions := buildQuery(0x4242, "www.example.com", typeA, classIN, 0, 0)
	twoQuestions[5] = 2
	pointer := append(buildQuery(0x4242, "x", typeA, classIN, 0, 0)[:headerLen], 0xc0, 12, 0, 1, 0, 1)
	twoOPT := append(append([]byte(nil), good...), good[len(good)-11:]...)
	twoOPT[11] = 2
	longLabel := append(buildQuery(0x4242, "x", typeA, classIN, 0, 0)[:headerLen], 64)
	longLabel = append(append(longLabel, strings.Repeat("a", 64)...), 0, 0, 1, 0, 1)
	for name, m := range map[string][]byte{
		"no question":     append(good[:4:4], 0, 0, 0, 0, 0, 0, 0, 0),
		"two questions":   twoQuestions,
		"name cut":        good[:headerLen+5],
		"type cut":        good[:headerLen+17+2],
		"OPT cut":         good[:len(good)-3],
		"trailing bytes":  append(append([]byte(nil), good...), 0),
		"pointer":         pointer,
		"two OPT records": twoOPT,
		"label of 64":     longLabel,
	} {
		out := s.answer(nil, m, &s.bufs[0])
		a := readAnswer(t, out)
		assert.Equal(t, rcodeFormErr, a.rcode, name)
		assert.Equal(t, uint16(0x4242), a.id, name)
		assert.Zero(t, a.qd, name)
	}
	assert.Empty(t, s.answer(nil, good[:11], &s.bufs[0]), "shorter than a header")
	response := append([]byte(nil), good...)
	response[2] |= 0x80
	assert.Empty(t, s.answer(nil, response, &s.bufs[0]), "a response")
}

// An answer larger than the client takes over UDP keeps its question
// alone and is marked truncated.
func TestTruncated(t *testing.T) {
	z := zone{}
	for i := range 40 {
		require.NoError(t, z.add("many.example.com", "AAAA", "2001:db8::"+strings.Repeat("1", 1+i%4)+":"+string(rune('a'+i%6))))
	}
	s := newServer(z, 60, 1)
	a := readAnswer(t, s.answer(nil, buildQuery(1, "many.example.com", typeAAAA, classIN, 0, 0), &s.bufs[0]))
	assert.NotZero(t, a.flags&flagTC)
	assert.Zero(t, a.an)
	out := s.answer(nil, buildQuery(1, "many.example.com", typeAAAA, classIN, 4096, 0), &s.bufs[0])
	assert.LessOrEqual(t, len(out), ednsUDP)
	a = readAnswer(t, out)
	assert.Zero(t, a.flags&flagTC, "40 AAAA records fit in 1232 bytes")
	assert.Equal(t, 40, a.an)
}

func TestAnswerAllocatesNothing(t *testing.T) {
	s := newServer(testZone(t), 60, 1)
	q := buildQuery(7, "WWW.example.com", typeA, classIN, 1232, 0)
	bad := q[:20]
	b := &s.bufs[0]
	allocs := testing.AllocsPerRun(100, func() {
		b.answer = s.answer(b.answer[:0], q, b)
		b.answer = s.answer(b.answer[:0], bad, b)
	})
	assert.Zero(t, allocs)
}

func TestZoneFile(t *testing.T) {
	for _, bad := range []string{"www A", "www A 2001:db8::1", "www AAAA 192.0.2.1", "www MX 192.0.2.1", "a..b A 192.0.2.1",
		strings.Repeat("a", 64) + " A 192.0.2.1"} {
		assert.Error(t, zone{}.read(strings.NewReader(bad)), bad)
	}
}

// FuzzAnswer holds the server to answering any message without a panic,
// with nothing or with a well-formed answer that carries the message's ID
// and never more than a client takes.
func FuzzAnswer(f *testing.F) {
	f.Add(buildQuery(1, "www.example.com", typeA, classIN, 0, 0))
	f.Add(buildQuery(2, "www.example.com", typeAAAA, classIN, 1232, 0))
	f.Add(buildQuery(3, "nope.example.com", typeA, classIN, 4096, 1))
	f.Add([]byte("\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x01\x00\x00\x01\x00\x01\xc0\x0c\x00\x29\x10\x00\x00\x00\x00\x00\x00\x00"))
	s := newServer(testZone(f), 60, 1)
	f.Fuzz(func(t *testing.T, m []byte) {
		out := s.answer(nil, m, &s.bufs[0])
		if len(out) == 0 {
			return
		}
		a := readAnswer(t, out)
		assert.Equal(t, binary.BigEndian.Uint16(m), a.id)
		assert.NotZero(t, a.flags&flagQR)
		assert.LessOrEqual(t, len(out), ednsUDP)
		if _, err := parseQuery(m); err == nil {
			assert.Equal(t, 1, a.qd)
		}
	})
}
