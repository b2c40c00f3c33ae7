package sluicehttp

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hijackAfter is what a handler writes before it hijacks its connection,
// for TestHijackDropsUnflushed: each is run by a request for its name.
var hijackAfter = map[string]func(w http.ResponseWriter){
	"nothing":       func(w http.ResponseWriter) {},
	"header":        func(w http.ResponseWriter) { w.Header().Set("X-Set", "not sent") },
	"writeheader":   func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) },
	"upgrade":       writeUpgrade,
	"write":         func(w http.ResponseWriter) { io.WriteString(w, "written, not flushed") },
	"length":        writeWithLength,
	"flush":         func(w http.ResponseWriter) { http.NewResponseController(w).Flush() },
	"write-flush":   func(w http.ResponseWriter) { io.WriteString(w, "flushed"); http.NewResponseController(w).Flush() },
	"flush-write":   writeAfterFlush,
	"large":         func(w http.ResponseWriter) { w.Write([]byte(strings.Repeat("L", 20<<10))) },
	"large-write":   writeAfterLarge,
	"informational": func(w http.ResponseWriter) { w.WriteHeader(http.StatusEarlyHints) },
}

func writeUpgrade(w http.ResponseWriter) {
	w.Header().Set("Upgrade", "echo")
	w.Header().Set("Connection", "Upgrade")
	w.WriteHeader(http.StatusSwitchingProtocols)
}

func writeWithLength(w http.ResponseWriter) {
	w.Header().Set("Content-Length", "5")
	io.WriteString(w, "hello")
}

func writeAfterFlush(w http.ResponseWriter) {
	io.WriteString(w, "flushed;")
	http.NewResponseController(w).Flush()
	io.WriteString(w, "not flushed")
}

func writeAfterLarge(w http.ResponseWriter) {
	w.Write([]byte(strings.Repeat("L", 20<<10)))
	io.WriteString(w, "not flushed")
}

// hijackAfterHandler answers /first, then hijacks for the rest, after
// doing what hijackAfter says for its path, writes a word of its own on
// the connection, and closes it.
var hijackAfterHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/first" {
		io.WriteString(w, "first")
		return
	}
	hijackAfter[strings.TrimPrefix(r.URL.Path, "/")](w)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	io.WriteString(conn, "|hijacked|")
	conn.Close()
})

// Where what the servers sent may differ and mean the same: the Date,
// the order of a head's fields; and runs of a byte, shortened for a
// failure's message.
var (
	dates = regexp.MustCompile("Date: [^\r]*\r\n")
	heads = regexp.MustCompile("HTTP/1\\.[01] [^\r]*\r\n(?:[^\r]+\r\n)*\r\n")
	runs  = regexp.MustCompile("L{64,}")
)

// canonical returns what a server sent with its Dates blanked, its heads'
// fields sorted, and long runs of L counted.
func canonical(s string) string {
	s = dates.ReplaceAllString(s, "Date: D\r\n")
	s = heads.ReplaceAllStringFunc(s, func(h string) string {
		lines := strings.Split(strings.TrimSuffix(h, "\r\n\r\n"), "\r\n")
		slices.Sort(lines[1:])
		return strings.Join(lines, "\r\n") + "\r\n\r\n"
	})
	return runs.ReplaceAllStringFunc(s, func(r string) string { return fmt.Sprintf("L*%d", len(r)) })
}

// TestHijackDropsUnflushed checks that a handler that hijacks its
// connection sends on it what net/http's server sends, byte for byte:
// the answers owed before it, and, of its own answer, the head if the
// handler wrote one (as it stands without a body: no length but its own,
// chunked), what it flushed, and what passed the server's buffers, but
// not what it wrote since it last flushed that the server still held.
// Heads are compared field for field, not in their fields' order.
func TestHijackDropsUnflushed(t *testing.T) {
	servers := serveTrio(t, &http.Server{Handler: hijackAfterHandler}, func(bool) *Server {
		return &Server{Handler: hijackAfterHandler}
	})
	ask := func(addr, name string) string {
		c := dial(t, addr)
		_, err := io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /"+name+" HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		got, err := io.ReadAll(c)
		require.NoError(t, err, name)
		return canonical(string(got))
	}
	for name := range hijackAfter {
		std := ask(servers.std, name)
		require.Contains(t, std, "|hijacked|", name)
		assert.Equal(t, std, ask(servers.pooled, name), "%s (pool)", name)
		assert.Equal(t, std, ask(servers.inline, name), "%s (inline)", name)
	}
}
