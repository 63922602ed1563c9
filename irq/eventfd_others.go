//go:build !linux

package irq

import (
	"errors"
	"fmt"
)

// NewEventfd fails: eventfds are Linux only. The error wraps errors.ErrUnsupported.
func NewEventfd(kind Kind, index int) (*Vector, error) {
	return nil, fmt.Errorf("%s vector %d: eventfd: %w", kind, index, errors.ErrUnsupported)
}
