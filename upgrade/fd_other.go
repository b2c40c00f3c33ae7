//go:build !unix

package upgrade

import (
	"errors"
	"fmt"
	"os"
)

// closeOnExec does nothing: processes started here inherit no descriptors
// but those handed to them.
func closeOnExec(int) {}

// ParseSignal returns nil for "" or "none", and otherwise an error: the
// process cannot be signalled to upgrade here.
func ParseSignal(name string) (os.Signal, error) {
	switch name {
	case "", "none":
		return nil, nil
	}
	return nil, fmt.Errorf("upgrade: signal %q: %w", name, errors.ErrUnsupported)
}
