//go:build !linux

package wire

import (
	"errors"
	"fmt"
)

// TAPPort is a wire whose other end is a TAP interface (Linux only).
type TAPPort struct{ Port }

// OpenTAP fails: TAP interfaces are supported on Linux only.
func OpenTAP(name string) (*TAPPort, error) {
	return nil, fmt.Errorf("tap %s: %w", name, errors.ErrUnsupported)
}
