//go:build !linux

package afxdp

import (
	"errors"
	"fmt"

	"github.com/uiod/uiod/nic"
)

// Port is Linux only; elsewhere Open fails.
type Port struct{ nic.Port }

// Open fails: AF_XDP is Linux's. The error wraps errors.ErrUnsupported.
func Open(cfg Config) (*Port, error) {
	return nil, fmt.Errorf("af_xdp %s: %w", cfg.Interface, errors.ErrUnsupported)
}

// Describe names the port kind.
func (p *Port) Describe() string { return "af_xdp" }

// Ready reports false: there is no AF_XDP here.
func Ready(string) bool { return false }

// ListInterfaces fails: AF_XDP is Linux's. The error wraps errors.ErrUnsupported.
func ListInterfaces() (InterfaceList, error) {
	return InterfaceList{}, fmt.Errorf("network interfaces for af_xdp: %w", errors.ErrUnsupported)
}
