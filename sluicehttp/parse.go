package sluicehttp

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"unsafe"
)

// The request head parser. It runs on the loop over the connection's
// inbound bytes, and accepts and refuses exactly what net/http's server
// does (net/http's readRequest, net/textproto's header reader, and the
// checks of its conn.readRequest), so that a request both servers sit
// behind is framed the same way by both: what one takes as a body, the
// other cannot take as a request.

// headEnd returns the length of the request head at the start of p,
// through the blank line that ends it, or -1 when p does not hold all of
// it yet. A line ends with "\n", with or without "\r" before it, as
// net/textproto reads lines. The search for that line's end starts at
// from: what an earlier call looked at again costs nothing.
func headEnd(p []byte, from int) int {
	for i := from; i < len(p); {
		j := bytes.IndexByte(p[i:], '\n')
		if j < 0 {
			return -1
		}
		k := i + j + 1 // just after the line's "\n"
		switch {
		case k < len(p) && p[k] == '\n':
			return k + 1
		case k+1 < len(p) && p[k] == '\r' && p[k+1] == '\n':
			return k + 2
		}
		i = k
	}
	return -1
}

// resumeAt is where headEnd may start again once it found no end in p:
// a blank line that p holds the start of begins in its last three bytes.
func resumeAt(p []byte) int { return max(len(p)-3, 0) }

// reqError is why a request head, or the wait for one, is refused: the
// status and the words net/http's server answers with. text is "" for
// its plain "400 Bad Request".
type reqError struct {
	code int
	text string
}

var (
	errBadRequest      = &reqError{code: http.StatusBadRequest}
	errUnsupportedTE   = &reqError{code: http.StatusNotImplemented}
	errTooLarge        = &reqError{code: http.StatusRequestHeaderFieldsTooLarge}
	errVersion         = &reqError{code: http.StatusHTTPVersionNotSupported, text: "unsupported protocol version"}
	errMissingHost     = &reqError{code: http.StatusBadRequest, text: "missing required Host header"}
	errMalformedHost   = &reqError{code: http.StatusBadRequest, text: "malformed Host header"}
	errHeaderName      = &reqError{code: http.StatusBadRequest, text: "invalid header name"}
	errTimeout         = &reqError{code: http.StatusRequestTimeout}
	errBodyTooLarge    = &reqError{code: http.StatusRequestEntityTooLarge}
	errExpectation     = &reqError{code: http.StatusExpectationFailed}
	errOverloaded      = &reqError{code: http.StatusServiceUnavailable}
	errHandlerPanicked = &reqError{code: http.StatusInternalServerError}
)

func (e *reqError) Error() string {
	if e.text == "" {
		return http.StatusText(e.code)
	}
	return http.StatusText(e.code) + ": " + e.text
}

// head is what the parser learns of a request beyond the http.Request it
// fills: how its body is framed.
type head struct {
	facts

	// Room for the request's URL, its header's values and the copy of a
	// small head, made with the head rather than one by one: the
	// request points into it.
	url   url.URL
	vals  [7]string
	small [smallHead]byte
}

// facts is what parseHead learns of a request's head beyond its
// http.Request, from a zero value: all a head must have reset to be
// parsed into again (LoopRequest.reset).
type facts struct {
	length  int64 // the body's length when not chunked
	chunked bool
	expect  bool // Expect: 100-continue, with a body to come
	both    bool // Content-Length and Transfer-Encoding both came
	has     fieldBits
	hosts   uint8  // how many Host fields came: 0, 1, or 2 for more
	host    string // the first Host field's value
}

// fieldBits says which of the header fields the server reads itself came
// with a request (parseFields): those that did not are not looked up.
type fieldBits uint8

const (
	hasConnection fieldBits = 1 << iota
	hasPragma
	hasTransferEncoding
	hasContentLength
	hasExpect
	hasUpgrade
	hasTrailer
)

// fieldBit returns the bit of key, in canonical form, or 0.
func fieldBit(key string) fieldBits {
	switch key {
	case "Connection":
		return hasConnection
	case "Pragma":
		return hasPragma
	case "Transfer-Encoding":
		return hasTransferEncoding
	case "Content-Length":
		return hasContentLength
	case "Expect":
		return hasExpect
	case "Upgrade":
		return hasUpgrade
	case "Trailer":
		return hasTrailer
	}
	return 0
}

// smallHead is the longest head copied into its request's own room: one
// from curl, wrk or a load test's client, not a browser's.
const smallHead = 256

