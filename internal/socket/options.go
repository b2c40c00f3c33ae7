package socket

import (
	"errors"
	"fmt"
	"time"
)

// Options are the socket options applied to listeners and accepted sockets.
type Options struct {
	ReusePort bool
	NoDelay   bool
	KeepAlive time.Duration // idle time before probes; zero leaves keep-alive off
	// KeepAliveInterval and KeepAliveCount are SetKeepAlive's; zero
	// means its defaults.
	KeepAliveInterval time.Duration
	KeepAliveCount    int
	RecvBuf           int // zero keeps the system's default
	SendBuf           int
}

// keepAliveProbes is how many unanswered keep-alive probes declare a peer
// dead. Sent every fifth of the idle time, as gnet sends them, they find a
// dead peer about twice the idle time after it went quiet.
const keepAliveProbes = 5

// ErrNetwork reports a network other than tcp, tcp4, tcp6 and unix.
var ErrNetwork = errors.New("unsupported network")

// ErrLingerBlocks is wrapped by SetLinger's error for a positive time; it
// matches errors.ErrUnsupported.
var ErrLingerBlocks = fmt.Errorf("a positive SO_LINGER makes close block: %w", errors.ErrUnsupported)
