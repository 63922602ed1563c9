//go:build !linux

package capture

import (
	"errors"
	"net"
)

// checkPeer refuses every client: peer credentials are read on Linux only.
func checkPeer(*net.UnixConn, *Group) error {
	return errors.New("capture: peer credentials are only checked on Linux")
}