// parseHead parses b, a whole request head (request line, header lines
// and the blank line), into r and h. b becomes the request's: its strings
// point into it, so it must not change afterwards. The header's first
// values go in room, when not nil, rather than in h.vals: a LoopRequest's,
// kept by its loop, holds more. It returns nil or why net/http's server
// would refuse the request.
func parseHead(b []byte, r *http.Request, h *head, room []string) *reqError {
	// The strings of the request are views of b, which nothing writes to
	// once the header keys are put in their canonical form below.
	line, rest := nextLine(b)
	method, uri, proto, ok := cutRequestLine(line)
	if !ok || !isToken(str(method)) {
		return errBadRequest
	}
	major, minor, ok := parseVersion(proto)
	if !ok {
		return errBadRequest
	}
	r.Method, r.RequestURI = str(method), str(uri)
	r.Proto, r.ProtoMajor, r.ProtoMinor = str(proto), major, minor

	rawurl := r.RequestURI
	justAuthority := r.Method == "CONNECT" && !strings.HasPrefix(rawurl, "/")
	if justAuthority {
		rawurl = "http://" + rawurl
	}
	u := &h.url
	if !parsePlainURI(rawurl, u) {
		var err error
		if u, err = url.ParseRequestURI(rawurl); err != nil {
			return errBadRequest
		}
	}
	if justAuthority {
		u.Scheme = ""
	}
	r.URL = u

	hdr, invalid, e := parseFields(rest, h, room, r.Header)
	if e != nil {
		return e
	}
	r.Header = hdr
	if h.hosts > 1 {
		return errBadRequest
	}
	r.Host = u.Host
	if r.Host == "" {
		r.Host = h.host
	}
	if pv := h.values(hdr, hasPragma, "Pragma"); len(pv) > 0 && pv[0] == "no-cache" {
		if _, ok := hdr["Cache-Control"]; !ok {
			hdr["Cache-Control"] = []string{"no-cache"}
		}
	}
	r.Close = shouldClose(major, minor, h.values(hdr, hasConnection, "Connection"))
	if e := transfer(r, h); e != nil {
		return e
	}
	// net/http asks this of the header with its Host field still in it.
	h2 := r.Method == "PRI" && len(hdr) == 0 && h.hosts == 0 && u.Path == "*" && r.Proto == "HTTP/2.0"
	if h2 {
		r.ContentLength = -1
		r.Close = true
	}

	// What net/http's server checks once the request is read.
	if major != 1 && !(major == 2 && minor == 0 && r.Method == "PRI" && r.RequestURI == "*") {
		return errVersion
	}
	if r.ProtoAtLeast(1, 1) && h.hosts == 0 && !h2 && r.Method != "CONNECT" {
		return errMissingHost
	}
	if h.hosts == 1 && !validHost(h.host) {
		return errMalformedHost
	}
	if invalid != nil {
		return invalid
	}

	if expect := h.values(hdr, hasExpect, "Expect"); len(expect) > 0 {
		switch {
		case hasToken(expect[0], "100-continue"):
			h.expect = r.ProtoAtLeast(1, 1) && r.ContentLength != 0
		case expect[0] != "":
			return errExpectation
		}
	}
	return nil
}

// values returns hdr[key], looking it up only if the request came with
// it (bit).
func (h *head) values(hdr http.Header, bit fieldBits, key string) []string {
	if h.has&bit == 0 {
		return nil
	}
	return hdr[key]
}

