//go:build unix

package sluice

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/internal/syncbuf"
	"github.com/sluicenet/sluice/proxyproto"
)

// haproxyFrontends are the ways the HAProxy test has HAProxy send the
// header: each a frontend whose backend is the engine.
var haproxyFrontends = []struct {
	name   string
	server string // the options of the backend's server line
}{
	{"send-proxy", "send-proxy"},
	{"send-proxy-v2", "send-proxy-v2"},
	{"send-proxy-v2 crc32c unique-id", "send-proxy-v2 proxy-v2-options crc32c,unique-id"},
}

// haproxyConfig is HAProxy's configuration: one frontend per entry of
// haproxyFrontends, each bound to a listening socket HAProxy inherits as
// descriptor 3, 4, ..., forwarding to target.
func haproxyConfig(target string) string {
	var b strings.Builder
	b.WriteString("global\n    maxconn 256\n" +
		"defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n")
	for i, f := range haproxyFrontends {
		fmt.Fprintf(&b, "frontend f%d\n    bind fd@%d\n", i, 3+i)
		b.WriteString("    unique-id-format %{+X}o\\ %ci:%cp_%fi:%fp_%Ts_%rt:%pid\n")
		fmt.Fprintf(&b, "    default_backend b%d\n", i)
		fmt.Fprintf(&b, "backend b%d\n    server echo %s %s\n", i, target, f.server)
	}
	return b.String()
}

// startHAProxy runs HAProxy in the foreground in front of target,
// "host:port", until the test ends, and returns the address of each of its
// frontends. The test opens the frontends' sockets and HAProxy inherits
// them, so there is no port to race for and no wait for HAProxy to bind:
// connections queue until it accepts them. Without haproxy the test is
// skipped, except in CI, where it must be there.
func startHAProxy(t *testing.T, target string) []string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("haproxy is not installed, and CI is set: install haproxy")
		}
		t.Skip("haproxy is not installed (apt-get install haproxy)")
	}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfg, []byte(haproxyConfig(target)), 0o600))

	cmd := exec.Command(bin, "-f", cfg, "-db")
	var addrs []string
	for range haproxyFrontends {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		f, err := ln.(*net.TCPListener).File()
		require.NoError(t, err)
		ln.Close() // HAProxy's copy keeps the socket listening
		addrs = append(addrs, ln.Addr().String())
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy said:\n%s", out.String())
		}
	})
	return addrs
}

// TestHAProxy runs an echo engine behind a real HAProxy sending the PROXY
// header each way it can: the engine must see the test client's address,
// not HAProxy's, and echo bytes through unchanged.
func TestHAProxy(t *testing.T) {
	h := newLifetimes()
	seen := recordHeaders(h)
	_, addr := serve(t, h, WithNumEventLoop(2), WithProxyProtocol(ProxyRequired, 0))
	frontends := startHAProxy(t, strings.TrimPrefix(addr, "tcp://"))
	for i, f := range haproxyFrontends {
		t.Run(f.name, func(t *testing.T) {
			c := dial(t, "tcp://"+frontends[i])
			// The echo's deadline bounds the wait for HAProxy to start; if it
			// exits instead, the last copy of its listening sockets closes,
			// and the connection fails at once.
			msg := randomBytes(rand.New(rand.NewPCG(uint64(i), 17)), 64<<10)
			require.NoError(t, echoOnce(c, msg))

			got := nextSeen(t, seen)
			require.True(t, got.ok, "no PROXY header")
			assert.Equal(t, c.LocalAddr().String(), got.remote, "the engine sees HAProxy's client")
			assert.Equal(t, proxyproto.Proxy, got.header.Command)
			assert.Equal(t, frontends[i], got.header.Destination.String(), "the address the client reached")
			wantVersion := 2
			if f.server == "send-proxy" {
				wantVersion = 1
			}
			assert.Equal(t, wantVersion, got.header.Version)
			if strings.Contains(f.server, "crc32c") {
				_, ok := got.header.TLVs.Lookup(proxyproto.TypeCRC32C)
				assert.True(t, ok, "no CRC32C TLV")
				id, ok := got.header.TLVs.Lookup(proxyproto.TypeUniqueID)
				assert.True(t, ok, "no UNIQUE_ID TLV")
				assert.NotEmpty(t, id)
			}
		})
	}
}
