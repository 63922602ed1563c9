//go:build !linux

package tap

import (
	"fmt"
	"os"

	"github.com/uiod/uiod/pci"
)

// Open fails: TAP interfaces are Linux's.
func Open(cfg Config) (*Port, error) {
	return nil, fmt.Errorf("tap %s: %w (TAP interfaces need Linux)", cfg.Name, pci.ErrNotSupported)
}

// Available fails: TAP interfaces are Linux's.
func Available(name string) error {
	return fmt.Errorf("tap %s: %w (TAP interfaces need Linux)", name, pci.ErrNotSupported)
}

// detached is false: no TAP descriptor reads anywhere else.
func detached(error) bool { return false }

// tuntapSetCarrier fails: TAP interfaces are Linux's.
func tuntapSetCarrier(*os.File, bool) error { return pci.ErrNotSupported }