// first returns the first of hdr's values of key, or "", looking it up
// only if the request came with it (bit).
func (h *head) first(hdr http.Header, bit fieldBits, key string) string {
	if v := h.values(hdr, bit, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// str returns b as a string without copying it: b is the request's own
// copy of its head, which nothing changes once it is parsed.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// nextLine returns the line at the start of b without its end ("\n" or
// "\r\n"), and what follows it.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// cutRequestLine splits "METHOD URI PROTO" at its first two spaces.
func cutRequestLine(line []byte) (method, uri, proto []byte, ok bool) {
	method, rest, ok1 := bytes.Cut(line, []byte{' '})
	uri, proto, ok2 := bytes.Cut(rest, []byte{' '})
	return method, uri, proto, ok1 && ok2
}

// parseVersion reads "HTTP/X.Y", one digit each, as net/http does.
func parseVersion(v []byte) (major, minor int, ok bool) {
	switch string(v) {
	case "HTTP/1.1":
		return 1, 1, true
	case "HTTP/1.0":
		return 1, 0, true
	}
	if len(v) != len("HTTP/X.Y") || string(v[:5]) != "HTTP/" || v[6] != '.' ||
		!isDigit(v[5]) || !isDigit(v[7]) {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parsePlainURI parses the most common request target, a path of bytes
// that need no escaping with perhaps a query, into u as
// url.ParseRequestURI would, and reports whether it could: for any other
// target it changes nothing, and url.ParseRequestURI parses it.
func parsePlainURI(uri string, u *url.URL) bool {
	path, query, hasQuery := strings.Cut(uri, "?")
	if len(path) == 0 || path[0] != '/' {
		return false
	}
	for i := 0; i < len(path); i++ {
		if !plainPathByte[path[i]] {
			return false
		}
	}
	if hasQuery && (query == "" || strings.IndexByte(query, '?') >= 0) {
		return false // ForceQuery, or a question mark within: the slow path
	}
	for i := 0; i < len(query); i++ {
		if c := query[i]; c < ' ' || c == 0x7f {
			return false
		}
	}
	*u = url.URL{Path: path, RawQuery: query}
	return true
}

// plainPathByte holds the bytes a path may have that url.URL.EscapedPath
// leaves as they are (RFC 3986's unreserved characters, and the reserved
// ones allowed in a path), and which unescaping leaves too: no '%'.
var plainPathByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "-_.~$&+,/:;=@" {
		t[c] = true
	}
	return t
}()

// parseFields parses header lines up to the blank line, as
// net/textproto's ReadMIMEHeader does: keys in canonical form (b's bytes
// are changed in place for it), values with the spaces around them
// trimmed, obsolete line folding joined with a space. For a request's
// head, h is its head: the first values go in room, or h.vals when room
// is nil, when either has room enough, and Host fields are not put
// in the map, which net/http's server takes them out of once the request
// is read: h.hosts counts them and h.host holds the first, so that a
// request with only a Host field gets an empty map, which costs one
// allocation less. For a trailer, h is nil, and every field goes in the
// map. The fields go in hdr, an empty map, or a new one when hdr is nil.
// What net/textproto refuses is err; invalid is what it takes but
// net/http's server refuses once the request is read, after its other
// checks: a key with a space in it (errHeaderName). Values are checked
// whole here, folded or not, so none reaches that later check. h.has
// says which fields the server reads itself came (fieldBits).
func parseFields(b []byte, h *head, room []string, hdr http.Header) (_ http.Header, invalid, err *reqError) {
	n := 0
	for p := b; len(p) > 0; {
		var line []byte
		line, p = nextLine(p)
		if len(line) == 0 {
			break
		}
		if line[0] != ' ' && line[0] != '\t' && (h == nil || !isHostLine(line)) {
			n++
		}
	}
	if hdr == nil {
		hdr = make(http.Header, n)
	}
	if h != nil && room == nil {
		room = h.vals[:]
	}
	strs := room[:min(n, len(room))]
	if n > len(room) {
		strs = make([]string, n)
	}
	if len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		return nil, nil, errBadRequest // a first line may not be a continuation
	}
	for {
		var line []byte
		line, b = nextLine(b)
		if len(line) == 0 {
			return hdr, invalid, nil
		}
		if bytes.IndexByte(line, ':') < 0 {
			return nil, nil, errBadRequest
		}
		kv := trim(line)
		if len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
			// Obsolete line folding: each continuation joins the value
			// after one space, as net/textproto joins it.
			joined := append([]byte(nil), kv...)
			for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
				for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
					b = b[1:]
				}
				var cont []byte
				cont, b = nextLine(b)
				joined = append(joined, ' ')
				joined = append(joined, trim(cont)...)
			}
			kv = joined
		}
		k, v, _ := bytes.Cut(kv, []byte{':'})
		key, ok := canonicalKey(k)
		if !ok {
			return nil, nil, errBadRequest
		}
		for _, c := range v {
			if !validValueByte(c) {
				return nil, nil, errBadRequest
			}
		}
		for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
			v = v[1:]
		}
		value := str(v)
		if invalid == nil && !isToken(key) {
			invalid = errHeaderName // a space in it
		}
		if h != nil { // a request's head, not a trailer
			h.has |= fieldBit(key)
			if key == "Host" {
				if h.hosts == 0 {
					h.host = value
				}
				h.hosts = min(h.hosts+1, 2)
				continue
			}
		}
		if vv, ok := hdr[key]; ok {
			hdr[key] = append(vv, value)
		} else if len(strs) > 0 {
			vv, strs = strs[:1:1], strs[1:]
			vv[0] = value
			hdr[key] = vv
		} else {
			hdr[key] = []string{value}
		}
	}
}

// isHostLine reports whether line, a header line, is a Host field's, in
// any case, so that parseFields sizes the map without it. A line it
// misses ("Host :", which is malformed anyway) only sizes the map larger.
func isHostLine(line []byte) bool {
	return len(line) >= 5 && line[4] == ':' && asciiEqualFold(str(line[:4]), "host")
}

