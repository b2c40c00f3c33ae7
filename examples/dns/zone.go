package main

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strings"
)

// zone holds the addresses the server answers for, by name in wire form,
// lower-cased.
type zone map[string]*addrs

// addrs are a name's A and AAAA records' addresses, in wire form.
type addrs struct {
	a, aaaa [][]byte
}

// add adds the record "name type address": type is A or AAAA, name a
// domain name with or without its final dot.
func (z zone) add(name, typ, addr string) error {
	wire, err := wireName(name)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return err
	}
	set := z[string(wire)]
	if set == nil {
		set = &addrs{}
		z[string(wire)] = set
	}
	switch {
	case strings.EqualFold(typ, "A") && ip.Is4():
		set.a = append(set.a, ip.AsSlice())
	case strings.EqualFold(typ, "AAAA") && ip.Is6() && !ip.Is4In6() && ip.Zone() == "":
		set.aaaa = append(set.aaaa, ip.AsSlice())
	default:
		return fmt.Errorf("%s %s %s: want A and an IPv4 address, or AAAA and an IPv6 one", name, typ, addr)
	}
	return nil
}

// read adds the records of a zone file: one "name type address" a line,
// as in a master file but with no TTL, class or origin; what follows a
// ';' or '#' is a comment.
func (z zone) read(r io.Reader) error {
	s := bufio.NewScanner(r)
	for line := 1; s.Scan(); line++ {
		text := s.Text()
		if i := strings.IndexAny(text, ";#"); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return fmt.Errorf("line %d: want name, type and address: %q", line, s.Text())
		}
		if err := z.add(f[0], f[1], f[2]); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	return s.Err()
}

// lookup returns the addresses of name, in wire form in any case,
// lower-casing it in *scratch, which it grows as it needs.
func (z zone) lookup(name []byte, scratch *[]byte) *addrs {
	lower := append((*scratch)[:0], name...)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	*scratch = lower
	return z[string(lower)]
}

// wireName returns name, lower-cased, in wire form: each label after its
// length, then 0.
func wireName(name string) ([]byte, error) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	var wire []byte
	if name != "" {
		for label := range strings.SplitSeq(name, ".") {
			if label == "" || len(label) > maxLabel {
				return nil, fmt.Errorf("bad name %q", name)
			}
			wire = append(append(wire, byte(len(label))), label...)
		}
	}
	wire = append(wire, 0)
	if len(wire) > maxName {
		return nil, fmt.Errorf("name %q longer than %d bytes", name, maxName)
	}
	return wire, nil
}
