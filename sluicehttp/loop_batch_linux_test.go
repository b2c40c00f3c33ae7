package sluicehttp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice"
)

// TestLoopHandlerPipelinedOneWrite checks that the answers to requests
// that came together leave in one write, in order: 16 pipelined requests
// in one segment, answered by ServeLoop (pool and inline), or by ServeLoop
// and an inline ServeHTTP in turn, reach the client as one segment.
func TestLoopHandlerPipelinedOneWrite(t *testing.T) {
	const depth = 16
	h := loopFunc(func(w *LoopResponse, r *LoopRequest) bool {
		w.WriteString("loop " + r.Path())
		return !strings.HasPrefix(r.Path(), "/std")
	})
	for _, tc := range []struct {
		name   string
		inline bool
		mixed  bool
	}{{"pool", false, false}, {"inline", true, false}, {"inline mixed", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, &Server{Inline: tc.inline, Handler: h}, sluice.WithNumEventLoop(1))
			c := dial(t, addr)
			br := bufio.NewReader(c)
			var batch strings.Builder
			var want []string
			for i := range depth {
				if tc.mixed && i%2 == 1 {
					fmt.Fprintf(&batch, "GET /std%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
					want = append(want, fmt.Sprintf("hello /std%d", i))
				} else {
					fmt.Fprintf(&batch, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
					want = append(want, fmt.Sprintf("loop /%d", i))
				}
			}
			round := func() (segments uint32) {
				before := dataSegmentsIn(t, c)
				_, err := io.WriteString(c, batch.String())
				require.NoError(t, err)
				for i := range depth {
					_, body := readResponse(t, br, http.MethodGet)
					require.Equal(t, want[i], body, "the answers' order")
				}
				return dataSegmentsIn(t, c) - before
			}
			round()
			for range 5 {
				require.EqualValues(t, 1, round(), "segments carrying %d pipelined answers", depth)
			}
		})
	}
}
