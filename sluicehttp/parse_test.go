package sluicehttp

import (
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
