//go:build !sluice_std

package socket

import "golang.org/x/sys/unix"

// tcpKeepIdle is the option for the idle time before keep-alive probes,
// which macOS names TCP_KEEPALIVE.
const tcpKeepIdle = unix.TCP_KEEPALIVE
