//go:build (dragonfly || freebsd) && !sluice_std

package socket

import "golang.org/x/sys/unix"

// tcpKeepIdle is the option for the idle time before keep-alive probes.
const tcpKeepIdle = unix.TCP_KEEPIDLE
