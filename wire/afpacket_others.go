//go:build !linux

package wire

import (
	"errors"
	"fmt"
)

// PacketPort is a wire onto a kernel network interface through an AF_PACKET raw socket
// (Linux only).
type PacketPort struct{ Port }

// ListenPacket fails: AF_PACKET sockets are Linux only. The error wraps
// errors.ErrUnsupported.
func ListenPacket(ifname string) (*PacketPort, error) {
	return nil, fmt.Errorf("afpacket %s: %w", ifname, errors.ErrUnsupported)
}
