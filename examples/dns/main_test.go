//go:build linux && !sluice_std

package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/examples/internal/cmdtest"
	"github.com/sluicenet/sluice/internal/udptest"
	"github.com/sluicenet/sluice/internal/uring"
)

func TestMain(m *testing.M) { cmdtest.Main(m) }

var servingLine = regexp.MustCompile(`^dns: \d+ names, serving on (.+)$`)

// startDNS runs the command with the test zone and args, and returns it
// and the address it serves on.
func startDNS(t *testing.T, args ...string) (*cmdtest.Cmd, string) {
	t.Helper()
	args = append([]string{"-addr", "udp://127.0.0.1:0", "-zone", "testdata/example.zone"}, args...)
	cmd := cmdtest.Start(t, cmdtest.Build(t, "."), "dns", nil, args...)
	return cmd, cmd.Expect(t, servingLine)[1]
}

// onEachPoller runs test against the command on epoll and on io_uring,
// on two loops, sharing a socket and with one each.
func onEachPoller(t *testing.T, test func(t *testing.T, addr string)) {
	for _, kind := range []string{"epoll", "uring"} {
		for _, extra := range [][]string{nil, {"-reuseport"}} {
			t.Run(kind+strings.Join(extra, ""), func(t *testing.T) {
				if kind == "uring" && uring.Probe() != nil {
					t.Skip("io_uring is not available here")
				}
				cmd, addr := startDNS(t, append([]string{"-loops", "2", "-poller", kind}, extra...)...)
				test(t, addr)
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				lines, err := cmd.Exit(t)
				require.NoError(t, err, "%q", lines)
				assert.Equal(t, "dns: stopped", lines[len(lines)-1])
			})
		}
	}
}

// dig asks the server with dig, which must answer within its own
// retries, and returns what it printed.
func dig(t *testing.T, addr string, args ...string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	out, err := exec.Command("dig", append([]string{"@" + host, "-p", port, "+tries=5", "+time=2"}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// dig, the client of bind9-dnsutils, gets the zone's answers.
func TestDig(t *testing.T) {
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("no dig here (Debian's bind9-dnsutils)")
	}
	onEachPoller(t, func(t *testing.T, addr string) {
		assert.Equal(t, "192.0.2.1\n192.0.2.2\n", dig(t, addr, "+short", "www.example.com", "A"))
		assert.Equal(t, "2001:db8::1\n", dig(t, addr, "+short", "WWW.EXAMPLE.COM", "AAAA"))
		assert.Equal(t, "192.0.2.10\n", dig(t, addr, "+short", "+noedns", "example.com"))
		out := dig(t, addr, "nope.example.com")
		assert.Contains(t, out, "status: NXDOMAIN")
		assert.Regexp(t, `flags: qr aa rd;`, out)
		assert.Contains(t, out, "EDNS: version: 0, flags:; udp: 1232")
		assert.Contains(t, dig(t, addr, "v6only.example.com", "A"), "status: NOERROR, id")
		assert.Contains(t, dig(t, addr, "www.example.com", "CH", "A"), "status: REFUSED")
		assert.Contains(t, dig(t, addr, "+edns=1", "+noednsnegotiation", "www.example.com"), "status: BADVERS")
	})
}

// Go's own resolver, pointed at the server, looks names up.
func TestGoResolver(t *testing.T) {
	onEachPoller(t, func(t *testing.T, addr string) {
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		}}
		ctx, cancel := context.WithTimeout(context.Background(), cmdtest.Deadline)
		defer cancel()
		ips, err := r.LookupNetIP(ctx, "ip", "www.example.com")
		require.NoError(t, err)
		assert.ElementsMatch(t, []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"),
			netip.MustParseAddr("2001:db8::1")}, ips)
		_, err = r.LookupNetIP(ctx, "ip4", "nope.example.com")
		var dnsErr *net.DNSError
		require.True(t, errors.As(err, &dnsErr), "%v", err)
		assert.True(t, dnsErr.IsNotFound, "%v", err)
	})
}

// Malformed queries, sent as they are, get FORMERR with their ID; a
// message too short to carry an ID gets nothing, and the server serves
// on.
func TestMalformedOverTheWire(t *testing.T) {
	onEachPoller(t, func(t *testing.T, addr string) {
		c := udptest.Dial(t, "udp", addr)
		_, err := c.Write([]byte("short"))
		require.NoError(t, err)
		bad := buildQuery(0x5151, "www.example.com", typeA, classIN, 0, 0)
		bad = bad[:len(bad)-1] // the class cut
		a := readAnswer(t, udptest.RoundTrip(t, c, bad))
		assert.Equal(t, uint16(0x5151), a.id, "the short message got an answer")
		assert.Equal(t, rcodeFormErr, a.rcode)
		a = readAnswer(t, udptest.RoundTrip(t, c, buildQuery(0x5252, "www.example.com", typeA, classIN, 0, 0)))
		assert.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, a.addrs)
	})
}
