package proxyproto

import "net/netip"

// The parsers below read the text addresses of a version 1 line. They work
// on byte slices, where netip.ParseAddr would need a string and so an
// allocation, and they are as strict as the specification: no leading zeros
// in decimal numbers, no IPv6 zones.

// decimal reads the decimal number at the start of s, of at most width
// digits and without a leading zero unless it is zero. n is the count of
// digits read, zero when s does not start with such a number.
func decimal(s []byte, width int) (v, n int) {
	for ; n < len(s) && n <= width; n++ {
		d := s[n] - '0'
		if d > 9 {
			break
		}
		v = v*10 + int(d)
	}
	if n > width || (n > 1 && s[0] == '0') {
		return 0, 0
	}
	return v, n
}

// parseIPv4 reads the IPv4 address at the start of s: four decimal numbers
// in [0, 255] joined by dots. n is the count of bytes read, zero when s does
// not start with an address.
func parseIPv4(s []byte) (ip [4]byte, n int) {
	for k := range ip {
		if k > 0 {
			if n == len(s) || s[n] != '.' {
				return ip, 0
			}
			n++
		}
		v, m := decimal(s[n:], 3)
		if m == 0 || v > 0xff {
			return ip, 0
		}
		ip[k] = byte(v)
		n += m
	}
	return ip, n
}

// hexGroup reads the hexadecimal number at the start of s, of at most four
// digits. n is the count of digits read.
func hexGroup(s []byte) (v uint16, n int) {
	for ; n < len(s) && n < 4; n++ {
		c := s[n]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return v, n
		}
		v = v<<4 | uint16(c)
	}
	return v, n
}

// parseIPv6 parses s in the text forms of RFC 4291, section 2.2: groups of
// one to four hexadecimal digits joined by colons, at most one "::" standing
// for one or more zero groups, and optionally the last 32 bits as a dotted
// IPv4 address (as in "::ffff:192.0.2.1").
func parseIPv6(s []byte) (netip.Addr, bool) {
	var ip [16]byte
	i := 0         // bytes of ip filled
	ellipsis := -1 // where "::" stands in ip
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis, s = 0, s[2:]
	}
	for len(s) > 0 {
		v, n := hexGroup(s)
		if n == 0 {
			return netip.Addr{}, false
		}
		if n < len(s) && s[n] == '.' {
			ip4, m := parseIPv4(s)
			if m != len(s) || i > 12 {
				return netip.Addr{}, false
			}
			i += copy(ip[i:], ip4[:])
			break
		}
		if i == 16 {
			return netip.Addr{}, false
		}
		ip[i], ip[i+1] = byte(v>>8), byte(v)
		i += 2
		s = s[n:]
		if len(s) == 0 {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return netip.Addr{}, false
		}
		s = s[1:]
		if s[0] == ':' {
			if ellipsis >= 0 {
				return netip.Addr{}, false
			}
			ellipsis, s = i, s[1:]
		}
	}
	if ellipsis < 0 {
		return netip.AddrFrom16(ip), i == 16
	}
	if i == 16 {
		return netip.Addr{}, false
	}
	// Slide the groups after "::" to the end and zero the gap.
	gap := 16 - i
	copy(ip[ellipsis+gap:], ip[ellipsis:i])
	clear(ip[ellipsis : ellipsis+gap])
	return netip.AddrFrom16(ip), true
}
