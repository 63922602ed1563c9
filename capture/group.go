package capture

import "github.com/uiod/uiod/config"

// Group is the group whose members may capture besides root and the daemon's user (the
// daemon's capture.group, as config resolves it): the control socket is made 0660 and
// given this group, and a peer whose primary or supplementary groups include it is
// admitted.
type Group = config.Group

// socketMode is the control socket's mode: 0600, or 0660 when a group may capture.
func socketMode(g *Group) uint32 {
	if g != nil {
		return 0o660
	}
	return 0o600
}
