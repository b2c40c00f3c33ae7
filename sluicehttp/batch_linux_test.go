package sluicehttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicenet/sluice"
)

// dataSegmentsIn returns how many segments carrying data c has received
// (TCP_INFO): on loopback, where a segment holds up to 64 KiB, one per
// write the server made.
func dataSegmentsIn(t *testing.T, c net.Conn) uint32 {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	var info *unix.TCPInfo
	var serr error
	require.NoError(t, raw.Control(func(fd uintptr) {
		info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}))
	require.NoError(t, serr)
	return info.Data_segs_in
}

// TestPipelinedAnswersLeaveInOneWrite checks that the answers to
// requests that arrived together leave together, in request order: 16
// pipelined requests in one segment, whose handlers all return within the
// turn, on the pool and inline, are answered with one write, which the
// client receives as one segment.
func TestPipelinedAnswersLeaveInOneWrite(t *testing.T) {
	const depth = 16
	modes(t, func(t *testing.T, inline bool) {
		addr := serve(t, &Server{Inline: inline, Handler: http.HandlerFunc(hello)}, sluice.WithNumEventLoop(1))
		c := dial(t, addr)
		br := bufio.NewReader(c)
		var batch strings.Builder
		for i := range depth {
			fmt.Fprintf(&batch, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
		}
		round := func() (segments uint32) {
			before := dataSegmentsIn(t, c)
			_, err := io.WriteString(c, batch.String())
			require.NoError(t, err)
			for i := range depth {
				_, body := readResponse(t, br, http.MethodGet)
				require.Equal(t, fmt.Sprintf("hello /%d", i), body, "the answers' order")
			}
			return dataSegmentsIn(t, c) - before
		}
		round() // the connection's first answers: its state is made
		for range 5 {
			require.EqualValues(t, 1, round(), "segments carrying %d pipelined answers", depth)
		}
	})
}
