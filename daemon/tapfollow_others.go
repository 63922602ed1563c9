//go:build !linux

package daemon

// tapFollower follows the kernel paths' TAPs on Linux only (there are no TAPs elsewhere).
type tapFollower struct{}

func (d *Daemon) startTAPFollow() error          { return nil }
func (d *Daemon) closeTAPFollow()                {}
func (d *Daemon) tapStatus(int) *TAPFollowStatus { return nil }
