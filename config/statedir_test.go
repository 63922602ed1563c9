package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirOwn: a state_dir that is not uiod's own is refused at validation, naming
// it: the root, a top-level or well-known shared system directory, a home directory, and
// (under the --root, when it exists) a directory holding anything but uiod's files,
// directly or through a symlink. An empty directory, a missing one and one holding only
// uiod's files are fine.
func TestStateDirOwn(t *testing.T) {
	root := t.TempDir()
	put := func(rel string, files ...string) {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("run/uiod", "uiod.pid", "0000:01:00.0.json", ".0000:01:00.0.json.tmp-0a1b2c", ".uiod.pid.tmp-ff")
	put("srv/empty")
	put("srv/etc", "passwd", "uiod.pid")
	put("srv/dotfile", ".bashrc")
	put("srv/notaddr", "0000:01:00.8.json")
	put("srv/shortaddr", "01:00.0.json")
	put("srv/tmpofstranger", ".passwd.tmp-0a")
	put("srv/subdir/uiod")
	if err := os.Symlink("../srv/etc", filepath.Join(root, "opt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want string // "" for valid
	}{
		{"/", "is the root directory, not a directory of uiod's own"},
		{"/etc", "a top-level system directory"},
		{"/run", "a top-level system directory"},
		{"/tmp", "a top-level system directory"},
		{"/root", "a top-level system directory"},
		{"/home", "a top-level system directory"},
		{"/tmp/", "a top-level system directory"},
		{"/home/alice", "a home directory"},
		{"/var/run", "shares between programs"},
		{"/var/tmp", "shares between programs"},
		{"/run/user", "shares between programs"},
		{"/proc/self", "inside /proc"},
		{"/usr/lib/uiod", "inside /usr"},
		{"/dev/shm/uiod", "inside /dev"},
		{"/srv/etc", `holds "passwd", which is not uiod's`},
		{"/srv/dotfile", `holds ".bashrc"`},
		{"/srv/notaddr", `holds "0000:01:00.8.json"`},
		{"/srv/shortaddr", `holds "01:00.0.json"`},
		{"/srv/tmpofstranger", `holds ".passwd.tmp-0a"`},
		{"/srv/subdir", `holds "uiod"`},
		{"/opt/x/..", "must not have"},
		{"/opt", "a top-level system directory"},
		{"/srv/link", ""}, // missing: created when needed
		{"/srv/empty", ""},
		{"/run/uiod", ""},
		{"/var/lib/uiod", ""},
		{"/home/alice/uiod", ""},
	}
	if err := os.Symlink("etc", filepath.Join(root, "srv/link2")); err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct{ dir, want string }{"/srv/link2", "is not a directory (a symlink?)"})
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			h := HostWithCPUs(2)
			_, err := Loader{Root: root, Host: &h, LookupEnv: func(string) (string, bool) { return "", false }}.
				Read(strings.NewReader(simPorts + "forward: {mode: reflect}\nstate_dir: \"" + tt.dir + "\"\n"))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want valid: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "state_dir = ") {
				t.Fatalf("error %v, want one on state_dir containing %q", err, tt.want)
			}
		})
	}
}
