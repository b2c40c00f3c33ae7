package sluicehttp

import (
	"fmt"
	"strings"
)

// vector is one input of the differential tests: what a client sends,
// after which it finishes sending.
type vector struct {
	name string
	raw  string
}

// vectors returns the corpus the differential tests send to net/http's
// server and to this one: valid requests of every shape, malformed ones,
// and the published request smuggling vectors (CL.TE, TE.CL, TE.TE with
// obfuscated Transfer-Encoding headers, chunk size tricks, NUL and CR in
// headers, oversize heads).
func vectors() []vector {
	const host = "Host: example.com\r\n"
	v := []vector{
		// Valid requests.
		{"get", "GET / HTTP/1.1\r\n" + host + "\r\n"},
		{"get query", "GET /search?q=a+b&x=%20y HTTP/1.1\r\n" + host + "\r\n"},
		{"get fragment-like", "GET /a%23b HTTP/1.1\r\n" + host + "\r\n"},
		{"head", "HEAD / HTTP/1.1\r\n" + host + "\r\n"},
		{"options star", "OPTIONS * HTTP/1.1\r\n" + host + "\r\n"},
		{"get star", "GET * HTTP/1.1\r\n" + host + "\r\n"},
		{"absolute form", "GET http://other.example/path?x=1 HTTP/1.1\r\n" + host + "\r\n"},
		{"absolute form no host header", "GET http://other.example/path HTTP/1.1\r\n\r\n"},
		{"connect authority", "CONNECT example.com:443 HTTP/1.1\r\n" + host + "\r\n"},
		{"connect no host", "CONNECT example.com:443 HTTP/1.1\r\n\r\n"},
		{"connect path", "CONNECT /rpc HTTP/1.1\r\n" + host + "\r\n"},
		{"http10", "GET / HTTP/1.0\r\n\r\n"},
		{"http10 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
		{"http10 host", "GET / HTTP/1.0\r\n" + host + "\r\n"},
		{"http12", "GET / HTTP/1.2\r\n" + host + "\r\n"},
		{"http19", "GET / HTTP/1.9\r\n" + host + "\r\n"},
		{"connection close", "GET / HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n"},
		{"connection list", "GET / HTTP/1.1\r\n" + host + "Connection: keep-alive, Close\r\n\r\n"},
		{"post length", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello"},
		{"post length zero", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 0\r\n\r\n"},
		{"post length leading zeros", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 0005\r\n\r\nhello"},
		{"post length spaces", "POST /p HTTP/1.1\r\n" + host + "Content-Length:   5  \r\n\r\nhello"},
		{"post length tab", "POST /p HTTP/1.1\r\n" + host + "Content-Length:\t5\r\n\r\nhello"},
		{"post same lengths", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello"},
		{"post no length", "POST /p HTTP/1.1\r\n" + host + "\r\nhello"},
		{"get with body", "GET / HTTP/1.1\r\n" + host + "Content-Length: 3\r\n\r\nabc"},
		{"chunked", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"},
		{"chunked upper", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: CHUNKED\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n"},
		{"chunked leading zeros", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0005\r\nhello\r\n000\r\n\r\n"},
		{"chunked extension", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n0;last\r\n\r\n"},
		{"chunked quoted extension", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5;n=\"a;b\"\r\nhello\r\n0\r\n\r\n"},
		{"chunked size trailing space", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n"},
		{"chunked size trailing tab", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\t\r\nhello\r\n0\r\n\r\n"},
		{"chunked trailers", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 42\r\n\r\n"},
		{"chunked undeclared trailer", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Other: 1\r\nX-More: 2\r\n\r\n"},
		{"chunked trailer declared list", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTrailer: a, b\r\n\r\n0\r\nA: 1\r\nB: 2\r\n\r\n"},
		{"chunked empty", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"chunked http10 ignored", "POST /c HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc"},
		{"chunked http10 no length", "POST /c HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
		{"bare LF", "GET / HTTP/1.1\n" + "Host: example.com\n\n"},
		{"mixed line ends", "GET / HTTP/1.1\r\nHost: example.com\nX-A: 1\r\n\n"},
		{"obs-fold", "GET / HTTP/1.1\r\n" + host + "X-Folded: a\r\n b\r\n\tc\r\n\r\n"},
		{"obs-fold blank continuation", "GET / HTTP/1.1\r\n" + host + "X-Folded: a\r\n \r\n\r\n"},
		{"multi values", "GET / HTTP/1.1\r\n" + host + "Accept: a\r\nAccept: b\r\naccept: c\r\n\r\n"},
		{"empty value", "GET / HTTP/1.1\r\n" + host + "X-Empty:\r\n\r\n"},
		{"value spaces", "GET / HTTP/1.1\r\n" + host + "X-Spaces:   a  b   \r\n\r\n"},
		{"value tabs", "GET / HTTP/1.1\r\n" + host + "X-Tabs:\ta\tb\t\r\n\r\n"},
		{"value obs-text", "GET / HTTP/1.1\r\n" + host + "X-Utf8: caf\xc3\xa9 \xff\r\n\r\n"},
		{"lowercase keys", "GET / HTTP/1.1\r\nhost: example.com\r\ncontent-type: text/plain\r\nx-request-id: 7\r\n\r\n"},
		{"odd key tokens", "GET / HTTP/1.1\r\n" + host + "X-!#$%&'*+.^_`|~: 1\r\n\r\n"},
		{"pragma", "GET / HTTP/1.1\r\n" + host + "Pragma: no-cache\r\n\r\n"},
		{"pragma with cache-control", "GET / HTTP/1.1\r\n" + host + "Pragma: no-cache\r\nCache-Control: max-age=1\r\n\r\n"},
		{"expect continue", "POST /p HTTP/1.1\r\n" + host + "Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello"},
		{"expect continue no body", "GET / HTTP/1.1\r\n" + host + "Expect: 100-continue\r\n\r\n"},
		{"expect continue http10", "POST /p HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello"},
		{"expect continue case", "POST /p HTTP/1.1\r\n" + host + "Expect: 100-Continue\r\nContent-Length: 2\r\n\r\nhi"},
		{"expect other", "GET / HTTP/1.1\r\n" + host + "Expect: something\r\n\r\n"},
		{"expect empty", "GET / HTTP/1.1\r\n" + host + "Expect:\r\n\r\n"},
		{"host port", "GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"},
		{"host ipv6", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"},
		{"host empty", "GET / HTTP/1.1\r\nHost:\r\n\r\n"},
		{"upgrade", "GET /ws HTTP/1.1\r\n" + host + "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
		{"long uri", "GET /" + strings.Repeat("a", 8000) + " HTTP/1.1\r\n" + host + "\r\n"},
		{"many headers", "GET / HTTP/1.1\r\n" + host + manyHeaders(200) + "\r\n"},
		{"long header value", "GET / HTTP/1.1\r\n" + host + "X-Long: " + strings.Repeat("v", 20000) + "\r\n\r\n"},
		{"extension method", "PURGE /x HTTP/1.1\r\n" + host + "\r\n"},
		{"method token chars", "M-1.x_y~ / HTTP/1.1\r\n" + host + "\r\n"},
		{"lowercase method", "get / HTTP/1.1\r\n" + host + "\r\n"},
		{"pri preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{"encoded path", "GET /a%2Fb/%E2%82%AC HTTP/1.1\r\n" + host + "\r\n"},
		{"path dots", "GET /a/../b/./c HTTP/1.1\r\n" + host + "\r\n"},
		{"double slash", "GET //x//y HTTP/1.1\r\n" + host + "\r\n"},
		{"path params", "GET /a;b=c/d;e?f=g;h HTTP/1.1\r\n" + host + "\r\n"},
		{"empty query", "GET /q? HTTP/1.1\r\n" + host + "\r\n"},
		{"query marks", "GET /q?a?b HTTP/1.1\r\n" + host + "\r\n"},
		{"fragment", "GET /p#f?x HTTP/1.1\r\n" + host + "\r\n"},
		{"query fragment", "GET /p?x=1#f HTTP/1.1\r\n" + host + "\r\n"},
		{"raw utf-8 path", "GET /\xc3\xa9?\xc3\xa9 HTTP/1.1\r\n" + host + "\r\n"},
		{"bad escape query", "GET /p?x=%zz HTTP/1.1\r\n" + host + "\r\n"},
		{"absolute form", "GET http://other.example:81/x?y HTTP/1.1\r\n" + host + "\r\n"},
		{"absolute form no path", "GET http://other.example HTTP/1.1\r\n" + host + "\r\n"},
		{"path sub-delims", "GET /~u/-_.$&+,:;=@ HTTP/1.1\r\n" + host + "\r\n"},

		// Malformed request lines.
		{"empty line first", "\r\nGET / HTTP/1.1\r\n" + host + "\r\n"},
		{"no version", "GET /\r\n" + host + "\r\n"},
		{"no uri", "GET HTTP/1.1\r\n" + host + "\r\n"},
		{"two spaces", "GET  / HTTP/1.1\r\n" + host + "\r\n"},
		{"trailing space", "GET / HTTP/1.1 \r\n" + host + "\r\n"},
		{"tab separators", "GET\t/\tHTTP/1.1\r\n" + host + "\r\n"},
		{"space in uri", "GET /a b HTTP/1.1\r\n" + host + "\r\n"},
		{"lowercase version", "GET / http/1.1\r\n" + host + "\r\n"},
		{"version 1.10", "GET / HTTP/1.10\r\n" + host + "\r\n"},
		{"version 1", "GET / HTTP/1\r\n" + host + "\r\n"},
		{"version 2.0", "GET / HTTP/2.0\r\n" + host + "\r\n"},
		{"version 3.0", "GET / HTTP/3.0\r\n" + host + "\r\n"},
		{"version 0.9", "GET / HTTP/0.9\r\n" + host + "\r\n"},
		{"version 1.x", "GET / HTTP/1.x\r\n" + host + "\r\n"},
		{"version +1.1", "GET / HTTP/+.1\r\n" + host + "\r\n"},
		{"version junk", "GET / FOO/1.1\r\n" + host + "\r\n"},
		{"empty method", " / HTTP/1.1\r\n" + host + "\r\n"},
		{"method bad char", "G(ET / HTTP/1.1\r\n" + host + "\r\n"},
		{"method slash", "GET/ / HTTP/1.1\r\n" + host + "\r\n"},
		{"method utf8", "G\xc3\x89T / HTTP/1.1\r\n" + host + "\r\n"},
		{"relative uri", "GET foo HTTP/1.1\r\n" + host + "\r\n"},
		{"empty uri", "GET  HTTP/1.1\r\n" + host + "\r\n"},
		{"bad ipv6 uri", "GET http://[::1 HTTP/1.1\r\n" + host + "\r\n"},
		{"nul in uri", "GET /a\x00b HTTP/1.1\r\n" + host + "\r\n"},
		{"ctl in uri", "GET /a\x01b HTTP/1.1\r\n" + host + "\r\n"},
		{"bad percent", "GET /%zz HTTP/1.1\r\n" + host + "\r\n"},
		{"cr in request line", "GET / HTTP/1.1\rX\r\n" + host + "\r\n"},
		{"only crlf", "\r\n\r\n"},
		{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n\n"},
		{"pri not preface", "PRI / HTTP/2.0\r\n\r\n"},
		{"pri with header", "PRI * HTTP/2.0\r\nX: 1\r\n\r\n"},

		// Malformed header lines.
		{"no colon", "GET / HTTP/1.1\r\n" + host + "NoColon\r\n\r\n"},
		{"space before colon", "GET / HTTP/1.1\r\n" + host + "X-Name : v\r\n\r\n"},
		{"space in name", "GET / HTTP/1.1\r\n" + host + "X Name: v\r\n\r\n"},
		{"space in name without host", "GET / HTTP/1.1\r\nX Name: v\r\n\r\n"},
		{"space in name, bad host", "GET / HTTP/1.1\r\nX Name: v\r\nHost: a b\r\n\r\n"},
		{"empty name", "GET / HTTP/1.1\r\n" + host + ": v\r\n\r\n"},
		{"name at sign", "GET / HTTP/1.1\r\n" + host + "X@Name: v\r\n\r\n"},
		{"name slash", "GET / HTTP/1.1\r\n" + host + "X/Name: v\r\n\r\n"},
		{"name nul", "GET / HTTP/1.1\r\n" + host + "X\x00Name: v\r\n\r\n"},
		{"name utf8", "GET / HTTP/1.1\r\n" + host + "X-\xc3\xa9: v\r\n\r\n"},
		{"name tab", "GET / HTTP/1.1\r\n" + host + "X-Name\t: v\r\n\r\n"},
		{"value nul", "GET / HTTP/1.1\r\n" + host + "X-Name: a\x00b\r\n\r\n"},
		{"value cr", "GET / HTTP/1.1\r\n" + host + "X-Name: a\rb\r\n\r\n"},
		{"value trailing cr", "GET / HTTP/1.1\r\n" + host + "X-Name: ab\r\r\n\r\n"},
		{"value del", "GET / HTTP/1.1\r\n" + host + "X-Name: a\x7fb\r\n\r\n"},
		{"value vt", "GET / HTTP/1.1\r\n" + host + "X-Name: a\x0bb\r\n\r\n"},
		{"value esc", "GET / HTTP/1.1\r\n" + host + "X-Name: \x1b[31m\r\n\r\n"},
		{"first header folded", "GET / HTTP/1.1\r\n " + host + "\r\n"},
		{"first header tab folded", "GET / HTTP/1.1\r\n\tX: 1\r\n" + host + "\r\n"},
		{"bare cr line end", "GET / HTTP/1.1\r\nHost: example.com\rX-A: 1\r\n\r\n"},
		{"fold nul", "GET / HTTP/1.1\r\n" + host + "X-F: a\r\n \x00\r\n\r\n"},

		// Host.
		{"no host", "GET / HTTP/1.1\r\n\r\n"},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n"},
		{"two hosts same", "GET / HTTP/1.1\r\n" + host + host + "\r\n"},
		{"host space", "GET / HTTP/1.1\r\nHost: exa mple.com\r\n\r\n"},
		{"host slash", "GET / HTTP/1.1\r\nHost: example.com/x\r\n\r\n"},
		{"host at", "GET / HTTP/1.1\r\nHost: user@example.com\r\n\r\n"},
		{"host utf8", "GET / HTTP/1.1\r\nHost: caf\xc3\xa9.example\r\n\r\n"},
		{"host backslash", "GET / HTTP/1.1\r\nHost: a\\b\r\n\r\n"},
		{"host percent", "GET / HTTP/1.1\r\nHost: a%2eb\r\n\r\n"},
		{"host lowercase key twice", "GET / HTTP/1.1\r\nhost: a\r\nHOST: b\r\n\r\n"},

		// Content-Length.
		{"length negative", "POST /p HTTP/1.1\r\n" + host + "Content-Length: -1\r\n\r\n"},
		{"length plus", "POST /p HTTP/1.1\r\n" + host + "Content-Length: +5\r\n\r\nhello"},
		{"length hex", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 0x5\r\n\r\nhello"},
		{"length exponent", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5e0\r\n\r\nhello"},
		{"length empty", "POST /p HTTP/1.1\r\n" + host + "Content-Length:\r\n\r\n"},
		{"length inner space", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 1 2\r\n\r\n"},
		{"length list", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5, 5\r\n\r\nhello"},
		{"length differ", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"},
		{"length differ spacing", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length:  5 \r\n\r\nhello"},
		{"length overflow", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 99999999999999999999\r\n\r\n"},
		{"length 2^63", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 9223372036854775808\r\n\r\n"},
		{"length 2^63-1", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 9223372036854775807\r\n\r\nabc"},
		{"length short body", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 10\r\n\r\nhello"},
		{"length utf8 digit", "POST /p HTTP/1.1\r\n" + host + "Content-Length: \xd9\xa5\r\n\r\nhello"},
		{"length nul", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5\x00\r\n\r\nhello"},
		{"length folded", "POST /p HTTP/1.1\r\n" + host + "Content-Length:\r\n 5\r\n\r\nhello"},

		// Chunked bodies that break their framing.
		{"chunk bad hex", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\ng\r\nhello\r\n0\r\n\r\n"},
		{"chunk 0x", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"},
		{"chunk leading space", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n"},
		{"chunk space before ext", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5 ;x\r\nhello\r\n0\r\n\r\n"},
		{"chunk empty size", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n"},
		{"chunk only ext", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n;x\r\nhello\r\n0\r\n\r\n"},
		{"chunk negative", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"},
		{"chunk size 17 digits", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n"},
		{"chunk size 16 digits", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0000000000000005\r\nhello\r\n0\r\n\r\n"},
		{"chunk size overflow wrap", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nhello\r\n0\r\n\r\n"},
		{"chunk size 2^64+5", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n10000000000000000000000000000005\r\nhello\r\n0\r\n\r\n"},
		{"chunk bare LF size", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"},
		{"chunk bare LF data", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n"},
		{"chunk bare LF last", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\n\r\n"},
		{"chunk bare LF trailer end", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\n"},
		{"chunk cr in size", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r;x\r\nhello\r\n0\r\n\r\n"},
		{"chunk data too long", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n"},
		{"chunk data too short", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n7\r\nhello\r\n0\r\n\r\n"},
		{"chunk no end", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"},
		{"chunk no last crlf", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"},
		{"chunk cut in data", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhel"},
		{"chunk trailer nul", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\nX: a\x00\r\n\r\n"},
		{"chunk trailer no colon", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\nXYZ\r\n\r\n"},
		{"chunk trailer folded first", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\n X: 1\r\n\r\n"},
		{"chunk trailer bare LF", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\nX: 1\n\n"},
		{"chunk trailer long", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\nX: " + strings.Repeat("t", 5000) + "\r\n\r\n"},
		{"chunk line long", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5;" + strings.Repeat("e", 5000) + "\r\nhello\r\n0\r\n\r\n"},
		{"chunk excess", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 200) + "0\r\n\r\n"},
		{"chunk trailer declared bad", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n0\r\n\r\n"},
		{"chunk trailer declared te", "POST /c HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTrailer: transfer-encoding\r\n\r\n0\r\n\r\n"},
		{"trailer header no chunking", "POST /p HTTP/1.1\r\n" + host + "Trailer: X\r\nContent-Length: 2\r\n\r\nhi"},

		// Request smuggling: CL.TE, TE.CL and obfuscated Transfer-Encoding.
		{"CL.TE", "POST / HTTP/1.1\r\n" + host + "Content-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nSMUGGLED"},
		{"TE.CL", "POST / HTTP/1.1\r\n" + host + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n"},
		{"TE.CL reversed order", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n"},
		{"CL.CL", "POST / HTTP/1.1\r\n" + host + "Content-Length: 8\r\nContent-Length: 7\r\n\r\nSMUGGLED"},
		{"CL.TE invalid length", "POST / HTTP/1.1\r\n" + host + "Content-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"CL.TE differ", "POST / HTTP/1.1\r\n" + host + "Content-Length: 1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE.TE duplicate", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE.TE second junk", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n"},
		{"TE.TE first junk", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE space before colon", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n"},
		{"TE xchunked", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"},
		{"TE chunkedx", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunkedx\r\n\r\n0\r\n\r\n"},
		{"TE list", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"},
		{"TE gzip chunked", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
		{"TE identity", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nhi"},
		{"TE empty", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding:\r\nContent-Length: 2\r\n\r\nhi"},
		{"TE tab", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n"},
		{"TE trailing space", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked \r\n\r\n0\r\n\r\n"},
		{"TE vertical tab", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: \x0bchunked\r\n\r\n0\r\n\r\n"},
		{"TE form feed", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: \x0cchunked\r\n\r\n0\r\n\r\n"},
		{"TE nul", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\x00\r\n\r\n0\r\n\r\n"},
		{"TE quoted", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n"},
		{"TE kelvin", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chun\xe2\x84\xaaed\r\n\r\n0\r\n\r\n"},
		{"TE underscore name", "POST / HTTP/1.1\r\n" + host + "Transfer_Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc"},
		{"TE lowercase name", "POST / HTTP/1.1\r\n" + host + "transfer-encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE folded value", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"},
		{"TE folded into previous", "POST / HTTP/1.1\r\n" + host + "X-A: b\r\n Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc"},
		{"TE name newline", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding\n: chunked\r\n\r\n0\r\n\r\n"},
		{"TE after bare LF", "POST / HTTP/1.1\r\n" + host + "X: y\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE after bare CR", "POST / HTTP/1.1\r\n" + host + "X: y\rTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE first line folded", "POST / HTTP/1.1\r\n Transfer-Encoding: chunked\r\n" + host + "\r\n0\r\n\r\n"},
		{"TE http10 with CL", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
		{"TE chunk ext smuggle", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n2;\nxx\r\n0\r\n\r\n"},
		{"TE chunk ext lf in ext", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n2;a\nb\r\nxx\r\n0\r\n\r\n"},
		{"TE zero then smuggled", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\n" + host + "\r\n"},
		{"TE size with plus", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n"},
		{"TE size underscore", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n0_5\r\nhello\r\n0\r\n\r\n"},
		{"CL nul smuggle", "POST / HTTP/1.1\r\n" + host + "Content-Length: 0\x00\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"},
		{"header nul smuggle", "GET / HTTP/1.1\r\n" + host + "X: \x00\r\nContent-Length: 5\r\n\r\nhello"},
		{"header crlf in value", "GET / HTTP/1.1\r\n" + host + "X: a\r\r\nContent-Length: 5\r\n\r\nhello"},

		// Oversize heads.
		{"oversize header", "GET / HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("b", 2<<20) + "\r\n\r\n"},
		{"oversize request line", "GET /" + strings.Repeat("u", 2<<20) + " HTTP/1.1\r\n" + host + "\r\n"},
		{"oversize many headers", "GET / HTTP/1.1\r\n" + host + manyHeaders(40000) + "\r\n"},

		// Cut short by the end of the stream.
		{"nothing", ""},
		{"partial request line", "GET / HT"},
		{"partial headers", "GET / HTTP/1.1\r\n" + host},
		{"partial body", "POST /p HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhel"},
	}

	// Every Transfer-Encoding and Content-Length pairing, over both
	// versions: how the framing is chosen.
	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		for _, te := range []string{"", "chunked", "Chunked", "chunked;q=1", "chunked,", ",chunked", "identity, chunked", "deflate"} {
			for _, cl := range []string{"", "3", "0", "x"} {
				raw := "POST /m " + proto + "\r\n" + host
				if te != "" {
					raw += "Transfer-Encoding: " + te + "\r\n"
				}
				if cl != "" {
					raw += "Content-Length: " + cl + "\r\n"
				}
				raw += "\r\n3\r\nabc\r\n0\r\n\r\n"
				v = append(v, vector{fmt.Sprintf("matrix %s te=%q cl=%q", proto, te, cl), raw})
			}
		}
	}
	return v
}

// manyHeaders returns n distinct header lines.
func manyHeaders(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-Header-%d: value-%d\r\n", i, i)
	}
	return b.String()
}
