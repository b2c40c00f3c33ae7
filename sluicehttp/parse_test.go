package sluicehttp

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParserAgreesWithNetHTTP feeds every vector of the corpus to
// net/http's server and to this package's parser, in memory, and checks
// that both answer the same status and, for a request they take, see
// the same request: method, target, version, host, headers, framing,
// body and trailers.
func TestParserAgreesWithNetHTTP(t *testing.T) {
	for _, v := range vectors() {
		want := netHTTPAnswer([]byte(v.raw))
		got := ourAnswer([]byte(v.raw))
		assert.Equal(t, want, got, "vector %q: %.200q", v.name, v.raw)
	}
}

// FuzzParse checks that whatever a client sends, this package's parser
// takes the first request in it as net/http's server does, or refuses it
// with the same status: no input is framed differently by the two. Its
// seed corpus, testdata/fuzz/FuzzParse, holds the differential tests'
// vectors.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		if want, got := netHTTPAnswer(raw), ourAnswer(raw); want != got {
			t.Fatalf("net/http: %s\nours: %s", want, got)
		}
	})
}

// plainURIs are request targets for the URL's fast path, taken and not.
var plainURIs = []string{
	"/", "/plaintext", "/a/b/c.txt", "/q?x=1&y=2", "/q?", "/q??", "/q?a?b", "/q?x=%zz",
	"/%41", "/a b", "/a#frag", "/a!*'()", "//host/path", "/~user/-_.$&+,:;=@",
	"*", "example.com:443", "http://example.com/x", "/\x7f", "/q?\x01", "/é", "",
	"/q?x=1#f", "/q?a=b c",
}

// TestPlainURI checks that the URL's fast path parses what it takes as
// url.ParseRequestURI does, field for field.
func TestPlainURI(t *testing.T) {
	for _, uri := range plainURIs {
		checkPlainURI(t, uri)
	}
}

// FuzzPlainURI checks the URL's fast path against url.ParseRequestURI
// with any target. Its seed corpus is plainURIs.
func FuzzPlainURI(f *testing.F) {
	for _, uri := range plainURIs {
		f.Add(uri)
	}
	f.Fuzz(checkPlainURI)
}

func checkPlainURI(t *testing.T, uri string) {
	var u url.URL
	if !parsePlainURI(uri, &u) {
		assert.Equal(t, url.URL{}, u, "%q: not taken, yet changed", uri)
		return
	}
	want, err := url.ParseRequestURI(uri)
	if assert.NoError(t, err, "%q: taken, but url.ParseRequestURI refuses it", uri) {
		assert.Equal(t, *want, u, "%q", uri)
	}
}
