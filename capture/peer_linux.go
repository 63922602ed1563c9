package capture

import (
	"fmt"
	"net"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// checkPeer admits root, the daemon's own user and, when g is not nil, a member of g, by
// the connecting process's credentials as the kernel recorded them at connect: its uid
// and primary gid (SO_PEERCRED) and its supplementary groups (SO_PEERGROUPS). Neither can
// be changed by the peer afterwards, unlike what /proc/PID/status would say by the time it
// is read.
func checkPeer(c *net.UnixConn, g *Group) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var (
		cred   *unix.Ucred
		groups []uint32
		cerr   error
		gerr   error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if cerr == nil && g != nil && cred.Uid != 0 && int(cred.Uid) != os.Geteuid() && cred.Gid != g.ID {
			groups, gerr = peerGroups(int(fd))
		}
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if cred.Uid == 0 || int(cred.Uid) == os.Geteuid() {
		return nil
	}
	if g == nil {
		return fmt.Errorf("uid %d (pid %d) may not capture: only root and the daemon's user (uid %d) may; capture.group in the daemon's configuration lets a group's members",
			cred.Uid, cred.Pid, os.Geteuid())
	}
	if cred.Gid == g.ID {
		return nil
	}
	if gerr != nil {
		return fmt.Errorf("uid %d (pid %d): supplementary groups (SO_PEERGROUPS): %w", cred.Uid, cred.Pid, gerr)
	}
	if slices.Contains(groups, g.ID) {
		return nil
	}
	return fmt.Errorf("uid %d (pid %d) may not capture: it is not in the group %s that capture.group names (only root, the daemon's user (uid %d) and that group's members may); add the user to it (usermod -aG %s USER) and log in again",
		cred.Uid, cred.Pid, g, os.Geteuid(), groupArg(g))
}

// groupArg is how a command line names g: its name, or its gid.
func groupArg(g *Group) string {
	if g.Name != "" {
		return g.Name
	}
	return fmt.Sprint(g.ID)
}
