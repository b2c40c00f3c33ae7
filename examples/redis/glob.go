package main

// globMatch reports whether s matches the glob pattern as Redis matches
// KEYS and SCAN patterns: '*' matches any run of bytes, '?' any one byte,
// "[abc]", "[a-z]" and "[^abc]" one byte of a class, and '\' makes the
// next byte literal. With fold, letters match in either case.
//
// It backtracks only to the last '*', so its time is at most the product
// of the two lengths, however many stars the pattern has.
func globMatch(pattern, s []byte, fold bool) bool {
	p, i := 0, 0
	star, starAt := -1, 0 // the last '*' seen, and where in s it began matching
	for i < len(s) {
		if p < len(pattern) && pattern[p] == '*' {
			star, starAt = p, i
			p++
			continue
		}
		if p < len(pattern) {
			if n, ok := matchOne(pattern[p:], s[i], fold); ok {
				p += n
				i++
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Let the last '*' take one more byte, and try again after it.
		starAt++
		p, i = star+1, starAt
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches c against the token pattern starts with, other than
// '*', and returns the token's length.
func matchOne(pattern []byte, c byte, fold bool) (int, bool) {
	switch pattern[0] {
	case '?':
		return 1, true
	case '[':
		return matchClass(pattern, c, fold)
	case '\\':
		if len(pattern) > 1 {
			return 2, equalByte(pattern[1], c, fold)
		}
	}
	return 1, equalByte(pattern[0], c, fold)
}

// matchClass matches c against the class pattern starts with, "[...]",
// which runs to the end of pattern when it is not closed.
func matchClass(pattern []byte, c byte, fold bool) (int, bool) {
	i := 1
	negate := i < len(pattern) && pattern[i] == '^'
	if negate {
		i++
	}
	found := false
	for ; i < len(pattern) && pattern[i] != ']'; i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern):
			i++
			found = found || equalByte(pattern[i], c, fold)
		case i+2 < len(pattern) && pattern[i+1] == '-' && pattern[i+2] != ']':
			lo, hi := pattern[i], pattern[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if fold {
				lo, hi, c = toLower(lo), toLower(hi), toLower(c)
			}
			found = found || (lo <= c && c <= hi)
			i += 2
		default:
			found = found || equalByte(pattern[i], c, fold)
		}
	}
	if i < len(pattern) {
		i++ // the ']'
	}
	return i, found != negate
}

func equalByte(a, b byte, fold bool) bool {
	return a == b || (fold && toLower(a) == toLower(b))
}
