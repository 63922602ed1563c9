package pci_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/uiod/uiod/pci"
)

// TestErrNotSupportedIsStdlib: pci.ErrNotSupported and errors.ErrUnsupported are one
// sentinel, so an error from a package below pci (irq's and wire's non-Linux builds wrap
// errors.ErrUnsupported) is a pci.ErrNotSupported to every caller that falls back on it.
func TestErrNotSupportedIsStdlib(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"stdlib wrapped is pci", fmt.Errorf("poller: epoll: %w", errors.ErrUnsupported), pci.ErrNotSupported, true},
		{"pci wrapped is stdlib", fmt.Errorf("msix: %w", pci.ErrNotSupported), errors.ErrUnsupported, true},
		{"closed is not unsupported", fmt.Errorf("device: %w", pci.ErrClosed), pci.ErrNotSupported, false},
		{"unsupported is not closed", fmt.Errorf("tap: %w", errors.ErrUnsupported), pci.ErrClosed, false},
	}
	for _, tt := range tests {
		if got := errors.Is(tt.err, tt.target); got != tt.want {
			t.Errorf("%s: errors.Is(%v, %v) = %v, want %v", tt.name, tt.err, tt.target, got, tt.want)
		}
	}
}
