package config

import (
	"os"
	"path/filepath"
)

// geteuid is os.Geteuid; tests replace it.
var geteuid = os.Geteuid

// userStateDir is the state_dir a configuration that does not set one gets when it is
// loaded by a user other than root and has no PCI ports (a model-only daemon, which needs
// no privileges): $XDG_RUNTIME_DIR/uiod, the user's own runtime directory. It returns ""
// when the default (DefaultStateDir) stays: as root, with a PCI port, or without
// $XDG_RUNTIME_DIR (the daemon's error then says to set UIOD_STATE_DIR).
func (c *Config) userStateDir(lookup func(string) (string, bool)) string {
	if geteuid() == 0 {
		return ""
	}
	for _, p := range c.Ports {
		if p.Driver != DriverSim {
			return ""
		}
	}
	dir, ok := lookup("XDG_RUNTIME_DIR")
	if !ok || !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, "uiod")
}
