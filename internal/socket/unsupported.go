//go:build !linux && !darwin && !dragonfly && !freebsd && !windows

package socket

// Sluice runs on Linux (epoll) and on macOS, FreeBSD and DragonFly BSD
// (kqueue). Elsewhere this undefined name stops the build and says why.
var _ = sluice_runs_only_on_linux_macos_freebsd_and_dragonfly
