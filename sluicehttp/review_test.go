package sluicehttp

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// TestInlineAnswerPastMaxOutbound checks that an inline handler whose
// answer outgrows what the connection may hold queued
// (sluice.WithMaxOutbound) never leaves its client with a body that looks
// whole but lacks bytes: the client gets all of it or an error.
func TestInlineAnswerPastMaxOutbound(t *testing.T) {
	const size = 1 << 20
	chunk := bytes.Repeat([]byte("o"), 32<<10)
	addr := serve(t, &Server{Inline: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})}, sluice.WithMaxOutbound(256<<10))
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		require.Equal(t, int64(size), n, "a body that ends cleanly has every byte")
	}
}
