package config

// The files the daemon keeps in StateDir, which it shares with the bind records of uiod
// bind (package pcihost). The state directory may hold nothing else: StateFiles is what a
// pcihost.Host that opens or checks it is given as its StateFiles.
const (
	// PIDFileName is the daemon's lock and pid file.
	PIDFileName = "uiod.pid"
	// ControlSocketName is the daemon's control socket (uiod capture).
	ControlSocketName = "control.sock"
)

// StateFiles are the names of the daemon's files in StateDir.
var StateFiles = []string{PIDFileName, ControlSocketName}
