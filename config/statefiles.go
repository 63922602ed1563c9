package config

import "github.com/uiod/uiod/pci/pcihost"

// The files the daemon keeps in StateDir, which it shares with the bind records of uiod
// bind (package pcihost). The state directory may hold nothing else: StateHost makes the
// pcihost.Host that opens or checks it, with StateFiles admitted.
const (
	// PIDFileName is the daemon's lock and pid file.
	PIDFileName = "uiod.pid"
	// ControlSocketName is the daemon's control socket (uiod capture).
	ControlSocketName = "control.sock"
)

// StateFiles are the names of the daemon's files in StateDir.
var StateFiles = []string{PIDFileName, ControlSocketName}

// StateHost returns the host under root (see pcihost.New) with the daemon's files
// admitted in a state directory: every host that opens or checks one is made here, so
// none refuses a state directory for holding the daemon's pid file.
func StateHost(root string) (*pcihost.Host, error) {
	h, err := pcihost.New(root)
	if err != nil {
		return nil, err
	}
	h.StateFiles = StateFiles
	return h, nil
}
