package proxyproto_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/proxyproto"
)

func FuzzParse(f *testing.F) {
	for _, tt := range validHeaders {
		f.Add(tt.in)
	}
	f.Add([]byte("PROXY TCP6 ::ffff:1.2.3.4 1:2:3:4:5:6:7:8 1 2\r\nGET /"))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := proxyproto.Parse(b)
		if err != nil {
			require.Zero(t, n)
			require.True(t, errors.Is(err, proxyproto.ErrIncomplete) ||
				errors.Is(err, proxyproto.ErrNotProxy) || errors.Is(err, proxyproto.ErrInvalid), err)
			return
		}
		require.Positive(t, n)
		require.LessOrEqual(t, n, len(b))
		_, _, err = proxyproto.Parse(b[:n-1])
		require.ErrorIs(t, err, proxyproto.ErrIncomplete, "a header's prefix")

		var enc []byte
		if h.Version == 1 {
			enc, err = h.AppendV1(nil)
		} else {
			enc, err = h.AppendV2(nil)
		}
		require.NoError(t, err)
		if h.Version == 2 {
			// The binary format has a single encoding for each header.
			require.Equal(t, b[:n], enc)
		}
		got, m, err := proxyproto.Parse(enc)
		require.NoError(t, err)
		require.Equal(t, len(enc), m)
		requireSameHeader(t, h, got)
	})
}
