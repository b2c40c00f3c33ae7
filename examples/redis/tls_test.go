package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/tlsflag"
	"github.com/sluicenet/sluice/internal/selfsigned"
)

// TestTLS: redis-cli talks to the server over TLS, skipping verification
// of a certificate made at start (-tls-self-signed, --insecure), and
// verifying one read from PEM files (-tls-cert and -tls-key, --cacert);
// a pipeline of 10,000 commands crosses many records; a client that does
// not speak TLS gets no answer.
func TestTLS(t *testing.T) {
	tool(t, "redis-cli")
	certPEM, keyPEM, err := selfsigned.PEM()
	require.NoError(t, err)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, certPEM, 0o600))
	require.NoError(t, os.WriteFile(key, keyPEM, 0o600))
	for _, tc := range []struct {
		name  string
		flags tlsflag.Server
		cli   []string // redis-cli's TLS arguments
	}{
		{"self-signed", tlsflag.Server{SelfSigned: true}, []string{"--tls", "--insecure"}},
		{"files", tlsflag.Server{CertFile: cert, KeyFile: key}, []string{"--tls", "--cacert", cert}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.flags.Config()
			require.NoError(t, err)
			ts := startServer(t, config{tls: cfg})
			assert.Equal(t, "OK\n\"hello\"\nPONG\n", ts.cli(t, "SET greeting hello\nGET greeting\nPING", tc.cli...))

			const n = 10_000
			var b strings.Builder
			for i := range n {
				key, value := "key:"+strconv.Itoa(i), strings.Repeat("v", i%300)
				fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(value), value)
			}
			out := run(t, "redis-cli", ts.addr(), b.String(), append([]string{"--pipe"}, tc.cli...)...)
			assert.Contains(t, out, fmt.Sprintf("errors: 0, replies: %d", n))
			assert.Equal(t, "(integer) 10001", strings.TrimSpace(ts.cli(t, "DBSIZE", tc.cli...)), "the keys, and greeting")

			plain := exec.Command(tool(t, "redis-cli"), "-h", ts.host, "-p", ts.port, "PING")
			got, err := plain.CombinedOutput()
			assert.NotContains(t, string(got), "PONG", "a plain client was answered (%v)", err)
		})
	}
}