// first returns the first value of h's field key, which is in canonical
// form: http.Header.Get without putting key in that form.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// trim drops spaces and tabs from both ends of s, as net/textproto does
// to a header line.
func trim(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// canonicalKey returns the key k in canonical form ("Content-Length"),
// changing k in place, as net/textproto reads it: a key with a space in
// it is kept as it is (and refused later, as net/http's server refuses
// it), and any other byte that is not a token's makes it malformed.
func canonicalKey(k []byte) (string, bool) {
	if len(k) == 0 {
		return "", false
	}
	spaced := false
	for _, c := range k {
		switch {
		case tokenByte[c]:
		case c == ' ':
			spaced = true
		default:
			return "", false
		}
	}
	if spaced {
		return str(k), true
	}
	upper := true
	for i, c := range k {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k[i] = c
		upper = c == '-'
	}
	return str(k), true
}

// tokenByte holds the bytes of an RFC 7230 token.
var tokenByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte[s[i]] {
			return false
		}
	}
	return true
}

// validValueByte reports whether c may appear in a header value: any byte
// but the control characters, of which only the tab is allowed.
func validValueByte(c byte) bool { return c >= ' ' && c != 0x7f || c == '\t' }

// validHost reports whether h has only bytes that may appear in a host and
// port: net/http's lenient check.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if !hostByte[h[i]] {
			return false
		}
	}
	return true
}

var hostByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!$%&()*+,-.:;=[']_~" {
		t[c] = true
	}
	return t
}()

// shouldClose reports whether the request asks for the connection to
// close after its response.
func shouldClose(major, minor int, conv []string) bool {
	if major < 1 {
		return true
	}
	hasClose := valuesHaveToken(conv, "close")
	if major == 1 && minor == 0 {
		return hasClose || !valuesHaveToken(conv, "keep-alive")
	}
	return hasClose
}

// transfer applies net/http's rules for a request's body framing: only a
// single Transfer-Encoding of "chunked" (ignored on HTTP/1.0), Content-
// Length values that agree and parse, and a chunked body's declared
// trailers.
func transfer(r *http.Request, h *head) *reqError {
	hdr := r.Header
	if te := h.values(hdr, hasTransferEncoding, "Transfer-Encoding"); te != nil {
		delete(hdr, "Transfer-Encoding")
		// net/http takes HTTP/0.0 for 1.1 here, ignoring only 1.0's.
		if r.ProtoAtLeast(1, 1) || r.ProtoMajor == 0 && r.ProtoMinor == 0 {
			if len(te) != 1 || !asciiEqualFold(te[0], "chunked") {
				return errUnsupportedTE
			}
			h.chunked = true
		}
	}
	cls := h.values(hdr, hasContentLength, "Content-Length")
	if len(cls) > 1 {
		first := textproto.TrimString(cls[0])
		for _, cl := range cls[1:] {
			if textproto.TrimString(cl) != first {
				return errBadRequest
			}
		}
		hdr["Content-Length"] = []string{first}
		cls = hdr["Content-Length"]
	}
	var n int64
	if len(cls) > 0 {
		cl := textproto.TrimString(cls[0])
		v, err := strconv.ParseUint(cl, 10, 63)
		if cl == "" || err != nil {
			return errBadRequest
		}
		n = int64(v)
	}
	switch {
	case h.chunked:
		h.both = len(cls) > 0
		delete(hdr, "Content-Length")
		r.ContentLength = -1
		r.TransferEncoding = []string{"chunked"}
	case len(cls) > 0:
		r.ContentLength = n
	}
	h.length = r.ContentLength

	if vv := h.values(hdr, hasTrailer, "Trailer"); vv != nil && h.chunked {
		delete(hdr, "Trailer")
		var trailer http.Header
		for _, v := range vv {
			for f := range strings.SplitSeq(v, ",") {
				f = textproto.TrimString(f)
				if f == "" {
					continue
				}
				key := http.CanonicalHeaderKey(f)
				switch key {
				case "Transfer-Encoding", "Trailer", "Content-Length":
					return errBadRequest
				}
				if trailer == nil {
					trailer = make(http.Header)
				}
				trailer[key] = nil
			}
		}
		r.Trailer = trailer
	}
	return nil
}

// hasToken reports whether token, in lower case, is one of v's
// comma- or space-separated elements, in any case: net/http's rough test
// of Expect and Connection.
func hasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	if v == token {
		return true
	}
	for sp := 0; sp <= len(v)-len(token); sp++ {
		if b := v[sp]; b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !isTokenBoundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !isTokenBoundary(v[end]) {
			continue
		}
		if asciiEqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

func isTokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }

// valuesHaveToken reports whether one of the comma-separated elements of
// values is token, in any ASCII case.
func valuesHaveToken(values []string, token string) bool {
	for _, v := range values {
		for {
			elem, rest, more := strings.Cut(v, ",")
			if asciiEqualFold(trimOWS(elem), token) {
				return true
			}
			if !more {
				break
			}
			v = rest
		}
	}
	return false
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// asciiEqualFold is strings.EqualFold for ASCII only, as net/http
// compares tokens: "chunKed" with a Kelvin sign is not "chunked".
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
