package capture

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// giveGroup makes the socket file at path (its temporary name) the group's: owner left
// as created (the daemon's user), group g. Not following a symlink: the state directory
// is the daemon's own and nobody else can write in it, but the name is not trusted more
// than it has to be.
func giveGroup(path string, g *Group) error {
	if err := unix.Fchownat(unix.AT_FDCWD, path, -1, int(g.ID), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("give the socket to capture.group %s: %w (a daemon that is not root must itself be a member of the group)", g, err)
		}
		return fmt.Errorf("give the socket to capture.group %s: %w", g, err)
	}
	return nil
}

// checkSearchable checks that the members of g can reach a socket in dir: dir and every
// directory above it must be searchable by them, for others (o+x) or, when the
// directory's group is g, for the group (g+x). A directory with an access ACL is taken as
// it is: its mode bits do not say who may search it.
func checkSearchable(dir string, g *Group) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		mode := st.Mode & 0o7777
		ok := mode&0o001 != 0 || st.Gid == g.ID && mode&0o010 != 0
		if !ok && !hasACL(d) {
			what := "a directory above the state directory"
			if d == abs {
				what = "the state directory"
			}
			return fmt.Errorf("%s %s is mode %#o (owner uid %d, group gid %d): the members of capture.group %s cannot reach the control socket in it; make it searchable for them (chmod 0755, or chgrp %s and chmod 0750)",
				what, d, mode, st.Uid, st.Gid, g, groupArg(g))
		}
		if d == "/" {
			return nil
		}
	}
}

// hasACL reports whether the directory at path has an access ACL.
func hasACL(path string) bool {
	n, err := unix.Getxattr(path, "system.posix_acl_access", nil)
	return err == nil && n > 0
}

// accessHint explains a connect to the socket at path that its permissions refused
// (EACCES): who may use it, by its mode, owner and group. It returns "" when the socket
// cannot be examined.
func accessHint(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ""
	}
	mode := st.Mode & 0o777
	if mode&0o070 == 0 {
		return fmt.Sprintf("the socket is mode %#o: only root and the daemon's user (uid %d) may capture (the daemon's capture.group lets a group's members)", mode, st.Uid)
	}
	g := Group{ID: st.Gid}
	if gr, err := user.LookupGroupId(fmt.Sprint(st.Gid)); err == nil {
		g.Name = gr.Name
	}
	return fmt.Sprintf("the socket is mode %#o, group %s: only root, the daemon's user (uid %d) and that group's members may capture, and you (uid %d) are not one of them; add the user to the group (usermod -aG %s USER) and log in again (id shows your groups)",
		mode, g, st.Uid, os.Getuid(), groupArg(&g))
}
