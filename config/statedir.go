package config

import (
	"path"
	"strings"
)

// systemDirs are the directories at two levels that the system or other programs own; a
// state_dir there is not uiod's own. Every directory at one level (/, /etc, /run, /tmp,
// /var, /home, /root...) is refused too, and so are home directories (/home/NAME) and
// anything under the kernel's and the package manager's trees.
var systemDirs = map[string]bool{
	"/var/run": true, "/var/tmp": true, "/var/lib": true, "/var/log": true, "/var/cache": true,
	"/var/spool": true, "/var/mail": true, "/var/lock": true, "/var/local": true, "/var/opt": true,
	"/run/user": true, "/run/lock": true, "/run/shm": true, "/run/systemd": true,
	"/etc/systemd": true, "/usr/local": true,
}

// pseudoTrees are the top-level directories whose every subdirectory belongs to the
// kernel or the package manager.
var pseudoTrees = map[string]bool{"/proc": true, "/sys": true, "/dev": true, "/usr": true, "/boot": true}

// systemStateDir says why the absolute, clean path dir is a well-known system or shared
// directory rather than one uiod may keep as its own, or "" if it is not one.
func systemStateDir(dir string) string {
	dir = path.Clean(dir)
	elems := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	top := "/" + elems[0]
	switch {
	case dir == "/":
		return "the root directory"
	case len(elems) == 1:
		return "a top-level system directory"
	case pseudoTrees[top]:
		return "inside " + top + ", which the system owns"
	case len(elems) == 2 && top == "/home":
		return "a home directory"
	case systemDirs[dir]:
		return "a directory the system shares between programs"
	}
	return ""
}
