package config

import (
	"errors"
	"fmt"
	"math"
	"os/user"
	"strconv"
	"strings"
)

// Capture configures the control socket `uiod capture` connects to (see package capture).
type Capture struct {
	// Group, when set, lets the members of this group capture without root, as dumpcap's
	// group (Debian's wireshark) does: the socket is made 0660 and owned by the group, and
	// a peer whose primary or supplementary groups include it is admitted. A group name
	// is looked up in the process's group database (/etc/group; uiod has no cgo, so not
	// NSS); a number is a gid as it is, whether or not the database names it. Empty (the
	// default) admits only root and the daemon's user.
	Group string `mapstructure:"group"`
}

// Group is a resolved capture.group.
type Group struct {
	// ID is the group's gid.
	ID uint32
	// Name is the group's name in the group database, or "" when a numeric gid has none.
	Name string
}

// String names the group: "wireshark (gid 121)", or "gid 5000" without a name.
func (g Group) String() string {
	if g.Name == "" {
		return fmt.Sprintf("gid %d", g.ID)
	}
	return fmt.Sprintf("%s (gid %d)", g.Name, g.ID)
}

// The group database, as os/user reads it; tests replace them.
var (
	lookupGroup   = user.LookupGroup
	lookupGroupID = user.LookupGroupId
)

// errNoGroup is a capture.group that names no group.
var errNoGroup = errors.New("no such group")

// ResolveGroup resolves capture.group: ok is false when it is empty (no group may
// capture). A string of digits is a numeric gid (0 to 4294967294; the name is looked up
// for messages only); anything else must be a group of the group database.
func (c Capture) ResolveGroup() (g Group, ok bool, err error) {
	s := c.Group
	if s == "" {
		return Group{}, false, nil
	}
	if isDigits(s) {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil || n == math.MaxUint32 {
			// (uid_t)-1 means "unchanged" to chown: no group has it.
			return Group{}, false, fmt.Errorf("gid out of range: a gid is 0 to %d", uint32(math.MaxUint32-1))
		}
		g = Group{ID: uint32(n)}
		if gr, err := lookupGroupID(s); err == nil {
			g.Name = gr.Name
		}
		return g, true, nil
	}
	gr, err := lookupGroup(s)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return Group{}, false, fmt.Errorf("%w in /etc/group (create it, e.g. groupadd --system %s, or give its numeric gid)", errNoGroup, s)
		}
		return Group{}, false, fmt.Errorf("look it up: %w", err)
	}
	n, err := strconv.ParseUint(gr.Gid, 10, 32)
	if err != nil || n == math.MaxUint32 {
		return Group{}, false, fmt.Errorf("the group database gives it gid %q, not a gid", gr.Gid)
	}
	return Group{ID: uint32(n), Name: gr.Name}, true, nil
}

// isDigits reports whether s is a non-empty string of ASCII digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// checkCapture validates the capture section.
func (c *Config) checkCapture(errs *fieldErrors) {
	if _, _, err := c.Capture.ResolveGroup(); err != nil {
		errs.add("capture.group", c.Capture.Group, "%v", err)
	}
}
