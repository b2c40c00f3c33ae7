package main

import (
	"github.com/sluicenet/sluice"
)

// server answers DNS queries over UDP from its zone, each on the loop
// that received it.
type server struct {
	sluice.BuiltinEventEngine
	zone zone
	ttl  uint32
	bufs []loopBuffers // by loop index
}

// loopBuffers are a loop's: the answer it builds and the lower-cased
// name it looks up, reused for every query, so that answering allocates
// nothing.
type loopBuffers struct {
	answer, name []byte
}

func newServer(z zone, ttl uint32, loops int) *server {
	return &server{zone: z, ttl: ttl, bufs: make([]loopBuffers, loops)}
}

// OnTraffic answers one datagram: one query.
func (s *server) OnTraffic(c sluice.Conn) sluice.Action {
	m, _ := c.Next(-1)
	b := &s.bufs[c.Loop().Index()]
	b.answer = s.answer(b.answer[:0], m, b)
	if len(b.answer) > 0 {
		c.Write(b.answer)
	}
	return sluice.None
}

// answer appends to dst the answer to m, or nothing for a message that
// gets none.
func (s *server) answer(dst, m []byte, b *loopBuffers) []byte {
	q, err := parseQuery(m)
	switch {
	case err == errNoAnswer:
		return dst
	case err != nil:
		return appendFormErr(dst, m)
	case q.opcode != 0:
		return appendAnswer(dst, &q, rcodeNotImp, nil, 0)
	case q.edns && q.ednsVersion != 0:
		return appendAnswer(dst, &q, rcodeBadVers, nil, 0)
	case q.qclass != classIN:
		return appendAnswer(dst, &q, rcodeRefused, nil, 0)
	}
	set := s.zone.lookup(q.name, &b.name)
	if set == nil {
		return appendAnswer(dst, &q, rcodeNXDomain, nil, 0)
	}
	var records [][]byte
	switch q.qtype {
	case typeA:
		records = set.a
	case typeAAAA:
		records = set.aaaa
	}
	return appendAnswer(dst, &q, rcodeNoError, records, s.ttl)
}
