package poller

import (
	"errors"
	"fmt"
)

// Kind is the mechanism an engine's event loops wait with.
type Kind uint8

const (
	// Epoll waits for readiness: epoll on Linux, kqueue on macOS and the
	// BSDs. It is the default.
	Epoll Kind = iota
	// IOUring submits the loop's operations to an io_uring per loop and
	// waits for their completions (Linux 6.0 or later). Choosing it where
	// the kernel cannot serve it is an error.
	IOUring
	// Auto is IOUring where the kernel allows it, else Epoll.
	Auto
)

var kindNames = [...]string{Epoll: "epoll", IOUring: "uring", Auto: "auto"}

// ErrInvalidKind is wrapped by the error of UnmarshalText for a name that
// is not a Kind's.
var ErrInvalidKind = errors.New("poller: unknown poller")

// String returns the kind's name: "epoll", "uring" or "auto".
func (k Kind) String() string {
	if int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", k)
	}
	return kindNames[k]
}

// MarshalText returns the kind's name, so that a Kind can be a
// command-line flag (flag.TextVar).
func (k Kind) MarshalText() ([]byte, error) {
	return []byte(k.String()), nil
}

// UnmarshalText sets k from its name: "epoll", "uring" or "auto".
func (k *Kind) UnmarshalText(b []byte) error {
	for kind, name := range kindNames {
		if string(b) == name {
			*k = Kind(kind)
			return nil
		}
	}
	return fmt.Errorf("%w: %q (want epoll, uring or auto)", ErrInvalidKind, b)
}
