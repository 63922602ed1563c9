package capture

import "fmt"

// Group is the group whose members may capture besides root and the daemon's user (the
// daemon's capture.group): the control socket is made 0660 and given this group, and a
// peer whose primary or supplementary groups include it is admitted.
type Group struct {
	// ID is the group's gid.
	ID uint32
	// Name is the group's name, for messages; "" when the gid has none.
	Name string
}

// String names the group: "wireshark (gid 121)", or "gid 5000" without a name.
func (g Group) String() string {
	if g.Name == "" {
		return fmt.Sprintf("gid %d", g.ID)
	}
	return fmt.Sprintf("%s (gid %d)", g.Name, g.ID)
}

// socketMode is the control socket's mode: 0600, or 0660 when a group may capture.
func socketMode(g *Group) uint32 {
	if g != nil {
		return 0o660
	}
	return 0o600
}
