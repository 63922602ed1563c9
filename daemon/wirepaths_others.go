//go:build !linux

package daemon

import (
	"os"

	"github.com/uiod/uiod/config"
)

// pinWire returns w as it is: only Linux can name an open directory by path
// (/proc/self/fd), so elsewhere the socket paths are the ones Config.CheckHostPaths
// checked.
func pinWire(root string, w config.Wire) (config.Wire, []*os.File, error) {
	return w, nil, nil
}

// closeAll closes files, ignoring errors.
func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
